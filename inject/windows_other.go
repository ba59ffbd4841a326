//go:build !windows

package inject

import (
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// Windows is the Windows desktop's injector (--inject windows); elsewhere
// it only says so.
type Windows struct{}

// NewWindows reports that the Windows injector runs on Windows only.
func NewWindows(func(string, ...any)) (*Windows, error) {
	_, err := CheckWindows()
	return nil, err
}

// CheckWindows reports that the Windows injector runs on Windows only.
func CheckWindows() (string, error) {
	return "", fmt.Errorf("%w: --inject windows types into a Windows desktop; here use --inject x11, uinput or log", ErrNoWindows)
}

func (*Windows) Inject(Event) error                { return ErrNoWindows }
func (*Windows) SetLocks(keys.Locks, uint64) error { return ErrNoWindows }
func (*Windows) Close() error                      { return nil }
