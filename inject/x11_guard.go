package inject

import (
	"errors"
	"fmt"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/inject/internal/guard"
	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
)

// An X server auto-repeats a key an XTEST client pressed for as long as it
// is not released, even once that client is gone: a recv killed while it
// holds a key would have the focused window get it at the repeat rate, for
// good (the xkb code's software repeat is stopped only by a release of the
// key). So X11 keeps the keycodes it holds in its guard's page, a bit per
// keycode (x11HeldSize bytes), and the guard releases them (releaseX11)
// when recv ends holding any. A release through any XTEST connection stops
// the repeat and reaches applications as the key's release: nothing is
// typed.

// x11HeldSize is the size of X11's part of the guard's page: a bit for
// each of the 256 keycodes.
const x11HeldSize = 256 / 8

// holding notes in the guard's page that kc is held or not.
func (x *X11) holding(kc xproto.Keycode, down bool) {
	if down {
		x.held[kc/8] |= 1 << (kc % 8)
	} else {
		x.held[kc/8] &^= 1 << (kc % 8)
	}
}

// releaseX11 is X11's guard for the display args[0] names: it connects
// to it at once, and at the end releases through that connection (or a new
// one, if the first is gone) every keycode page says recv held.
func releaseX11(args []string) guard.Undo {
	if len(args) != 1 {
		return func([]byte) (string, error) { return "", nil }
	}
	display := args[0]
	first, _ := dialReleaser(display) // nil: tried again at the end
	return func(page []byte) (string, error) {
		var held []byte
		for kc := 8; kc < 256; kc++ {
			if page[kc/8]&(1<<(kc%8)) != 0 {
				held = append(held, byte(kc))
			}
		}
		if len(held) == 0 {
			return "", nil
		}
		err := first.release(held)
		if err != nil {
			var again *releaser
			if again, err = dialReleaser(display); err == nil {
				err = again.release(held)
			}
		}
		if errors.Is(err, errNoServer) {
			return "", nil // the server went first, and its keys with it
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("released %s in DISPLAY=%s (X keycodes %v), which the X server would have kept auto-repeating", plural(len(held), "key"), display, held), nil
	}
}

// errNoServer is dialReleaser's error when the display cannot be reached:
// it ended (the session did, or the server stopped) before recv.
var errNoServer = errors.New("no X server answers")

// releaser is the guard's X connection.
type releaser struct {
	c    *xgb.Conn
	root xproto.Window
}

// dialReleaser connects to display and readies XTEST, within
// displayTimeout. What the server sends (every client gets MappingNotify)
// is read and dropped.
func dialReleaser(display string) (*releaser, error) {
	xquiet.Quiet()
	type result struct {
		r   *releaser
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := xgb.NewConnDisplay(display)
		if err != nil {
			done <- result{nil, fmt.Errorf("%w: DISPLAY=%s: %v", errNoServer, display, err)}
			return
		}
		if err := xtest.Init(c); err != nil {
			c.Close()
			done <- result{nil, fmt.Errorf("DISPLAY=%s lacks XTEST: %w", display, err)}
			return
		}
		go func() {
			for {
				if ev, err := c.WaitForEvent(); ev == nil && err == nil {
					return
				}
			}
		}()
		done <- result{&releaser{c: c, root: xproto.Setup(c).DefaultScreen(c).Root}, nil}
	}()
	select {
	case r := <-done:
		return r.r, r.err
	case <-time.After(displayTimeout):
		return nil, fmt.Errorf("DISPLAY=%s did not answer within %v", display, displayTimeout)
	}
}

// release releases each keycode with XTEST and waits, up to
// displayTimeout, until the server has done it.
func (r *releaser) release(keycodes []byte) error {
	if r == nil {
		return errors.New("not connected")
	}
	for _, kc := range keycodes {
		xtest.FakeInput(r.c, xproto.KeyRelease, kc, 0, r.root, 0, 0, 0)
	}
	done := make(chan error, 1)
	go func() {
		_, err := xproto.GetInputFocus(r.c).Reply()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(displayTimeout):
		return fmt.Errorf("the X server did not answer within %v", displayTimeout)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
