//go:build !linux

package inject

import (
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// Wayland is Linux only here: the keymaps it uploads travel in a memfd.
type Wayland struct{}

// NewWayland reports that the Wayland injector is Linux only.
func NewWayland(func(string) string, func(string, ...any)) (*Wayland, error) {
	return nil, fmt.Errorf("%w: the Wayland virtual keyboard is Linux only here; use --inject robotgo (macOS, Windows), --inject x11 (an X server) or --inject log", ErrNoWayland)
}

// CheckWayland reports that the Wayland injector is Linux only.
func CheckWayland(getenv func(string) string) (string, error) {
	_, err := NewWayland(getenv, nil)
	return "", err
}

// HasWaylandKeyboard is false: see NewWayland.
func HasWaylandKeyboard(func(string) string) bool { return false }

func (*Wayland) Inject(Event) error                { return ErrNoWayland }
func (*Wayland) SetLocks(keys.Locks, uint64) error { return ErrNoWayland }
func (*Wayland) Close() error                      { return nil }

func (*Wayland) Gone() <-chan struct{} { return nil }
func (*Wayland) GoneErr() error        { return ErrNoWayland }
