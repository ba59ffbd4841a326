// Package keysym converts between X11 keysyms and the characters they type.
// X layouts name most characters with legacy keysyms (EuroSign 0x20ac,
// Greek_OMEGA 0x7d9, udiaeresis 0xfc) and any character with a Unicode keysym
// (0x01000000 + code point); both must be recognised to find a character in
// a receiver's keymap. The legacy table is generated from X11's keysymdef.h
// (go generate); everything here is read-only and safe for concurrent use.
package keysym

//go:generate go run gen.go -in /usr/include/X11/keysymdef.h -out table_gen.go

import (
	"strconv"
	"unicode/utf8"
)

// unicodeBase is added to a code point to make its Unicode keysym.
const unicodeBase = 0x01000000

var (
	toRune   = map[uint32]rune{}
	fromRune = map[rune]uint32{}
)

func init() {
	for _, e := range legacy {
		toRune[e.sym] = e.char
		// The first keysym keysymdef.h lists for a character is its usual
		// name; later ones are aliases.
		if _, dup := fromRune[e.char]; !dup {
			fromRune[e.char] = e.sym
		}
	}
}

func latin1(r rune) bool { return r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xff }

// ToRune returns the character keysym ks types, if it types one. Keysyms of
// keys that are not characters (Return, BackSpace, the keypad, dead keys,
// modifiers) type none.
func ToRune(ks uint32) (rune, bool) {
	switch {
	case ks <= 0xff:
		return rune(ks), latin1(rune(ks))
	case ks&0xff000000 == unicodeBase:
		r := rune(ks - unicodeBase)
		// The Unicode keysyms start at U+0100: below it the Latin-1
		// keysyms serve.
		return r, r >= 0x100 && utf8.ValidRune(r)
	}
	r, ok := toRune[ks]
	return r, ok
}

// FromRune returns the keysym to map to a key that must type r: its Latin-1
// or legacy keysym where X has one (clients know those best), else its
// Unicode keysym.
func FromRune(r rune) uint32 {
	if latin1(r) {
		return uint32(r)
	}
	if ks, ok := fromRune[r]; ok {
		return ks
	}
	return unicodeBase + uint32(r)
}

// Parse returns the keysym a name stands for as XKB's symbols files and
// the Compose file write it: a keysymdef.h name ("EuroSign", "dead_acute"),
// a Unicode keysym "U20AC", or a number "0x1000020ac". ok is false for
// names this table lacks (vendor keysyms such as XF86AudioMute), which
// type no character anyway.
func Parse(name string) (uint32, bool) {
	if ks, ok := names[name]; ok {
		return ks, true
	}
	if len(name) > 1 && name[0] == 'U' {
		if r, err := strconv.ParseUint(name[1:], 16, 32); err == nil && utf8.ValidRune(rune(r)) {
			if latin1(rune(r)) {
				return uint32(r), true
			}
			return unicodeBase + uint32(r), true
		}
	}
	if len(name) > 2 && (name[:2] == "0x" || name[:2] == "0X") {
		if v, err := strconv.ParseUint(name[2:], 16, 32); err == nil {
			return uint32(v), true
		}
	}
	return 0, false
}
