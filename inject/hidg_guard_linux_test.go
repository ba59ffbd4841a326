package inject

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/keyrelay/keyrelay/keys"
)

// TestHidgGuardPageSaysWhetherHostHolds: the guard's byte is set from the
// first report with a key until an empty report has reached the host; an
// empty report that failed leaves it set, so the guard sends it again if
// recv ends (its guard then writes it).
func TestHidgGuardPageSaysWhetherHostHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dev := newFakeHidg()
		h := newHidg("/dev/hidg0", dev, nil)
		defer h.Close()
		step := func(ev Event, want byte) {
			t.Helper()
			h.Inject(ev)
			if h.mayHold[0] != want {
				t.Errorf("after %v: the guard's byte is %d, want %d", ev, h.mayHold[0], want)
			}
		}
		step(press(keys.ShiftLeft), 1)
		step(press(keys.KeyB), 1)
		step(release(keys.KeyB), 1)
		step(release(keys.ShiftLeft), 0)
		step(press(keys.KeyA), 1)
		dev.fail = errors.New("the host did not read")
		step(release(keys.KeyA), 1)
		dev.fail = nil
		step(press(keys.KeyA), 1)
		step(release(keys.KeyA), 0)
	})
}

// TestHidgGuardWritesEmptyReport: the guard writes the 8-byte empty report
// to the device when the page says the host may hold keys, and nothing
// when it does not (a clean exit).
func TestHidgGuardWritesEmptyReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hidg0")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	did, err := emptyHidgReport([]string{path})([]byte{0})
	if got, _ := os.ReadFile(path); did != "" || err != nil || len(got) != 0 {
		t.Errorf("an empty page: the guard said %q, %v, wrote % x; want nothing", did, err, got)
	}
	did, err = emptyHidgReport([]string{path})([]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(make([]byte, 8)) {
		t.Errorf("the guard wrote % x, want the empty report (8 zero bytes)", got)
	}
	t.Log(did)
	if _, err := emptyHidgReport([]string{filepath.Join(t.TempDir(), "none")})([]byte{1}); err == nil {
		t.Error("no device: the guard said nothing went wrong")
	}
}
