//go:build !windows

package capture

import (
	"context"
	"fmt"
	"io"

	"github.com/keyrelay/keyrelay/keys"
)

// Windows is the Windows desktop's key source (--input windows); elsewhere
// it only says so.
type Windows struct {
	Label  string
	Status io.Writer
	Grab   bool
	Hotkey Hotkey
	Trace  func(e HookEvent, skip string)
}

func errNotWindows() error {
	return fmt.Errorf("%w: --input windows reads a Windows desktop's keyboard; here use --input x11, evdev or terminal", ErrNoWindows)
}

// SetRouting does nothing here (routing.RoutingSource).
func (*Windows) SetRouting(func(keys.Code) bool, [][]keys.Code, func(int)) {}

// Retarget does nothing here (routing.RetargetSource).
func (*Windows) Retarget() {}

// CheckWindows reports that the Windows source runs on Windows only.
func CheckWindows() error { return errNotWindows() }

func (*Windows) Relaying() bool    { return false }
func (*Windows) Grabbing() bool    { return false }
func (*Windows) Locks() keys.Locks { return 0 }

// Play reports that the Windows source runs on Windows only.
func (*Windows) Play(context.Context, func(keys.Key, bool) error) error {
	return errNotWindows()
}

// checkWindowsDesktop reports that the Windows source runs on Windows only.
func checkWindowsDesktop() (string, error) { return "", errNotWindows() }
