package inject

import (
	"fmt"
	"os"

	"github.com/bendahl/uinput"
)

// Uinput presses keys through a virtual keyboard made with the Linux uinput
// device: it works without X (Wayland, the console, headless machines).
// It presses physical keys only: the kernel has no keyboard layout, so a
// character (from a terminal or a script's type) cannot be typed; it is
// reported once and skipped, like a key with no evdev code, and nothing
// else is typed in its place.
type Uinput struct {
	path    string
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
	kb, err := uinput.CreateKeyboard(path, []byte(UinputName))
	if err != nil {
		return nil, fmt.Errorf("%w: unable to create a virtual keyboard on %s: %v", ErrNoUinput, path, err)
	}
	return &Uinput{path: path, kb: kb, logf: logf}, nil
}

// Inject presses or releases one key.
func (u *Uinput) Inject(k Event) error {
	code, ok := k.Key.Code()
	if !ok {
		return u.skipped.report(u.logf, "uinput", k.Key, charWhyUinput)
	}
	ev, ok := EvdevCode(code)
	if !ok {
		return u.skipped.report(u.logf, "uinput", k.Key, "no evdev key code")
	}
	var err error
	if k.Down {
		err = u.kb.KeyDown(ev)
	} else {
		err = u.kb.KeyUp(ev)
	}
	if err != nil {
		// The code is in range (EvdevCode), so only the device can fail
		// a write: the virtual keyboard no longer types anything, and
		// recv must stop, not ack keys it cannot type (issue 13
		// must-have 2). bendahl/uinput flattens the errno into text.
		return fmt.Errorf("the virtual keyboard %q on %s stopped taking keys (%v): keys can no longer be typed here; %w", UinputName, u.path, err, ErrGone)
	}
	return nil
}

// Close destroys the virtual keyboard; the kernel releases its keys.
func (u *Uinput) Close() error { return u.kb.Close() }
