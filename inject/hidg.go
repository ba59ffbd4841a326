package inject

import (
	"errors"
	"fmt"
	"io/fs"
)

// DefaultHidgPath is the first USB HID gadget function's device: the
// keyboard `keyrelay gadget setup` makes.
const DefaultHidgPath = "/dev/hidg0"

// ErrNoHidg is wrapped by NewHidg's error when the gadget's device cannot
// be used.
var ErrNoHidg = errors.New("USB keyboard gadget unavailable")

// charWhyHidg says why hidg cannot type a character, and what can.
const charWhyHidg = "a USB keyboard sends keys, not characters, and the target computer's layout is not known here (name it with recv --layout, e.g. --layout de, for text from a terminal or a script's type; physical keys from --input hook or a script's tap work)"

// hidgOpenError explains why path cannot be opened, with what to do.
func hidgOpenError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: no %s: set up the USB keyboard gadget first (sudo keyrelay gadget setup, on a board with a USB device port: a Raspberry Pi Zero, 4 or 5 with dtoverlay=dwc2), or name its device with --device", ErrNoHidg, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s is not readable and writable by this user: run recv as root, or give the device to a group with a udev rule such as KERNEL==\"hidg*\", GROUP=\"input\", MODE=\"0660\" (/etc/udev/rules.d/60-keyrelay-hidg.rules) and join it (sudo usermod -aG input $USER, then log in again)", ErrNoHidg, path)
	default:
		return fmt.Errorf("%w: cannot open %s: %v", ErrNoHidg, path, err)
	}
}
