package keys

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Key is what a key event moves: a physical key or a character.
//
// A physical key (a Code, the key at that position whatever its label) is
// pressed at the receiver as the same physical key, so the receiver's own
// layout decides what it types, as with a keyboard plugged into it. A
// character (from a terminal, or a script's type) is typed at the receiver as
// that character, whatever the receiver's layout.
//
// Key(code) is the physical key code; Char(r) the character r. The zero Key
// is no key. Keys compare with ==: the character 'a' and the key KeyA are
// different keys, and so are 'a' and 'A'.
type Key uint32

// charFlag marks a character Key; the rest of it is the Unicode scalar
// value. Physical keys use the low 16 bits only.
const charFlag Key = 1 << 31

// Char is the Key that types r. It does not check r: see ValidChar.
func Char(r rune) Key { return charFlag | Key(uint32(r)) }

// ValidChar reports whether r can travel as a character: a Unicode scalar
// value that is not a control character. Control characters are keys, not
// text: '\n' is Enter, '\t' Tab, 0x7F Backspace, 0x1B Escape.
func ValidChar(r rune) bool {
	return utf8.ValidRune(r) && !unicode.IsControl(r)
}

// IsChar reports whether k is a character.
func (k Key) IsChar() bool { return k&charFlag != 0 }

// Code returns the physical key k is, and false for a character.
func (k Key) Code() (Code, bool) {
	if k.IsChar() || k > 0xFFFF {
		return 0, false
	}
	return Code(k), true
}

// Char returns the character k is, and false for a physical key.
func (k Key) Char() (rune, bool) {
	if !k.IsChar() {
		return 0, false
	}
	return rune(k &^ charFlag), true
}

// String is a physical key's W3C name (Code.String) or a character in
// single quotes with Go escapes ('é', '\u200b').
func (k Key) String() string {
	if r, ok := k.Char(); ok {
		return strconv.QuoteRune(r)
	}
	return Code(k).String()
}

// Locks is the lock state a sender wants the receiver to have (PROTOCOL.md
// §3.2): whether it is known at all (a terminal or a script cannot tell),
// whether Caps Lock and Num Lock are on, and an epoch bit the sender flips
// each time relaying starts or resumes, so that the receiver matches its
// locks then even when the state itself did not change.
type Locks uint8

const (
	LockCaps Locks = 1 << 0
	LockNum  Locks = 1 << 1
	// LockEpoch flips each time the sender (re)starts relaying.
	LockEpoch Locks = 1 << 6
	// LocksKnown marks a lock state the source read from the keyboard.
	LocksKnown Locks = 1 << 7
	// locksValid are the bits a Locks may have.
	locksValid = LockCaps | LockNum | LockEpoch | LocksKnown
)

// Valid reports whether l has no bits but the defined ones, and the others
// only with LocksKnown.
func (l Locks) Valid() bool {
	return l&^locksValid == 0 && (l&LocksKnown != 0 || l == 0)
}

// Known reports whether l says anything.
func (l Locks) Known() bool { return l&LocksKnown != 0 }

// String is "caps,num", "caps", "num", "none" or "unknown".
func (l Locks) String() string {
	switch {
	case l&LocksKnown == 0:
		return "unknown"
	case l&LockCaps != 0 && l&LockNum != 0:
		return "caps,num"
	case l&LockCaps != 0:
		return "caps"
	case l&LockNum != 0:
		return "num"
	}
	return "none"
}
