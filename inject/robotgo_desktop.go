//go:build darwin || windows

package inject

import (
	"fmt"

	"github.com/go-vgo/robotgo"
)

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no display.
var ErrNoDisplay = fmt.Errorf("no display")

// Robotgo presses keys through robotgo's macOS or Windows backend (cgo by
// default; pure Go with -tags purego). Untested on those systems: it is
// cross-compiled in CI, not run.
type Robotgo struct {
	logf    func(format string, args ...any)
	skipped skipped
}

// NewRobotgo makes the injector; robotgo's per-key sleep is turned off.
func NewRobotgo(logf func(format string, args ...any)) (*Robotgo, error) {
	robotgo.KeySleep = 0
	return &Robotgo{logf: logf}, nil
}

// Inject presses or releases one key.
func (r *Robotgo) Inject(k Key) error {
	name, ok := robotgoNames[k.Code]
	if !ok {
		r.skipped.report(r.logf, "robotgo", k.Code)
		return nil
	}
	dir := "up"
	if k.Down {
		dir = "down"
	}
	if err := robotgo.KeyToggle(name, dir); err != nil {
		return fmt.Errorf("robotgo %s %s (%v): %w", dir, name, k.Code, err)
	}
	return nil
}

// Close does nothing: robotgo holds no connection here.
func (r *Robotgo) Close() error { return nil }

// CheckDisplay: robotgo's macOS and Windows backends need no display
// server to be named.
func CheckDisplay() error { return nil }
