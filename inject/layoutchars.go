package inject

import (
	"fmt"
	"slices"

	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// keyPress is one key going down or up.
type keyPress struct {
	code keys.Code
	down bool
}

// levelModifiers are the held keys that choose a key's level, Shift and
// (when it is the layout's AltGr) right Alt: set to the character's level
// around it, so that a held Shift or AltGr never changes a character
// (PROTOCOL.md §3.1). Control, Alt and Meta stay held: Ctrl and the
// character c is Ctrl+C on any layout.
var levelModifiers = []keys.Code{keys.ShiftLeft, keys.ShiftRight}

// charPresses are the key presses that type r on l, for an injector whose
// target has layout l (recv --layout: hidg, uinput): for each of its
// strokes, Shift and AltGr (l's ISO_Level3_Shift key) pressed or released
// to the stroke's level, the key tapped; then Shift and AltGr back as held
// says they were. With caps (Caps Lock on at the target), Shift is
// inverted for a letter, as the target's Caps Lock inverts it back, and a
// key whose level Caps Lock changes otherwise is typed with Caps Lock
// tapped off and on again around it. ok is false when l lacks r. A pure
// function of its arguments.
func charPresses(l *xkblayout.Layout, r rune, held func(keys.Code) bool, caps bool) (presses []keyPress, ok bool) {
	strokes, ok := l.Strokes(r)
	if !ok {
		return nil, false
	}
	altgr, hasAltGr := l.AltGr()
	down := map[keys.Code]bool{}
	for _, m := range levelModifiers {
		down[m] = held(m)
	}
	if hasAltGr {
		down[altgr] = held(altgr)
	}
	was := map[keys.Code]bool{}
	for k, v := range down {
		was[k] = v
	}
	set := func(k keys.Code, want bool) {
		if down[k] != want {
			presses = append(presses, keyPress{k, want})
			down[k] = want
		}
	}
	for _, s := range strokes {
		// A key Caps Lock gives another level than Shift's (de's ß
		// key types ẞ under it) is typed with Caps Lock off: tapped
		// off before it and on again after, as a person would.
		capsOff := caps && s.CapsOff && !held(keys.CapsLock)
		if capsOff {
			presses = append(presses, keyPress{keys.CapsLock, true}, keyPress{keys.CapsLock, false})
		}
		shift := s.Shift
		if s.Alpha && caps && !capsOff {
			shift = !shift
		}
		if !shift {
			set(keys.ShiftLeft, false)
			set(keys.ShiftRight, false)
		}
		if shift && !down[keys.ShiftLeft] && !down[keys.ShiftRight] {
			set(keys.ShiftLeft, true)
		}
		if hasAltGr {
			set(altgr, s.AltGr)
		}
		if held(s.Key) {
			// The sender holds the very key: up first, or the tap
			// would be no press at all.
			presses = append(presses, keyPress{s.Key, false})
		}
		presses = append(presses, keyPress{s.Key, true}, keyPress{s.Key, false})
		if held(s.Key) {
			presses = append(presses, keyPress{s.Key, true})
		}
		if capsOff {
			presses = append(presses, keyPress{keys.CapsLock, true}, keyPress{keys.CapsLock, false})
		}
	}
	// Back as the sender holds them, releases first: the target sees no
	// moment with more modifiers held than either state has.
	for _, want := range []bool{false, true} {
		for _, m := range slices.Concat(levelModifiers, []keys.Code{altgr}) {
			if was[m] == want && down[m] != want {
				set(m, want)
			}
		}
	}
	return presses, true
}

// charWhyLayout says why a character was skipped with --layout.
func charWhyLayout(l *xkblayout.Layout) string {
	return fmt.Sprintf("the layout %s has no key for it (not even through a dead key), and typing another would type it wrong", l.Name())
}
