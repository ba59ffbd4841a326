package capture

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/keyrelay/keyrelay/internal/darwin"
	"github.com/keyrelay/keyrelay/keys"
)

// CheckMacOS checks what the macOS source needs: the frameworks, and the
// permissions (Input Monitoring; Accessibility too with grab), naming the
// System Settings pane of a missing one.
func CheckMacOS(grab bool) error {
	sys, err := darwin.Load()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	need := darwin.NeedListen
	if grab {
		need = darwin.NeedGrab
	}
	if err := sys.Access().Check(need, macExecutable()); err != nil {
		return fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	return nil
}

func macExecutable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "keyrelay"
}

// Play relays key events until ctx is done.
func (m *MacOS) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	if err := CheckMacOS(m.Grab); err != nil {
		return err
	}
	sys, _ := darwin.Load()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := m.newTap(func(k keys.Key, down bool) error {
		err := emit(k, down)
		if err != nil {
			cancel(err)
		}
		return err
	})
	m.readLocks(sys.FlagsState())
	// Secure input is looked at every second: macOS sends no event when
	// it starts, and the tap sees nothing while it is on.
	go func() {
		var watch darwin.SecureInput
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if msg := watch.Update(sys.SecureInput()); msg != "" {
				m.status("%s", msg)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	if m.Grab {
		m.status("relaying to %s: keys are kept from this Mac (%v for local use; Ctrl+C or SIGTERM ends)", m.Label, t.sw.Hotkey)
	} else {
		m.status("capturing this Mac's keys → %s (keys act here too; Ctrl+C or SIGTERM ends)", m.Label)
	}
	err := sys.RunTap(ctx, m.Grab, t.event)
	if t.err != nil {
		return t.err
	}
	if rerr := t.stop(); rerr != nil && err == nil {
		err = rerr
	}
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
		return cause
	}
	return err
}

// checkMacOSAccess is doctor's check of the macOS source: Input
// Monitoring, whether --grab's Accessibility is on too, and secure input
// now (darwin.Access.Doctor).
func checkMacOSAccess() (string, error) {
	sys, err := darwin.Load()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	on, app := sys.SecureInput()
	ok, err := sys.Access().Doctor(darwin.NeedListen, macExecutable(), on, app)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoMacOS, err)
	}
	return ok, nil
}
