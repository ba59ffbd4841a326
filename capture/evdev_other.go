//go:build !linux

package capture

import "fmt"

// systemEvdev reports that event devices are Linux's.
func systemEvdev() (evdevSystem, error) {
	return nil, fmt.Errorf("%w: --input evdev reads Linux input devices (/dev/input); on this system use --input x11 (an X session), --input terminal or --script", ErrEvdev)
}

// systemLocalKeyboard reports that uinput is Linux's.
func systemLocalKeyboard() (localKeyboard, error) {
	return nil, fmt.Errorf("%w: virtual keyboards (/dev/uinput) are Linux's", ErrEvdev)
}
