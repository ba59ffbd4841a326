//go:build !linux && !darwin && !windows

package inject

import "errors"

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no display.
var ErrNoDisplay = errors.New("no display")

// Robotgo is not built for this system yet: robotgo's macOS and Windows
// backends need cgo, which this build of keyrelay does not use.
type Robotgo struct{}

// NewRobotgo reports that this build cannot inject with robotgo.
func NewRobotgo(func(string, ...any)) (*Robotgo, error) {
	return nil, errors.New("--inject robotgo is built only for Linux/X11 in this version; use --inject log")
}

func (*Robotgo) Inject(Event) error { return errors.New("robotgo not available") }
func (*Robotgo) Close() error       { return nil }

// CheckDisplay reports that this build has no robotgo backend.
func CheckDisplay() error { _, err := NewRobotgo(nil); return err }
