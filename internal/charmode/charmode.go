// Package charmode decides, key event by key event, what a destination in
// characters mode (send --keys characters, keys = "characters") gets of a
// physical key: the character the sender's layout gives it, or the key
// itself. Printable keys become characters, so that the receiver types what
// the sender's keycaps say whatever its own layout; chords with Control, Alt
// or Super and keys that print nothing (Enter, arrows, F-keys, Backspace,
// Tab, Escape) stay physical, so shortcuts keep working. AltGr selects a
// level like Shift: it is no shortcut modifier (AltGr+Q is @ on a German
// desktop).
//
// It is pure: the layout comes in as a Keymap (an XKB layout's table, or the
// X server's keymap) and the state changes only with the events it is told.
package charmode

import (
	"slices"
	"unicode"

	"github.com/keyrelay/keyrelay/internal/keysym"
	"github.com/keyrelay/keyrelay/keys"
)

// Keymap is the sender's layout.
type Keymap interface {
	// Keysyms are the keysyms key c gives at levels 1-4 (alone, Shift,
	// AltGr, Shift+AltGr; 0: none), and whether Caps Lock shifts levels 1
	// and 2 (a letter's key); ok is false for a key the layout lacks.
	Keysyms(c keys.Code) (syms [4]uint32, alpha bool, ok bool)
	// Compose is the character a dead key's keysym then a base keysym
	// compose, as the Compose file says.
	Compose(dead, base uint32) (rune, bool)
}

// Kind is what a destination in characters mode gets of a key-down.
type Kind int

const (
	// Physical: the key itself, as in physical mode.
	Physical Kind = iota
	// Char: the character (a down and an up together); the key's own
	// release goes nowhere.
	Char
	// Level: a level modifier (Shift, AltGr): withheld, and sent only
	// ahead of a key that stays physical while it is held (Shift+Tab),
	// since a character already carries its level.
	Level
	// Home: nothing, ever: Caps Lock (it only changes the characters,
	// which are sent as such) and a dead key (it composes with the next
	// key here).
	Home
)

// ISO_Level3_Shift and Mode_switch are the keysyms of the keys that select
// levels 3 and 4 (AltGr).
const (
	symLevel3     = 0xfe03
	symModeSwitch = 0xff7e
)

// Translator follows the sender's modifiers, Caps Lock and pending dead key
// through the key events it is told, and says what each key-down is. The
// zero value is not usable: make it with New. Not safe for concurrent use.
type Translator struct {
	km    Keymap
	held  []keys.Code // keys down now
	caps  bool
	dead  uint32 // the dead key's keysym waiting for its base key; 0: none
	altgr map[keys.Code]bool
}

// New makes a Translator for layout km, with Caps Lock off: a Caps Lock on
// as send starts is only known once it is pressed.
func New(km Keymap) *Translator {
	return &Translator{km: km, altgr: map[keys.Code]bool{}}
}

// chord modifiers make a key a shortcut: it stays physical.
var chord = []keys.Code{keys.ControlLeft, keys.AltLeft, keys.MetaLeft, keys.ControlRight, keys.AltRight, keys.MetaRight}

// shifts are Shift left and right.
var shifts = []keys.Code{keys.ShiftLeft, keys.ShiftRight}

func (t *Translator) isAltGr(c keys.Code) bool {
	if v, ok := t.altgr[c]; ok {
		return v
	}
	syms, _, ok := t.km.Keysyms(c)
	v := ok && (syms[0] == symLevel3 || syms[0] == symModeSwitch)
	t.altgr[c] = v
	return v
}

// IsLevel reports whether c is a level modifier (Shift, or the layout's
// AltGr key), which Key calls Level.
func (t *Translator) IsLevel(c keys.Code) bool {
	return slices.Contains(shifts, c) || t.isAltGr(c)
}

// Key tells the translator of one event of physical key c and, for a
// key-down, returns what a destination in characters mode gets: its Kind,
// and the character when Char. A repeated key-down (auto-repeat, which
// send drops: the receiver repeats on its own) changes nothing and gets
// Home.
func (t *Translator) Key(c keys.Code, down bool) (Kind, rune) {
	if !down {
		t.held = slices.DeleteFunc(t.held, func(h keys.Code) bool { return h == c })
		return Physical, 0
	}
	if slices.Contains(t.held, c) {
		return Home, 0
	}
	t.held = append(t.held, c)
	switch {
	case c == keys.CapsLock:
		t.caps = !t.caps
		return Home, 0
	case t.IsLevel(c):
		return Level, 0
	case slices.Contains(chord, c):
		t.dead = 0
		return Physical, 0
	}
	for _, h := range t.held {
		if slices.Contains(chord, h) && h != c && !t.isAltGr(h) {
			t.dead = 0
			return Physical, 0
		}
	}
	sym, ok := t.keysym(c)
	if !ok {
		t.dead = 0
		return Physical, 0
	}
	if isDead(sym) {
		if t.dead != 0 {
			// Two dead keys: the Compose file composes some (´ ´ is ´).
			r, ok := t.km.Compose(t.dead, sym)
			t.dead = 0
			if ok {
				return Char, r
			}
			return Home, 0
		}
		t.dead = sym
		return Home, 0
	}
	r, ok := keysym.ToRune(sym)
	if !ok || !(unicode.IsGraphic(r) || r == ' ') {
		t.dead = 0
		return Physical, 0
	}
	if t.dead != 0 {
		d := t.dead
		t.dead = 0
		if cr, ok := t.km.Compose(d, sym); ok {
			return Char, cr
		}
		// A sequence the Compose file lacks types nothing on the
		// sender's own desktop (X and libxkbcommon drop it): nor here.
		return Home, 0
	}
	return Char, r
}

// keysym is the keysym c gives under the modifiers held and Caps Lock.
func (t *Translator) keysym(c keys.Code) (uint32, bool) {
	syms, alpha, ok := t.km.Keysyms(c)
	if !ok {
		return 0, false
	}
	shift, altgr := false, false
	for _, h := range t.held {
		shift = shift || slices.Contains(shifts, h)
		altgr = altgr || t.isAltGr(h)
	}
	if t.caps && alpha && !altgr {
		shift = !shift
	}
	lv := 0
	if shift {
		lv |= 1
	}
	if altgr {
		lv |= 2
	}
	if syms[lv] == 0 {
		// A key whose type lacks the level gives its first (XKB maps the
		// modifiers its type ignores to level 1).
		lv = 0
	}
	return syms[lv], syms[lv] != 0
}

// isDead reports whether ks is a dead key's keysym (keysymdef.h's
// dead_grave 0xfe50 to dead_greek 0xfe8c and their kin).
func isDead(ks uint32) bool { return ks >= 0xfe50 && ks <= 0xfe93 }

// Table is a Keymap from tables: the X server's keymap, or a test's.
type Table struct {
	Syms  map[keys.Code][4]uint32
	Alpha map[keys.Code]bool
	// Seqs are the Compose file's dead-key sequences: {dead, base} ->
	// character.
	Seqs map[[2]uint32]rune
}

// Keysyms implements Keymap.
func (t *Table) Keysyms(c keys.Code) ([4]uint32, bool, bool) {
	s, ok := t.Syms[c]
	return s, t.Alpha[c], ok
}

// Compose implements Keymap.
func (t *Table) Compose(dead, base uint32) (rune, bool) {
	r, ok := t.Seqs[[2]uint32{dead, base}]
	return r, ok
}
