//go:build !linux && !((darwin || windows) && robotgo)

package inject

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no display.
var ErrNoDisplay = errors.New("no display")

// Robotgo is not in this build: on macOS and Windows robotgo's backend
// needs cgo and comes with -tags robotgo only (robotgo_desktop.go); on
// other systems robotgo has none keyrelay uses.
type Robotgo struct{}

// NewRobotgo reports that this build cannot inject with robotgo, and what
// to do instead.
func NewRobotgo(func(string, ...any)) (*Robotgo, error) {
	return nil, robotgoMissing()
}

func robotgoMissing() error {
	switch runtime.GOOS {
	case "windows", "darwin":
		native := map[string]string{"windows": "windows", "darwin": "macos"}[runtime.GOOS]
		return fmt.Errorf("--inject robotgo is not in this build: on %s it needs cgo and comes with 'go build -tags robotgo' (CGO_ENABLED=1, a C compiler); this build types with --inject %s", runtime.GOOS, native)
	}
	return fmt.Errorf("--inject robotgo is built for Linux (X11), and for macOS and Windows with -tags robotgo, not for %s; use --inject log", runtime.GOOS)
}

func (*Robotgo) Inject(Event) error { return robotgoMissing() }
func (*Robotgo) Close() error       { return nil }

// CheckDisplay reports that this build has no robotgo backend.
func CheckDisplay() error { return robotgoMissing() }
