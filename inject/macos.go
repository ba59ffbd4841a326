package inject

import (
	"errors"

	"github.com/keyrelay/keyrelay/internal/darwin"
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
// (CGEventKeyboardSetUnicodeString). It does not set Caps Lock: posted
// events do not toggle it (recv says so once).
//
// Inject and Close are called from one goroutine at a time (the receiver's
// contract); MacOS is not safe for concurrent use otherwise.
type MacOS struct {
	post    func(darwin.Post) error
	flags   func() darwin.Flags // the system's flags now: Caps Lock
	logf    func(string, ...any)
	poster  darwin.Poster
	skipped skipped
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

// Close does nothing: the receiver released every key before.
func (m *MacOS) Close() error { return nil }
