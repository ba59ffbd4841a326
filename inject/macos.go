package inject

import (
	"errors"
	"fmt"

	"github.com/keyrelay/keyrelay/internal/darwin"
	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoMacOS is wrapped by NewMacOS's error when it cannot press keys.
var ErrNoMacOS = errors.New("macOS injection unavailable")

// MacOS presses keys on macOS (--inject macos) by posting Quartz keyboard
// events at the HID level, through purego (no cgo): a physical key as its
// virtual keycode (keys.MacOSKeycode, from keycodemapdb), so this Mac's
// layout decides the character, as with a keyboard plugged in; a modifier
// as a real press and release (FlagsChanged, its flag set), and every key
// posted while modifiers are held carries their flags, as a keyboard's
// events do; a character as a Unicode string whatever the layout
// (CGEventKeyboardSetUnicodeString). Caps Lock follows the sender through
// IOKit's HID system (posted events do not toggle it); Num Lock is left, a
// Mac has none (PROTOCOL.md §3.2).
//
// Inject and Close are called from one goroutine at a time (the receiver's
// contract); MacOS is not safe for concurrent use otherwise.
type MacOS struct {
	post    func(darwin.Post) error
	flags   func() darwin.Flags // the system's flags now: Caps Lock
	logf    func(string, ...any)
	poster  darwin.Poster
	skipped skipped
	// caps sets Caps Lock; nil when this Mac would not let it be
	// (capsWhy says why, once).
	caps      capsLock
	capsWhy   error
	capsNoted bool
}

// capsLock is darwin.CapsLock, or a test's.
type capsLock interface {
	On() (bool, error)
	Set(on bool) error
	Close() error
}

// newMacOS is the injector over post and flags: the system's (NewMacOS),
// or a test's.
func newMacOS(post func(darwin.Post) error, flags func() darwin.Flags, logf func(string, ...any)) *MacOS {
	return &MacOS{post: post, flags: flags, logf: logf}
}

// Inject posts the event.
func (m *MacOS) Inject(ev Event) error {
	if r, ok := ev.Key.Char(); ok {
		p := m.poster.Char(r)
		if ev.Down {
			return m.post(p[0])
		}
		return m.post(p[1])
	}
	code, _ := ev.Key.Code()
	p, ok := m.poster.Key(code, ev.Down, m.flags())
	if !ok {
		return m.skipped.report(m.logf, "macos", ev.Key, "it has no macOS virtual keycode in keycodemapdb")
	}
	return m.post(p)
}

// SetLocks makes Caps Lock what l says; Num Lock is left (a Mac has none).
// Without a way to set it, it says so once and leaves it.
func (m *MacOS) SetLocks(l keys.Locks, _ uint64) error {
	if m.caps == nil {
		if !m.capsNoted {
			m.capsNoted = true
			m.logf("the sender tells its Caps Lock state, which cannot be set on this Mac (%v): it is left as it is", m.capsWhy)
		}
		return nil
	}
	on, err := m.caps.On()
	if err != nil {
		return fmt.Errorf("reading Caps Lock: %w", err)
	}
	if want := l&keys.LockCaps != 0; want != on {
		if err := m.caps.Set(want); err != nil {
			return fmt.Errorf("setting Caps Lock: %w", err)
		}
	}
	return nil
}

// Close lets go of the HID system; the receiver released every key
// before.
func (m *MacOS) Close() error {
	if m.caps != nil {
		return m.caps.Close()
	}
	return nil
}
