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

	"github.com/keyrelay/keyrelay/internal/x11/keysym"
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

// Translator follows the sender's modifiers, Caps Lock, Num Lock and
// pending dead key through the key events it is told, and says what each
// key-down is. The zero value is not usable: make it with New. Not safe
// for concurrent use.
type Translator struct {
	km    Keymap
	held  []keys.Code // keys down now
	caps  bool
	num   bool
	dead  uint32 // the dead key's keysym waiting for its base key; 0: none
	altgr map[keys.Code]bool
}

// New makes a Translator for layout km, with Caps Lock and Num Lock off
// until SetLocks says otherwise.
func New(km Keymap) *Translator {
	return &Translator{km: km, altgr: map[keys.Code]bool{}}
}

// SetLocks sets Caps Lock and Num Lock as the source read them from the
// keyboard, as relaying starts or resumes: a lock turned on before, or
// toggled in local use, where the translator sees no keys, would
// otherwise be taken for off (or for what it was) until pressed.
func (t *Translator) SetLocks(caps, num bool) { t.caps, t.num = caps, num }

// SetKeymap makes km the sender's layout from the next key on (the
// source's layout changed: setxkbmap on X). A dead key pending under the
// old layout is dropped, as the X server's own compose state is when its
// keymap changes.
func (t *Translator) SetKeymap(km Keymap) {
	t.km = km
	t.dead = 0
	clear(t.altgr)
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
	case c == keys.NumLock:
		// It stays physical, so that the receiver's Num Lock follows
		// for the keypad keys that stay physical too (KP_Enter,
		// arrows with Num Lock off).
		t.num = !t.num
		t.dead = 0
		return Physical, 0
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
	sym, keypad, ok := t.keysym(c)
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
	if keypad {
		r, ok = keypadRunes[sym]
	}
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

// keysym is the keysym c gives under the modifiers held, Caps Lock and Num
// Lock, and whether Num Lock chose it (a keypad key's digit).
func (t *Translator) keysym(c keys.Code) (uint32, bool, bool) {
	syms, alpha, ok := t.km.Keysyms(c)
	if !ok {
		return 0, false, false
	}
	shift, altgr := false, false
	for _, h := range t.held {
		shift = shift || slices.Contains(shifts, h)
		altgr = altgr || t.isAltGr(h)
	}
	if _, kp := keypadRunes[syms[1]]; kp && syms[0] != syms[1] {
		// XKB's KEYPAD type: Num Lock picks level 2 (KP_1, de's
		// KP_Separator), and Shift undoes it; without Num Lock the key
		// is a cursor key (KP_End), which stays physical.
		if t.num != shift {
			return syms[1], true, true
		}
		return syms[0], false, syms[0] != 0
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
	return syms[lv], false, syms[lv] != 0
}

// keypadRunes are the characters of the keypad keysyms Num Lock selects
// (keysymdef.h's KP_ block), as X's XLookupString types them: a German
// keypad's decimal key is KP_Separator, a comma, where a US one types a
// period.
var keypadRunes = map[uint32]rune{
	0xffac: ',', 0xffae: '.', // KP_Separator, KP_Decimal
	0xffb0: '0', 0xffb1: '1', 0xffb2: '2', 0xffb3: '3', 0xffb4: '4',
	0xffb5: '5', 0xffb6: '6', 0xffb7: '7', 0xffb8: '8', 0xffb9: '9',
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
