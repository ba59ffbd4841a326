//go:build !darwin

package inject

import "fmt"

// NewMacOS reports that posting macOS events needs macOS.
func NewMacOS(logf func(string, ...any)) (*MacOS, error) {
	_, err := CheckMacOS()
	return nil, err
}

// CheckMacOS reports that posting macOS events needs macOS.
func CheckMacOS() (string, error) {
	return "", fmt.Errorf("%w: --inject macos presses keys on a Mac; on this system use --inject x11 (an X server), uinput, hidg or log", ErrNoMacOS)
}
