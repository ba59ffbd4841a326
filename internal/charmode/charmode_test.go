package charmode_test

import (
	"os"
	"testing"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
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

// TestZyklopOnGerman types "Zyklop öäü ß @" (as e2e's
// TestCharactersFromGermanDesktop does) as physical keys of the German
// layout, as xdotool does on a German desktop, and gets it back.
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

// Keysyms of a few keys as the X server's core mapping of de and fr gives
// them: enough for the lock and layout-change tests, without XKB data.
const (
	ksKPEnd, ksKPDelete, ksKPSeparator, ksKPDecimal, ksKP1 = 0xff9c, 0xff9f, 0xffac, 0xffae, 0xffb1
)

func table(syms map[keys.Code][4]uint32) *charmode.Table {
	t := &charmode.Table{Syms: syms, Alpha: map[keys.Code]bool{}}
	for c, s := range syms {
		t.Alpha[c] = s[0] >= 'a' && s[0] <= 'z' && s[1] == s[0]-'a'+'A'
	}
	return t
}

var (
	deTable = table(map[keys.Code][4]uint32{
		keys.KeyY: {'z', 'Z'}, keys.KeyQ: {'q', 'Q', '@'}, keys.Digit1: {'1', '!'},
		keys.Numpad1: {ksKPEnd, ksKP1}, keys.NumpadDecimal: {ksKPDelete, ksKPSeparator},
		keys.NumpadAdd: {0xffab, 0xffab}, keys.AltRight: {0xfe03},
	})
	frTable = table(map[keys.Code][4]uint32{
		keys.KeyY: {'y', 'Y'}, keys.KeyQ: {'a', 'A', 0xe6}, keys.Digit1: {'&', '1'},
		keys.Numpad1: {ksKPEnd, ksKP1}, keys.NumpadDecimal: {ksKPDelete, ksKPDecimal},
		keys.AltRight: {0xfe03},
	})
)

// chars tells tr events and returns the characters of its Char answers,
// and "<phys>" for each key-down that stays physical.
func chars(tr *charmode.Translator, evs []ev) string {
	var out []rune
	for _, e := range evs {
		k, r := tr.Key(e.key, e.down)
		switch {
		case !e.down:
		case k == charmode.Char:
			out = append(out, r)
		case k == charmode.Physical:
			out = append(out, []rune("<phys>")...)
		}
	}
	return string(out)
}

// TestLocksFromTheSource checks that the lock state the source read from
// the keyboard (PROTOCOL.md §3.2's Caps and Num Lock, as relaying starts
// or resumes) decides the characters from the first key on: a Caps Lock
// on before send started shifts letters, Num Lock makes the keypad type
// digits and de's decimal key a comma, and pressing a lock key toggles
// from there.
func TestLocksFromTheSource(t *testing.T) {
	tests := []struct {
		name      string
		caps, num bool
		events    []ev
		want      string
	}{
		{"locks off: a small letter", false, false, press(keys.KeyY), "z"},
		{"Caps Lock on at the start: a capital", true, false, press(keys.KeyY), "Z"},
		{"Caps Lock on and Shift: a small letter", true, false, press(keys.ShiftLeft, keys.KeyY), "z"},
		{"Caps Lock on does not shift digits", true, false, press(keys.Digit1), "1"},
		{"Caps Lock on does not shift AltGr's level", true, false, press(keys.AltRight, keys.KeyQ), "@"},
		{"Caps Lock on, pressed: off again", true, false, append(press(keys.CapsLock), press(keys.KeyY)...), "z"},
		{"Num Lock on: the keypad types digits", false, true, press(keys.Numpad1), "1"},
		{"Num Lock on: de's decimal key is a comma", false, true, press(keys.NumpadDecimal), ","},
		{"Num Lock on and Shift: a cursor key, physical", false, true, press(keys.ShiftLeft, keys.Numpad1), "<phys>"},
		{"Num Lock off: the keypad stays physical", false, false, press(keys.Numpad1), "<phys>"},
		{"Num Lock off, pressed: physical itself, then digits", false, false, append(press(keys.NumLock), press(keys.Numpad1)...), "<phys>1"},
		{"Num Lock on, pressed: cursor keys again", false, true, append(press(keys.NumLock), press(keys.Numpad1)...), "<phys><phys>"},
		{"a keypad key Num Lock does not change stays physical", false, true, press(keys.NumpadAdd), "<phys>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := charmode.New(deTable)
			tr.SetLocks(tt.caps, tt.num)
			if got := chars(tr, tt.events); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSetKeymapFollowsALayoutChange checks that characters follow the
// sender's new layout from the key after SetKeymap (setxkbmap de, then
// fr, mid-session), with the locks and held modifiers kept (DESIGN.md
// "Named destinations": the X server's keymap, read again as it changes).
func TestSetKeymapFollowsALayoutChange(t *testing.T) {
	tr := charmode.New(deTable)
	tr.SetLocks(false, true)
	got := chars(tr, append(append(press(keys.KeyY), press(keys.KeyQ)...), press(keys.NumpadDecimal)...))
	tr.Key(keys.ShiftLeft, true) // held across the change
	tr.SetKeymap(frTable)
	got += chars(tr, press(keys.KeyY))
	tr.Key(keys.ShiftLeft, false)
	got += chars(tr, append(append(press(keys.KeyY), press(keys.KeyQ)...), append(press(keys.Digit1), press(keys.NumpadDecimal)...)...))
	if want := "zq,Yya&."; got != want {
		t.Errorf("de then fr typed %q, want %q", got, want)
	}
}
