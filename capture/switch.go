package capture

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/keys"
)

// DefaultHotkey switches between relaying and local use: both Control keys
// together. Both are on nearly every keyboard, pressing them together types
// nothing, and it does not happen by accident while typing (two Shift keys
// do, in fast rollover).
const DefaultHotkey = "ControlLeft+ControlRight"

// ErrHotkey is wrapped by ParseHotkey's errors.
var ErrHotkey = errors.New("bad hotkey")

// Hotkey is a chord of one to four physical keys (key names joined by +).
type Hotkey []keys.Code

// ParseHotkey reads a hotkey such as "ScrollLock" or "ControlLeft+ControlRight":
// names keys.Parse takes (W3C names, aliases, usages) joined by +.
func ParseHotkey(s string) (Hotkey, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty (give %s)", ErrHotkey, HotkeyForm)
	}
	var h Hotkey
	for _, name := range strings.Split(s, "+") {
		name = strings.TrimSpace(name)
		if strings.HasPrefix(name, `"`) {
			return nil, fmt.Errorf("%w %q: a hotkey is made of physical keys, not characters (%s)", ErrHotkey, s, name)
		}
		c, err := keys.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrHotkey, s, err)
		}
		if slices.Contains(h, c) {
			return nil, fmt.Errorf("%w %q: %v twice", ErrHotkey, s, c)
		}
		h = append(h, c)
	}
	if len(h) > 4 {
		return nil, fmt.Errorf("%w %q: %d keys, at most 4", ErrHotkey, s, len(h))
	}
	return h, nil
}

// String is the hotkey as ParseHotkey reads it.
func (h Hotkey) String() string {
	names := make([]string, len(h))
	for i, c := range h {
		names[i] = c.String()
	}
	return strings.Join(names, "+")
}

// Switch sits between a source of physical keys that owns the keyboard
// (an X keyboard grab, an evdev grab) and the sender. While relaying it
// passes every key on; a press that completes the hotkey (all its keys
// down) toggles between relaying and local use and reaches neither side.
// Turning to local use releases, at the receiver, every key it relayed
// down; turning back relays nothing of what is held at that moment (the
// hotkey's own keys) until it is released and pressed again. OnToggle
// tells the source to give the keyboard back or take it again.
//
// With named destinations (send's routing.Group, a RoutingSource) it also
// does what the router cannot see: in local use a press that completes a
// destination's hotkey (Targets) makes it the target (OnTarget) and
// resumes relaying, its keys reaching no side, as the toggle hotkey does;
// and while relaying a key the router says acts here (Here: a destination's
// local keys) is passed to this machine (ActHere) as well as relayed
// (the router keeps it from the destinations that list it), its release
// too, so that a source that can hold it here (evdev's virtual keyboard)
// holds it while it is held (push-to-talk).
//
// Switch is not safe for concurrent use; its zero value is not ready: set
// Hotkey and Emit.
type Switch struct {
	Hotkey Hotkey
	// Emit relays a key event to the sender.
	Emit func(key keys.Key, down bool) error
	// OnToggle is called after each switch, with the new mode; an error
	// stops the source.
	OnToggle func(relaying bool) error
	// Local starts in local use instead of relaying.
	Local bool

	// Targets are the destinations' hotkeys, by route index (nil for a
	// route without one); OnTarget makes route i the target, before
	// relaying resumes.
	Targets  []Hotkey
	OnTarget func(i int) error
	// Here reports whether a press acts on this machine while relaying
	// (nil: none does); ActHere passes a key event to this machine.
	Here    func(keys.Code) bool
	ActHere func(code keys.Code, down bool) error

	held      []keys.Code // physical keys down now, press order
	relayed   []keys.Code // keys down at the receiver, press order
	swallowed []keys.Code // keys down now whose release is not relayed
	here      []keys.Code // keys passed down to this machine, press order
}

// Relaying reports whether keys go to the receiver now.
func (s *Switch) Relaying() bool { return !s.Local }

// Key takes one physical key event from the keyboard.
func (s *Switch) Key(code keys.Code, down bool) error {
	if !down {
		s.held = slices.DeleteFunc(s.held, func(c keys.Code) bool { return c == code })
		if i := slices.Index(s.here, code); i >= 0 {
			s.here = slices.Delete(s.here, i, i+1)
			if err := s.ActHere(code, false); err != nil {
				return err
			}
		}
		if i := slices.Index(s.swallowed, code); i >= 0 {
			s.swallowed = slices.Delete(s.swallowed, i, i+1)
			return nil
		}
		if i := slices.Index(s.relayed, code); i >= 0 {
			s.relayed = slices.Delete(s.relayed, i, i+1)
			return s.Emit(keys.Key(code), false)
		}
		return nil
	}
	if !slices.Contains(s.held, code) {
		s.held = append(s.held, code)
	}
	if slices.Contains(s.Hotkey, code) && s.hotkeyHeld() {
		return s.toggle()
	}
	if s.Local {
		if i, ok := s.targetHeld(code); ok {
			return s.Target(i)
		}
		return nil
	}
	if slices.Contains(s.relayed, code) || slices.Contains(s.swallowed, code) {
		return nil
	}
	if s.Here != nil && s.ActHere != nil && s.Here(code) {
		if err := s.ActHere(code, true); err != nil {
			return err
		}
		s.here = append(s.here, code)
	}
	s.relayed = append(s.relayed, code)
	return s.Emit(keys.Key(code), true)
}

// targetHeld reports whether the press of code completes a destination's
// hotkey, and whose (the first in route order).
func (s *Switch) targetHeld(code keys.Code) (int, bool) {
	for i, h := range s.Targets {
		if len(h) > 0 && slices.Contains(h, code) && !slices.ContainsFunc(h, func(c keys.Code) bool { return !slices.Contains(s.held, c) }) {
			return i, true
		}
	}
	return 0, false
}

// Target makes destination i the target (OnTarget) and resumes relaying,
// as its hotkey does in local use, for a source that sees the hotkey by
// other means (an X passive grab). While relaying already it only tells
// OnTarget: the router saw the hotkey itself.
func (s *Switch) Target(i int) error {
	if s.OnTarget != nil {
		if err := s.OnTarget(i); err != nil {
			return err
		}
	}
	if !s.Local {
		return nil
	}
	return s.toggle()
}

func (s *Switch) hotkeyHeld() bool {
	for _, c := range s.Hotkey {
		if !slices.Contains(s.held, c) {
			return false
		}
	}
	return len(s.Hotkey) > 0
}

// Forget drops what the switch knows of the keys held here, for a source
// that does not see keys in local use (their releases would never come):
// call it on switching to local use. The keys relayed were released then.
func (s *Switch) Forget() {
	s.held, s.swallowed = s.held[:0], s.swallowed[:0]
}

// Toggle switches mode as the hotkey does, for a source that sees the
// hotkey by other means (an X passive grab, which delivers only its last
// key while keys act locally).
func (s *Switch) Toggle() error { return s.toggle() }

// toggle switches mode. Every key held now is swallowed until released:
// the hotkey's keys reach neither side.
func (s *Switch) toggle() error {
	if !s.Local {
		if err := s.ReleaseAll(); err != nil {
			return err
		}
	}
	if err := s.releaseHere(); err != nil {
		return err
	}
	s.Local = !s.Local
	for _, c := range s.held {
		if !slices.Contains(s.swallowed, c) {
			s.swallowed = append(s.swallowed, c)
		}
	}
	if s.OnToggle != nil {
		return s.OnToggle(!s.Local)
	}
	return nil
}

// releaseHere releases on this machine every key passed down to it, last
// pressed first: a source that gives the keyboard back or stops would
// otherwise leave them held (its own virtual keyboard's, which no physical
// release reaches).
func (s *Switch) releaseHere() error {
	for len(s.here) > 0 {
		c := s.here[len(s.here)-1]
		s.here = s.here[:len(s.here)-1]
		if err := s.ActHere(c, false); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseAll releases at the receiver every key relayed down, last pressed
// first, and on this machine every key passed down to it; the keys stay
// held here, and their releases are not relayed.
func (s *Switch) ReleaseAll() error {
	if err := s.releaseHere(); err != nil {
		return err
	}
	for len(s.relayed) > 0 {
		c := s.relayed[len(s.relayed)-1]
		s.relayed = s.relayed[:len(s.relayed)-1]
		if slices.Contains(s.held, c) && !slices.Contains(s.swallowed, c) {
			s.swallowed = append(s.swallowed, c)
		}
		if err := s.Emit(keys.Key(c), false); err != nil {
			return err
		}
	}
	return nil
}

// HotkeyForm is the valid form of a hotkey, for messages.
const HotkeyForm = "one to four key names joined by + (W3C names such as ControlLeft+ControlRight or ScrollLock, or the aliases of key scripts such as ctrl_l+ctrl_r); with --input x11, all but one must be Shift, Control, Alt or Meta keys"

// CheckHotkey says, before anything starts, whether source (an --input
// name: x11 or hook, evdev) can see every key of h: an evdev code, and the
// source's own rule (SourceBackend.Hotkey): with x11 an X keycode, and all
// its keys but one modifiers (Shift, Control, Alt, Meta), since in local
// use only an X passive grab of a key with modifiers sees the hotkey. X11's own check against the server's
// modifier map still runs: a server that maps modifiers oddly can refuse a
// hotkey this took.
func CheckHotkey(h Hotkey, source string) error {
	for _, c := range h {
		info, ok := keys.Lookup(c)
		if !ok || info.Evdev == 0 {
			return fmt.Errorf("%w %v: %v is a key no keyboard reports here (no evdev code)", ErrHotkey, h, c)
		}
	}
	if b, ok := LookupSource(source); ok && b.Hotkey != nil {
		return b.Hotkey(h)
	}
	return nil
}

// checkX11Hotkey is the x11 source's rule for a hotkey: X keycodes, and
// at most one key that is not a modifier, so that it can be caught while
// the keyboard acts locally.
func checkX11Hotkey(h Hotkey) error {
	plain := 0
	for _, c := range h {
		if _, ok := x11Keycode(c); !ok {
			return fmt.Errorf("%w %v: %v has no X keycode", ErrHotkey, h, c)
		}
		if c < keys.ControlLeft || c > keys.MetaRight {
			plain++
		}
	}
	if plain > 1 {
		return fmt.Errorf("%w %v: with --input x11, all keys of a hotkey but one must be modifiers (Shift, Control, Alt, Meta), so the hotkey can be caught while the keyboard acts locally; one key alone (ScrollLock, Pause) works too", ErrHotkey, h)
	}
	return nil
}
