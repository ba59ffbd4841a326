// Package keys names keyboard keys. On the wire a key is its USB HID usage ID on
// the keyboard page (0x07); people name keys with W3C KeyboardEvent.code names
// (KeyA, ShiftLeft, Enter). The tables are generated from qemu's keycodemapdb
// (see LICENSE.keycodemapdb) by `go generate`; the build never reads the CSV.
// Everything here is read-only after init and safe for concurrent use.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:generate go run ./internal/gen -in testdata/keycodemapdb/keymaps.csv -license testdata/keycodemapdb/LICENSE.BSD -out table_gen.go

// Code is a USB HID usage ID on the keyboard/keypad page (0x07). The zero Code
// is "no event" in HID and never names a key.
type Code uint16

// Info is what keycodemapdb knows of one key: its codes for each backend.
// A column the CSV leaves empty holds the sentinel its comment names.
type Info struct {
	Code Code
	// Name is the W3C KeyboardEvent.code name, "" if the key has none.
	Name string
	// Evdev is the Linux input event code (KEY_*), EvdevName its name; 0
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
	byCode = map[Code]*Info{}
	byName = map[string]Code{} // lower-case W3C name
)

func init() {
	for i := range table {
		e := &table[i]
		byCode[e.Code] = e
		if e.Name != "" {
			byName[strings.ToLower(e.Name)] = e.Code
		}
	}
}

// String is the W3C name of c, or its usage in hex ("0x32") for a key
// without a name. Parse accepts both forms.
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

// All returns every key of the table in usage order. The slice is the
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
