package inject

import (
	"fmt"
	"os"

	"github.com/bendahl/uinput"
)

// Uinput presses keys through a virtual keyboard made with the Linux uinput
// device: it works without X (Wayland, the console, headless machines).
// Keys with no evdev code are reported once and skipped.
type Uinput struct {
	kb      uinput.Keyboard
	logf    func(format string, args ...any)
	skipped skipped
}

// NewUinput opens path (DefaultUinputPath) and creates the virtual keyboard.
func NewUinput(path string, logf func(format string, args ...any)) (*Uinput, error) {
	// bendahl/uinput hides why the device did not open; open it first to
	// tell the user what to do.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, uinputError(path, err)
	}
	f.Close()
	kb, err := uinput.CreateKeyboard(path, []byte("keyrelay"))
	if err != nil {
		return nil, fmt.Errorf("%w: unable to create a virtual keyboard on %s: %v", ErrNoUinput, path, err)
	}
	return &Uinput{kb: kb, logf: logf}, nil
}

// Inject presses or releases one key.
func (u *Uinput) Inject(k Key) error {
	ev, ok := EvdevCode(k.Code)
	if !ok {
		u.skipped.report(u.logf, "uinput", k.Code)
		return nil
	}
	if k.Down {
		return u.kb.KeyDown(ev)
	}
	return u.kb.KeyUp(ev)
}

// Close destroys the virtual keyboard; the kernel releases its keys.
func (u *Uinput) Close() error { return u.kb.Close() }
