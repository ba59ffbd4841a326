package inject

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-vgo/robotgo/x11"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
)

// ErrNoDisplay is wrapped by NewRobotgo's error when there is no X display
// to type into.
var ErrNoDisplay = errors.New("no X display")

// Robotgo presses keys in the X server of $DISPLAY through robotgo's pure-Go
// X11 backend (XTEST). robotgo works with keysyms: a physical key becomes
// the character the US layout puts on it, which the receiver's layout then
// looks up (on a German receiver KeyZ types y), so --inject x11 is the
// injector for physical keys. A character is pressed where the receiver's
// layout has it (with Shift if needed), or else tapped through robotgo's
// scratch keycode. Keys robotgo cannot press are reported once and skipped,
// never sent as another key. Safe for use from one goroutine.
type Robotgo struct {
	logf    func(format string, args ...any)
	skipped skipped
	// tapped holds the characters typed by a tap on their key-down (not on
	// the receiver's layout): their key-up has nothing left to release.
	tapped map[rune]bool
}

// NewRobotgo checks that $DISPLAY names a reachable X server with the XTEST
// extension, before any key is pressed.
func NewRobotgo(logf func(format string, args ...any)) (*Robotgo, error) {
	// xgb logs to stderr when it connects without an Xauthority file, which
	// is normal (Xvfb, xhost); our errors say what matters.
	xquiet.Quiet()
	if os.Getenv("DISPLAY") == "" {
		return nil, fmt.Errorf("%w: DISPLAY is not set (run recv inside a graphical session, or set DISPLAY=:0; without X use --inject uinput or --inject log)", ErrNoDisplay)
	}
	if err := checkDisplay(); err != nil {
		return nil, err
	}
	// robotgo sleeps 10 ms after every key by default: keys would queue up.
	x11.KeySleep = 0
	return &Robotgo{logf: logf, tapped: map[rune]bool{}}, nil
}

// CheckDisplay checks what --inject robotgo needs: a reachable X display
// with XTEST (keyrelay doctor uses it too).
func CheckDisplay() error {
	xquiet.Quiet()
	if os.Getenv("DISPLAY") == "" {
		return fmt.Errorf("%w: DISPLAY is not set", ErrNoDisplay)
	}
	return checkDisplay()
}

func checkDisplay() error {
	done := make(chan error, 1)
	go func() {
		c, err := xgb.NewConn()
		if err != nil {
			done <- fmt.Errorf("%w: cannot connect to DISPLAY=%s: %v (is the X server running, and may this user use it? see xhost/XAUTHORITY; without X use --inject uinput or --inject log)", ErrNoDisplay, os.Getenv("DISPLAY"), err)
			return
		}
		defer c.Close()
		if err := xtest.Init(c); err != nil {
			done <- fmt.Errorf("the X server of DISPLAY=%s lacks the XTEST extension robotgo needs: %v", os.Getenv("DISPLAY"), err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(displayTimeout):
		return fmt.Errorf("%w: DISPLAY=%s did not answer within %v", ErrNoDisplay, os.Getenv("DISPLAY"), displayTimeout)
	}
}

// Inject presses or releases one key.
func (r *Robotgo) Inject(k Event) error {
	if c, ok := k.Key.Char(); ok {
		return r.char(c, k.Down)
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
	if err := x11.KeyToggle(name, dir); err != nil {
		return fmt.Errorf("robotgo %s %s (%v): %w", dir, name, k.Key, err)
	}
	return nil
}

// char presses or releases a character: by its key if the receiver's layout
// has it (robotgo adds Shift where needed), else as a tap on its key-down.
func (r *Robotgo) char(c rune, down bool) error {
	if !down && r.tapped[c] {
		delete(r.tapped, c)
		return nil
	}
	dir := "up"
	if down {
		dir = "down"
	}
	err := x11.KeyToggle(string(c), dir)
	if down && errors.Is(err, x11.ErrNotFound) {
		x11.TypeStr(string(c))
		r.tapped[c] = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("robotgo %s %q: %w", dir, c, err)
	}
	return nil
}

// Close closes robotgo's X connection. The receiver has released everything
// already; X itself does not release what an XTEST client holds when it
// disconnects (DESIGN.md, "A killed recv"), and robotgo has no guard.
func (r *Robotgo) Close() error {
	x11.Close()
	return nil
}
