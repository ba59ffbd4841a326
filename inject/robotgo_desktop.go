//go:build darwin || windows

package inject

import (
	"fmt"
	"sync"

	"github.com/go-vgo/robotgo"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no display.
var ErrNoDisplay = fmt.Errorf("no display")

// Robotgo presses keys through robotgo's macOS or Windows backend (cgo by
// default; pure Go with -tags purego). Untested on those systems: it is
// cross-compiled in CI, not run.
type Robotgo struct {
	logf   func(format string, args ...any)
	mu     sync.Mutex
	warned map[keys.Code]bool
}

// NewRobotgo makes the injector; robotgo's per-key sleep is turned off.
func NewRobotgo(logf func(format string, args ...any)) (*Robotgo, error) {
	robotgo.KeySleep = 0
	return &Robotgo{logf: logf, warned: map[keys.Code]bool{}}, nil
}

// Inject presses or releases one key.
func (r *Robotgo) Inject(k Key) error {
	name, ok := robotgoNames[k.Code]
	if !ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.warned[k.Code] && r.logf != nil {
			r.warned[k.Code] = true
			r.logf("robotgo cannot press %v: skipped (this is reported once)", k.Code)
		}
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
