package inject

import (
	"errors"
	"strings"
	"testing"

	"github.com/bendahl/uinput"

	"github.com/keyrelay/keyrelay/keys"
)

// brokenKeyboard is a uinput keyboard whose device no longer takes writes.
type brokenKeyboard struct{ uinput.Keyboard }

func (brokenKeyboard) KeyDown(int) error {
	return errors.New("writing btnEvent structure to the device file failed: write /dev/uinput: no such device")
}
func (brokenKeyboard) KeyUp(key int) error { return brokenKeyboard{}.KeyDown(key) }

// TestUinputGone (issue 13 must-have 2: lost backends are fatal and named):
// a virtual keyboard that fails a write is gone, and Inject's error wraps
// ErrGone (recv stops, non-zero) and names the device.
func TestUinputGone(t *testing.T) {
	u := &Uinput{path: "/dev/uinput", kb: brokenKeyboard{}}
	err := u.Inject(Event{Key: keys.Key(keys.KeyA), Down: true})
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), `virtual keyboard "keyrelay" on /dev/uinput stopped taking keys`) {
		t.Errorf("Inject on a broken device: %v; want ErrGone naming the device", err)
	}
}
