package xkblayout

import (
	"os"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// load reads a layout from this machine's XKB data (xkb-data, in the
// Makefile's DEPS) and Compose file.
func load(t *testing.T, name string) *Layout {
	t.Helper()
	f, err := os.Open(ComposeFile)
	if err != nil {
		t.Skipf("no Compose file (apt-get install libx11-data): %v", err)
	}
	defer f.Close()
	if _, err := os.Stat(Dir + "/symbols/" + "de"); err != nil {
		t.Skipf("no XKB data (apt-get install xkb-data): %v", err)
	}
	l, err := Load(os.DirFS(Dir), name, f)
	if err != nil {
		t.Fatalf("Load(%q): %v", name, err)
	}
	return l
}

func st(k keys.Code, shift, altgr bool) Stroke { return Stroke{Key: k, Shift: shift, AltGr: altgr} }

// TestKnownCharacters: the keys the German, French and US international
// layouts type characters with, as printed on their keyboards (z and y
// swapped on de, a/q and shifted digits on fr, AltGr for @ and €, dead
// keys for characters a layout has no key of).
func TestKnownCharacters(t *testing.T) {
	ignoreAlpha := func(s []Stroke) []Stroke {
		out := make([]Stroke, len(s))
		for i, x := range s {
			x.Alpha, x.CapsOff = false, false
			out[i] = x
		}
		return out
	}
	for _, tc := range []struct {
		layout string
		r      rune
		want   []Stroke // nil: the layout cannot type it
	}{
		{"de", 'z', []Stroke{st(keys.KeyY, false, false)}},
		{"de", 'y', []Stroke{st(keys.KeyZ, false, false)}},
		{"de", 'Z', []Stroke{st(keys.KeyY, true, false)}},
		{"de", '@', []Stroke{st(keys.KeyQ, false, true)}},
		{"de", '€', []Stroke{st(keys.KeyE, false, true)}},
		{"de", 'ß', []Stroke{st(keys.Minus, false, false)}},
		{"de", 'ö', []Stroke{st(keys.Semicolon, false, false)}},
		{"de", 'Ü', []Stroke{st(keys.BracketLeft, true, false)}},
		{"de", '"', []Stroke{st(keys.Digit2, true, false)}},
		{"de", ' ', []Stroke{st(keys.Space, false, false)}},
		{"de", '<', []Stroke{st(keys.IntlBackslash, false, false)}},
		// é through the dead acute key, then e.
		{"de", 'é', []Stroke{st(keys.Equal, false, false), st(keys.KeyE, false, false)}},
		{"de", 'ê', []Stroke{st(keys.Backquote, false, false), st(keys.KeyE, false, false)}},
		{"de", 'ٹ', nil},
		{"fr", 'a', []Stroke{st(keys.KeyQ, false, false)}},
		{"fr", 'q', []Stroke{st(keys.KeyA, false, false)}},
		{"fr", 'z', []Stroke{st(keys.KeyW, false, false)}},
		{"fr", '1', []Stroke{st(keys.Digit1, true, false)}},
		{"fr", '0', []Stroke{st(keys.Digit0, true, false)}},
		{"fr", 'é', []Stroke{st(keys.Digit2, false, false)}},
		{"fr", '&', []Stroke{st(keys.Digit1, false, false)}},
		{"fr", '@', []Stroke{st(keys.Digit0, false, true)}},
		{"fr", 'ê', []Stroke{st(keys.BracketLeft, false, false), st(keys.KeyE, false, false)}},
		{"us(intl)", '"', []Stroke{st(keys.Quote, true, true)}},
		{"us(intl)", 'é', []Stroke{st(keys.KeyE, false, true)}},
		{"us(intl)", 'ê', []Stroke{st(keys.Digit6, true, false), st(keys.KeyE, false, false)}},
		{"us(intl)", 'õ', []Stroke{st(keys.Backquote, true, false), st(keys.KeyO, false, false)}},
		{"us", '€', nil},
		{"us", 'é', nil},
		{"us", '~', []Stroke{st(keys.Backquote, true, false)}},
	} {
		got, ok := load(t, tc.layout).Strokes(tc.r)
		if ok != (tc.want != nil) || ok && !equal(ignoreAlpha(got), tc.want) {
			t.Errorf("%s: Strokes(%q) = %+v, %v; want %+v", tc.layout, tc.r, got, ok, tc.want)
		}
	}
}

func equal(a, b []Stroke) bool {
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

// TestAlphaFollowsCaps: letters are marked so that an injector inverts
// Shift under Caps Lock, digits and AltGr symbols are not, and a key Caps
// Lock gives another level is marked to be typed with it off.
func TestAlphaFollowsCaps(t *testing.T) {
	l := load(t, "de")
	for _, tc := range []struct {
		r       rune
		alpha   bool
		capsOff bool
	}{{'a', true, false}, {'A', true, false}, {'ö', true, false}, {'1', false, false}, {'@', false, false},
		// de's ß key types ẞ under Caps Lock (FOUR_LEVEL_PLUS_LOCK).
		{'ß', false, true},
		// Caps Lock and AltGr+Shift+S: ſ, not ẞ (FOUR_LEVEL_ALPHABETIC).
		{'ẞ', true, false},
	} {
		s, ok := l.Strokes(tc.r)
		if !ok || s[len(s)-1].Alpha != tc.alpha || s[len(s)-1].CapsOff != tc.capsOff {
			t.Errorf("de: %q: %+v; want Alpha %v, CapsOff %v", tc.r, s, tc.alpha, tc.capsOff)
		}
	}
}

// TestLoadErrors: names that are not layouts say what to write.
func TestLoadErrors(t *testing.T) {
	load(t, "de")
	for _, name := range []string{"xx", "de(nosuch)", "../../etc/passwd", "de+fr", ""} {
		if _, err := Load(os.DirFS(Dir), name, nil); err == nil {
			t.Errorf("Load(%q): no error", name)
		} else {
			t.Logf("Load(%q): %v", name, err)
		}
	}
}

// TestAltGrOnlyWhereALevel3Key: us has no level 3 key, so nothing is
// typed with AltGr on it.
func TestAltGrOnlyWhereALevel3Key(t *testing.T) {
	if _, ok := load(t, "us").AltGr(); ok {
		t.Error("us: an AltGr key; want none")
	}
	if k, ok := load(t, "de").AltGr(); !ok || k != keys.AltRight {
		t.Errorf("de: AltGr %v, %v; want AltRight", k, ok)
	}
}
