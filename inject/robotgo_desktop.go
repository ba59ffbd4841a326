//go:build (darwin || windows) && robotgo

package inject

import (
	"fmt"
	"unicode/utf8"

	"github.com/go-vgo/robotgo"
)

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no display.
var ErrNoDisplay = fmt.Errorf("no display")

// Robotgo presses keys through robotgo's macOS or Windows backend, in a
// build with -tags robotgo only: that backend needs cgo (or robotgo's
// -tags purego), and a plain CGO_ENABLED=0 build of robotgo's root package
// fails there, while --inject windows and macos need neither. Untested on
// those systems: it is cross-compiled in CI (make cross), not run.
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
func (r *Robotgo) Inject(k Event) error {
	if c, ok := k.Key.Char(); ok {
		// A character: by its key where it is one of robotgo's key names
		// (a, 1, ;), else typed as text on its key-down (nothing to
		// release on its key-up). robotgo's Windows backend presses
		// virtual key 0, typing nothing and reporting no error, for a
		// name it lacks (é under Wine 8).
		if !robotgoCharKeys[string(c)] {
			if k.Down {
				robotgo.TypeStr(string(c))
			}
			return nil
		}
		dir := "up"
		if k.Down {
			dir = "down"
		}
		if err := robotgo.KeyToggle(string(c), dir); err != nil && k.Down {
			robotgo.TypeStr(string(c))
		}
		return nil
	}
	code, _ := k.Key.Code()
	name, ok := robotgoNames[code]
	if !ok {
		return r.skipped.report(r.logf, "robotgo", k.Key, "robotgo has no name for it")
	}
	dir := "up"
	if k.Down {
		dir = "down"
	}
	if err := robotgo.KeyToggle(name, dir); err != nil {
		return fmt.Errorf("robotgo %s %s (%v): %w", dir, name, k.Key, err)
	}
	return nil
}

// robotgoCharKeys are robotgo's key names that are one ASCII character:
// the characters pressed by their key.
var robotgoCharKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range robotgoNames {
		if len(n) == 1 && n[0] < utf8.RuneSelf {
			m[n] = true
		}
	}
	return m
}()

// Close does nothing: robotgo holds no connection here.
func (r *Robotgo) Close() error { return nil }

// CheckDisplay: robotgo's macOS and Windows backends need no display
// server to be named.
func CheckDisplay() error { return nil }
