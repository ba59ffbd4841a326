// Package keys names keyboard keys. On the wire a key is its USB HID usage ID on
// the keyboard page (0x07), or, for a key that has none (media, launch and
// brightness keys, Redo, Print), EvdevBase + its Linux evdev code (PROTOCOL.md
// §3.1); people name keys with W3C KeyboardEvent.code names (KeyA, ShiftLeft,
// Enter), the names a browser reports for the key. The tables are generated
// by `go generate` from qemu's keycodemapdb (see LICENSE.keycodemapdb), with
// the names of Chromium's code table where it names a key otherwise
// (keys/internal/keygen); the build never reads their sources.
// Everything here is read-only after init and safe for concurrent use.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:generate go run gen.go -kind table -in testdata/keycodemapdb/keymaps.csv -license testdata/keycodemapdb/LICENSE.BSD -chromium testdata/chromium/dom_codes.tsv -spec testdata/uievents-code/codes.tsv -out table_gen.go

// Code is a USB HID usage ID on the keyboard/keypad page (0x07), or
// EvdevBase + a Linux evdev code for a key without one. The zero Code is "no
// event" in HID and never names a key.
type Code uint16

// EvdevBase starts the codes of the keys keycodemapdb gives a Linux evdev
// code but no USB HID usage (PROTOCOL.md §3.1): such a key is EvdevBase + its
// evdev code (KEY_REDO 182 is 0xE0B6), up to EvdevBase + 0x2FF (KEY_MAX).
// Usages 0xE8 to 0xFFFF are reserved on the keyboard page, so no usage is
// ever read as one of these.
const EvdevBase Code = 0xE000

// evdevMax is KEY_MAX of linux/input-event-codes.h.
const evdevMax = 0x2FF

// Info is what keycodemapdb knows of one key: its codes for each backend.
// A column the CSV leaves empty holds the sentinel its comment names.
type Info struct {
	Code Code
	// Name is the KeyboardEvent.code name, "" if the key has none: the UI
	// Events spec's, or Chromium's for a key the spec does not name
	// (MediaPlay; table_gen.go marks them).
	Name string
	// Evdev is the Linux input event code (KEY_*), EvdevName its name
	// ("" where keycodemapdb has none, as for 84, XKB's <LVL3>); 0
	// (KEY_RESERVED) if none.
	Evdev     uint16
	EvdevName string
	// X11Keysym is the key's keysym on the US layout, 0 (NoSymbol) if none.
	X11Keysym uint32
	X11Name   string
	// X11Shifted is the keysym with Shift on the US layout, 0 if none.
	X11Shifted     uint32
	X11ShiftedName string
	// MacOS is the macOS virtual key code, -1 if none (0 is KeyA).
	MacOS int16
	// Win32VK is the Windows virtual-key code, 0 if none (no VK is 0).
	Win32VK   uint8
	Win32Name string
	// XKB is the XKB key name (AC01), "" if none.
	XKB string
}

// ErrUnknownKey is wrapped by Parse's error for a name it does not know.
var ErrUnknownKey = errors.New("unknown key")

var (
	byCode  = map[Code]*Info{}
	byName  = map[string]Code{} // lower-case W3C name
	byEvdev = map[uint16]Code{} // the lowest code of each evdev code
)

func init() {
	for i := range table {
		e := &table[i]
		byCode[e.Code] = e
		if e.Name != "" {
			byName[strings.ToLower(e.Name)] = e.Code
		}
		// The table is in code order: the first code of an evdev code is
		// its lowest (Backslash 0x31 for KEY_BACKSLASH, not the ISO 0x32).
		if _, dup := byEvdev[e.Evdev]; !dup && e.Evdev != 0 {
			byEvdev[e.Evdev] = e.Code
		}
	}
}

// FromEvdev returns the key a Linux evdev key code (an X keycode - 8 under
// the evdev rules) is relayed as: its USB HID usage, or EvdevBase + ev for a
// key keycodemapdb gives no usage. The lowest usage wins where several share
// an evdev code, so FromEvdev(Lookup(c).Evdev) may differ from c, but the
// evdev code it gives back is always ev. It is false for 0 (KEY_RESERVED) and
// for codes keycodemapdb does not list.
func FromEvdev(ev uint16) (Code, bool) {
	c, ok := byEvdev[ev]
	return c, ok
}

// IsEvdev reports whether c is in the range of evdev codes without a USB HID
// usage (EvdevBase to EvdevBase + KEY_MAX), whether or not the table knows
// it.
func (c Code) IsEvdev() bool { return c >= EvdevBase && c <= EvdevBase+evdevMax }

// String is the W3C name of c, or its code in hex ("0x32", "0xE0B6") for a
// key without a name. Parse accepts both forms.
func (c Code) String() string {
	if e := byCode[c]; e != nil && e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("0x%02X", uint16(c))
}

// Parse returns the key named s: a W3C KeyboardEvent.code name in any case
// ("KeyA", "shiftleft"), an alias in any case (Return, ctrl, Page_Up:
// Aliases), or a nonzero usage in hex ("0x04", "0x1FF"). The hex
// form takes any Code, also one the table does not know, so that
// Parse(c.String()) == c for every c but 0.
func Parse(s string) (Code, error) {
	if lower, ok := asciiLower(s); ok {
		if c, ok := byName[lower]; ok {
			return c, nil
		}
		if c, ok := aliasByLower[lower]; ok {
			return c, nil
		}
	}
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		// Base 16, not 0: no sign, no underscores, no second prefix.
		if v, err := strconv.ParseUint(s[2:], 16, 16); err == nil && v != 0 {
			return Code(v), nil
		}
	}
	return 0, unknownKey(s)
}

// asciiLower lower-cases an ASCII s. Names are ASCII: strings.ToLower would
// also let "Keyİ" (U+0130) or a Kelvin sign (U+212A) through as KeyI, KeyK.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		if c >= utf8.RuneSelf {
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), true
}

// Lookup returns what the table knows of c.
func Lookup(c Code) (Info, bool) {
	if e := byCode[c]; e != nil {
		return *e, true
	}
	return Info{}, false
}

// All returns every key of the table in code order (the usages, then the
// evdev codes without one). The slice is the
// caller's.
func All() []Info {
	return append([]Info(nil), table[:]...)
}

type usKey struct {
	code  Code
	shift bool
}

// usLayout maps each character a US keyboard types to its key. This is
// layout knowledge, not in keycodemapdb (TestForRuneMatchesKeysyms checks it
// against the CSV's US keysyms).
var usLayout = map[rune]usKey{'\n': {Enter, false}, '\t': {Tab, false}, ' ': {Space, false}}

func init() {
	// plain[i] is typed by codes[i], shifted[i] by codes[i] with Shift.
	add := func(plain, shifted string, codes ...Code) {
		for i, c := range codes {
			usLayout[rune(plain[i])] = usKey{c, false}
			usLayout[rune(shifted[i])] = usKey{c, true}
		}
	}
	for i := range Code(26) {
		add(string(rune('a'+i)), string(rune('A'+i)), KeyA+i)
	}
	add("1234567890", "!@#$%^&*()", Digit1, Digit2, Digit3, Digit4, Digit5, Digit6, Digit7, Digit8, Digit9, Digit0)
	add("-=[]\\;',./`", "_+{}|:\"<>?~", Minus, Equal, BracketLeft, BracketRight, Backslash, Semicolon, Quote, Comma, Period, Slash, Backquote)
}

// ForRune returns the key that types r on a US layout and whether Shift must
// be held: printable ASCII (0x20-0x7E), '\n' (Enter) and '\t' (Tab).
func ForRune(r rune) (code Code, shift bool, ok bool) {
	k, ok := usLayout[r]
	return k.code, k.shift, ok
}
