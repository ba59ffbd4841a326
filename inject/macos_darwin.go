package inject

import (
	"fmt"
	"os"

	"github.com/keyrelay/keyrelay/internal/darwin"
)

// NewMacOS checks that macOS lets keyrelay post key events (Accessibility,
// naming the System Settings pane when not) and returns the injector.
func NewMacOS(logf func(string, ...any)) (*MacOS, error) {
	sys, err := darwin.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "keyrelay"
	}
	if err := sys.Access().Check(darwin.NeedPost, exe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	m := newMacOS(sys.Post, sys.FlagsState, logf)
	if c, err := sys.OpenCapsLock(); err != nil {
		m.capsWhy = err
	} else {
		m.caps = c
	}
	return m, nil
}

// CheckMacOS says whether macOS lets keyrelay post key events (doctor):
// Accessibility, naming the pane when it is off.
func CheckMacOS() (string, error) {
	sys, err := darwin.Load()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "keyrelay"
	}
	ok, err := sys.Access().Doctor(darwin.NeedPost, exe, false, "")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	return ok, nil
}
