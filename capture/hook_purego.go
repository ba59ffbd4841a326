//go:build linux && purego

package capture

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/record"
	hook "github.com/robotn/gohook"

	"github.com/keyrelay/keyrelay/internal/xquiet"
	"github.com/keyrelay/keyrelay/keys"
)

// HookAvailable is true in builds with the global hook source (-tags purego).
const HookAvailable = true

// Hook captures true key-downs and key-ups from the X server of $DISPLAY
// with github.com/robotn/gohook's pure-Go X11 RECORD backend. Keys are
// observed, not grabbed: they still reach the local desktop. Auto-repeat is
// dropped at the source (gohook reports it as KeyHold), modifiers are keys
// like any other. It ends when ctx is done (SIGINT, SIGTERM).
type Hook struct {
	Label  string
	Status io.Writer
}

// CheckHook checks up front what gohook would otherwise fail at silently: an
// X display, and its RECORD extension.
func CheckHook() error {
	xquiet.Quiet()
	if os.Getenv("DISPLAY") == "" {
		return fmt.Errorf("%w: DISPLAY is not set (the hook reads keys from an X session; use --input terminal or --script elsewhere)", ErrNoHook)
	}
	done := make(chan error, 1)
	go func() {
		c, err := xgb.NewConn()
		if err != nil {
			done <- fmt.Errorf("%w: cannot connect to DISPLAY=%s: %v", ErrNoHook, os.Getenv("DISPLAY"), err)
			return
		}
		defer c.Close()
		if err := record.Init(c); err != nil {
			done <- fmt.Errorf("%w: the X server of DISPLAY=%s lacks the RECORD extension (%v); enable it (Xorg: Load \"record\" in the Module section) or use --input terminal", ErrNoHook, os.Getenv("DISPLAY"), err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Second):
		return fmt.Errorf("%w: DISPLAY=%s did not answer within 3s", ErrNoHook, os.Getenv("DISPLAY"))
	}
}

// Play relays key events until ctx is done.
func (h *Hook) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	if err := CheckHook(); err != nil {
		return err
	}
	// No hook.End(): in gohook v1.0.0-beta1 it writes its running flag
	// without synchronization while the RECORD read loop reads it (a data
	// race the race detector reports). Play runs once per process and send
	// exits right after it, which closes the X connections.
	events := hook.Start()
	started := time.After(3 * time.Second)
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-started:
			return fmt.Errorf("%w: the X RECORD hook did not start within 3s", ErrNoHook)
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			switch ev.Kind {
			case hook.HookEnabled:
				started = nil
				h.status("capturing keys of DISPLAY=%s → %s (Ctrl+C or SIGTERM ends)", os.Getenv("DISPLAY"), h.Label)
			case hook.HookDisabled:
				return fmt.Errorf("%w: the X RECORD hook could not start", ErrNoHook)
			case hook.KeyDown, hook.KeyUp:
				code, ok := EvdevToHID(ev.Keycode)
				if !ok {
					h.status("evdev key %d has no HID usage: not sent", ev.Keycode)
					continue
				}
				if err := emit(keys.Key(code), ev.Kind == hook.KeyDown); err != nil {
					return err
				}
				sent++
			}
			// hook.KeyHold is X auto-repeat of a held key: the key is down
			// already, and the receiver must see one key-down per press.
		}
	}
}

func (h *Hook) status(format string, args ...any) {
	if h.Status != nil {
		fmt.Fprintf(h.Status, "keyrelay send: "+format+"\n", args...)
	}
}
