//go:build !linux

package inject

import (
	"fmt"

	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// Uinput is Linux only.
type Uinput struct{}

// NewUinput reports that uinput is Linux only.
func NewUinput(path string, _ func(string, ...any)) (*Uinput, error) {
	return nil, fmt.Errorf("%w: uinput is a Linux device; use --inject robotgo (macOS, Windows), --inject x11 (an X server) or --inject log", ErrNoUinput)
}

func (*Uinput) Inject(Event) error                { return ErrNoUinput }
func (*Uinput) SetLocks(keys.Locks, uint64) error { return ErrNoUinput }
func (*Uinput) Close() error                      { return nil }

// SetLayout does nothing: Uinput does not type here.
func (*Uinput) SetLayout(*xkblayout.Layout) {}
