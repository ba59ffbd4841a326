//go:build !linux

package inject

import "fmt"

// Uinput is Linux only.
type Uinput struct{}

// NewUinput reports that uinput is Linux only.
func NewUinput(path string, _ func(string, ...any)) (*Uinput, error) {
	return nil, fmt.Errorf("%w: uinput is a Linux device; use --inject robotgo (macOS, Windows), --inject x11 (an X server) or --inject log", ErrNoUinput)
}

func (*Uinput) Inject(Event) error { return ErrNoUinput }
func (*Uinput) Close() error       { return nil }
