package charmode_test

import (
	"os"
	"testing"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

func loadDE(t testing.TB) *xkblayout.Layout {
	t.Helper()
	f, err := os.Open(xkblayout.ComposeFile)
	if err != nil {
		t.Skipf("no Compose file (apt-get install libx11-data): %v", err)
	}
	defer f.Close()
	l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), "de", f)
	if err != nil {
		t.Skipf("no XKB data (apt-get install xkb-data): %v", err)
	}
	return l
}

type ev struct {
	key  keys.Code
	down bool
}

func press(k ...keys.Code) []ev {
	var out []ev
	for _, c := range k {
		out = append(out, ev{c, true})
	}
	for i := len(k) - 1; i >= 0; i-- {
		out = append(out, ev{k[i], false})
	}
	return out
}

// TestKeyDecidesCharacterOrPhysical checks the decision of charmode's
// package doc on the German layout: printable keys become the characters
// de gives them (Shift and AltGr levels, dead keys composed as the Compose
// file says), chords with Control/Alt/Super and keys that print nothing
// stay physical.
func TestKeyDecidesCharacterOrPhysical(t *testing.T) {
	de := loadDE(t)
	tests := []struct {
		name   string
		events []ev
		want   []charmode.Kind
		chars  string // the characters of the Char answers, in order
	}{
		{"de's KeyY is z", press(keys.KeyY), []charmode.Kind{charmode.Char}, "z"},
		{"Shift level: Shift+KeyY is Z", press(keys.ShiftLeft, keys.KeyY), []charmode.Kind{charmode.Level, charmode.Char}, "Z"},
		{"AltGr char: AltGr+KeyQ is @", press(keys.AltRight, keys.KeyQ), []charmode.Kind{charmode.Level, charmode.Char}, "@"},
		{"umlaut key: Semicolon is ö", press(keys.Semicolon), []charmode.Kind{charmode.Char}, "ö"},
		{"Minus is ß", press(keys.Minus), []charmode.Kind{charmode.Char}, "ß"},
		{"Space is a character", press(keys.Space), []charmode.Kind{charmode.Char}, " "},
		{"dead key composes: ´ then e is é", append(press(keys.Equal), press(keys.KeyE)...), []charmode.Kind{charmode.Home, charmode.Char}, "é"},
		{"dead key then Space is what the Compose file says (an apostrophe)", append(press(keys.Equal), press(keys.Space)...), []charmode.Kind{charmode.Home, charmode.Char}, "'"},
		{"dead key then a key it does not compose with types nothing", append(press(keys.Equal), press(keys.KeyQ)...), []charmode.Kind{charmode.Home, charmode.Home}, ""},
		{"chord stays physical: Ctrl+A", press(keys.ControlLeft, keys.KeyA), []charmode.Kind{charmode.Physical, charmode.Physical}, ""},
		{"chord stays physical: Alt+F4", press(keys.AltLeft, keys.F4), []charmode.Kind{charmode.Physical, charmode.Physical}, ""},
		{"chord stays physical: Super+KeyE", press(keys.MetaLeft, keys.KeyE), []charmode.Kind{charmode.Physical, charmode.Physical}, ""},
		{"Ctrl+Shift+KeyT stays physical", press(keys.ControlLeft, keys.ShiftLeft, keys.KeyT), []charmode.Kind{charmode.Physical, charmode.Level, charmode.Physical}, ""},
		{"non-printing keys stay physical", append(append(press(keys.Enter), press(keys.ArrowLeft)...), append(press(keys.Backspace), press(keys.Tab)...)...),
			[]charmode.Kind{charmode.Physical, charmode.Physical, charmode.Physical, charmode.Physical}, ""},
		{"Shift+Tab: Tab stays physical", press(keys.ShiftLeft, keys.Tab), []charmode.Kind{charmode.Level, charmode.Physical}, ""},
		{"Caps Lock stays home and shifts letters", append(press(keys.CapsLock), press(keys.KeyY)...), []charmode.Kind{charmode.Home, charmode.Char}, "Z"},
		{"Caps Lock does not shift digits", append(press(keys.CapsLock), press(keys.Digit1)...), []charmode.Kind{charmode.Home, charmode.Char}, "1"},
		{"Caps Lock and Shift make a small letter", append(press(keys.CapsLock), press(keys.ShiftLeft, keys.KeyA)...), []charmode.Kind{charmode.Home, charmode.Level, charmode.Char}, "a"},
		{"a dead key's pending accent ends at a chord", append(append(press(keys.Equal), press(keys.ControlLeft, keys.KeyE)...), press(keys.KeyE)...),
			[]charmode.Kind{charmode.Home, charmode.Physical, charmode.Physical, charmode.Char}, "e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := charmode.New(de)
			var kinds []charmode.Kind
			var chars []rune
			for _, e := range tt.events {
				k, r := tr.Key(e.key, e.down)
				if !e.down {
					continue
				}
				kinds = append(kinds, k)
				if k == charmode.Char {
					chars = append(chars, r)
				}
			}
			if !equal(kinds, tt.want) || string(chars) != tt.chars {
				t.Errorf("kinds %v chars %q, want %v %q", kinds, string(chars), tt.want, tt.chars)
			}
		})
	}
}

func equal(a, b []charmode.Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestZyklopOnGerman types the text as physical keys of the
// German layout, as xdotool does on a German desktop, and gets it back.
func TestZyklopOnGerman(t *testing.T) {
	de := loadDE(t)
	var evs []ev
	for _, s := range []struct {
		mods []keys.Code
		key  keys.Code
	}{
		{[]keys.Code{keys.ShiftLeft}, keys.KeyY}, {nil, keys.KeyZ}, {nil, keys.KeyK}, {nil, keys.KeyL}, {nil, keys.KeyO}, {nil, keys.KeyP},
		{nil, keys.Space}, {nil, keys.Semicolon}, {nil, keys.Quote}, {nil, keys.BracketLeft}, {nil, keys.Space}, {nil, keys.Minus},
		{nil, keys.Space}, {[]keys.Code{keys.AltRight}, keys.KeyQ},
	} {
		evs = append(evs, press(append(s.mods, s.key)...)...)
	}
	tr := charmode.New(de)
	var got []rune
	for _, e := range evs {
		if k, r := tr.Key(e.key, e.down); e.down && k == charmode.Char {
			got = append(got, r)
		}
	}
	if string(got) != "Zyklop öäü ß @" {
		t.Errorf("got %q, want %q", string(got), "Zyklop öäü ß @")
	}
}
