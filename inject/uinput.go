package inject

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/keyrelay/keyrelay/keys"
)

// DefaultUinputPath is the Linux uinput device.
const DefaultUinputPath = "/dev/uinput"

// UinputName is the name of recv's virtual keyboard. send --input evdev
// never reads a device of this name (capture.UinputName): with send and
// recv on one machine, it would send again what recv types.
const UinputName = "keyrelay"

// ErrNoUinput is wrapped by NewUinput's error when the device cannot be used.
var ErrNoUinput = errors.New("uinput unavailable")

// charWhyUinput says why uinput cannot type a character, and what can.
const charWhyUinput = "the kernel has no keyboard layout, so uinput presses keys, not characters (name this machine's layout with recv --layout, e.g. --layout de, for text from a terminal or a script's type; physical keys from --input hook or a script's tap work)"

// MaxUinputKey is the highest evdev key code recv's virtual keyboard has
// (KEY_MICMUTE, as bendahl/uinput had: the keyboard keys; above are buttons).
const MaxUinputKey = 248

// EvdevCode returns the Linux evdev key code that presses code through
// uinput, from the generated keys table.
func EvdevCode(code keys.Code) (int, bool) {
	info, ok := keys.Lookup(code)
	if !ok || info.Evdev == 0 || info.Evdev > MaxUinputKey {
		return 0, false
	}
	return int(info.Evdev), true
}

// CheckUinput checks that path can be opened for writing, as --inject
// uinput needs.
func CheckUinput(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return uinputError(path, err)
	}
	return f.Close()
}

// uinputError explains why path cannot be opened, with what to do.
func uinputError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist: load the module (sudo modprobe uinput; to keep it, add uinput to /etc/modules-load.d/uinput.conf), or use --inject x11 under X or --inject log", ErrNoUinput, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s is not writable by this user: add a udev rule such as KERNEL==\"uinput\", GROUP=\"input\", MODE=\"0660\" (/etc/udev/rules.d/60-keyrelay-uinput.rules), add yourself to the group (sudo usermod -aG input $USER, then log in again), or run recv as root", ErrNoUinput, path)
	default:
		return fmt.Errorf("%w: cannot open %s: %v", ErrNoUinput, path, err)
	}
}
