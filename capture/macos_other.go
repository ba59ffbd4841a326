//go:build !darwin

package capture

import (
	"context"
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// CheckMacOS reports that the macOS source runs on macOS only.
func CheckMacOS(grab bool) error {
	return fmt.Errorf("%w: --input macos reads a Mac's keyboard; on this system use --input x11, evdev, terminal or --script", ErrNoMacOS)
}

// Play reports that the macOS source runs on macOS only.
func (m *MacOS) Play(context.Context, func(keys.Key, bool) error) error {
	return CheckMacOS(m.Grab)
}

// checkMacOSAccess reports that the macOS source runs on macOS only.
func checkMacOSAccess() (string, error) { return "", CheckMacOS(false) }
