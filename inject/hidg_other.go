//go:build !linux

package inject

import (
	"fmt"

	"github.com/keyrelay/keyrelay/inject/internal/guard"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// Hidg is Linux only: the USB gadget is a Linux kernel function.
type Hidg struct{}

// NewHidg reports that the USB keyboard gadget is Linux only.
func NewHidg(path string, _ func(string, ...any)) (*Hidg, error) {
	return nil, fmt.Errorf("%w: the USB keyboard gadget (%s) is a Linux kernel function; use --inject robotgo (macOS, Windows), --inject x11 (an X server) or --inject log", ErrNoHidg, path)
}

func (*Hidg) Inject(Event) error                { return ErrNoHidg }
func (*Hidg) SetLocks(keys.Locks, uint64) error { return ErrNoHidg }
func (*Hidg) Close() error                      { return nil }

// CheckHidg reports that the USB keyboard gadget is Linux only.
func CheckHidg(path string) (string, error) {
	_, err := NewHidg(path, nil)
	return "", err
}

// SetLayout does nothing: Hidg does not type here.
func (*Hidg) SetLayout(*xkblayout.Layout) {}

// emptyHidgReport does nothing: no guard starts here.
func emptyHidgReport([]string) guard.Undo {
	return func([]byte) (string, error) { return "", nil }
}
