package inject

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

var (
	layoutsMu sync.Mutex
	layouts   = map[string]*xkblayout.Layout{}
)

// testLayout loads a layout from this machine's XKB data (xkb-data and
// libx11-data, in the Makefile's DEPS), once per test binary.
func testLayout(t testing.TB, name string) *xkblayout.Layout {
	t.Helper()
	layoutsMu.Lock()
	defer layoutsMu.Unlock()
	if l, ok := layouts[name]; ok {
		return l
	}
	f, err := os.Open(xkblayout.ComposeFile)
	if err != nil {
		t.Skipf("no Compose file (apt-get install libx11-data): %v", err)
	}
	defer f.Close()
	l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), name, f)
	if err != nil {
		t.Skipf("no XKB layout %s (apt-get install xkb-data): %v", name, err)
	}
	layouts[name] = l
	return l
}

func pressString(ps []keyPress) string {
	var out []string
	for _, p := range ps {
		sign := "-"
		if p.down {
			sign = "+"
		}
		out = append(out, sign+p.code.String())
	}
	return strings.Join(out, " ")
}

// TestCharPresses (PROTOCOL.md §3.1: held Shift and AltGr never change a
// character, held Control still applies): a character is its layout's
// keys with Shift and AltGr pressed to its level, the sender's Shift and
// AltGr released around it and back after, Shift inverted for a letter under Caps Lock, and a dead
// key before its base key.
func TestCharPresses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout string
		r      rune
		held   []keys.Code
		caps   bool
		want   string // "": the layout lacks it
	}{
		{"de z is the key labelled Z on US keyboards' Y", "de", 'z', nil, false, "+KeyY -KeyY"},
		{"capital with Shift", "de", 'Z', nil, false, "+ShiftLeft +KeyY -KeyY -ShiftLeft"},
		{"AltGr level", "de", '@', nil, false, "+AltRight +KeyQ -KeyQ -AltRight"},
		{"held Shift released and pressed back", "de", '€', []keys.Code{keys.ShiftLeft}, false, "-ShiftLeft +AltRight +KeyE -KeyE -AltRight +ShiftLeft"},
		{"held Shift kept for a capital", "de", 'A', []keys.Code{keys.ShiftRight}, false, "+KeyA -KeyA"},
		{"Caps Lock: lower case with Shift", "de", 'a', nil, true, "+ShiftLeft +KeyA -KeyA -ShiftLeft"},
		{"Caps Lock: capital without", "de", 'A', nil, true, "+KeyA -KeyA"},
		{"Caps Lock leaves digits", "de", '1', nil, true, "+Digit1 -Digit1"},
		{"Caps Lock off around de's ß key, which types ẞ under it", "de", 'ß', nil, true, "+CapsLock -CapsLock +Minus -Minus +CapsLock -CapsLock"},
		{"Caps Lock and the letters of AltGr levels (FOUR_LEVEL_ALPHABETIC)", "fr", 'æ', nil, true, "+ShiftLeft +AltRight +KeyQ -KeyQ -ShiftLeft -AltRight"},
		{"dead key then base", "de", 'é', nil, false, "+Equal -Equal +KeyE -KeyE"},
		{"Control stays held: Ctrl+C on any layout", "de", 'c', []keys.Code{keys.ControlLeft}, false, "+KeyC -KeyC"},
		{"held AltGr released for level 1", "de", 'q', []keys.Code{keys.AltRight}, false, "-AltRight +KeyQ -KeyQ +AltRight"},
		{"the key itself held", "de", 'q', []keys.Code{keys.KeyQ}, false, "-KeyQ +KeyQ -KeyQ +KeyQ"},
		{"fr digits are shifted", "fr", '1', nil, false, "+ShiftLeft +Digit1 -Digit1 -ShiftLeft"},
		{"fr a is on Q", "fr", 'a', nil, false, "+KeyQ -KeyQ"},
		{"us(intl) dead circumflex on Shift+6", "us(intl)", 'ê', nil, false, "+ShiftLeft +Digit6 -Digit6 -ShiftLeft +KeyE -KeyE"},
		{"a character de lacks", "de", 'ٹ', nil, false, ""},
		{"us has no €", "us", '€', nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLayout(t, tc.layout)
			got, ok := charPresses(l, tc.r, func(c keys.Code) bool { return slices.Contains(tc.held, c) }, tc.caps)
			if tc.want == "" {
				if ok {
					t.Errorf("%s %q: %s; want none (the layout lacks it)", tc.layout, tc.r, pressString(got))
				}
				return
			}
			if s := pressString(got); !ok || s != tc.want {
				t.Errorf("%s %q: %q, %v; want %q", tc.layout, tc.r, s, ok, tc.want)
			}
		})
	}
}

// TestCharPressesRestoreHeld: whatever the sender holds, typing any
// character of de or fr leaves exactly the keys held that were, never
// presses a key down that is down nor releases one that is up (a real
// keyboard cannot), and taps the character's keys.
func TestCharPressesRestoreHeld(t *testing.T) {
	ls := []*xkblayout.Layout{testLayout(t, "de"), testLayout(t, "fr"), testLayout(t, "us(intl)")}
	mods := []keys.Code{keys.ShiftLeft, keys.ShiftRight, keys.AltRight, keys.ControlLeft, keys.KeyQ, keys.KeyE}
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.SampledFrom(ls).Draw(t, "layout")
		r := rapid.SampledFrom(l.Chars()).Draw(t, "char")
		held := map[keys.Code]bool{}
		for _, m := range mods {
			held[m] = rapid.Bool().Draw(t, "held "+m.String())
		}
		caps := rapid.Bool().Draw(t, "caps")
		ps, ok := charPresses(l, r, func(c keys.Code) bool { return held[c] }, caps)
		if !ok {
			t.Fatalf("%s lists %q but has no presses for it", l.Name(), r)
		}
		state := maps.Clone(held)
		for _, p := range ps {
			if state[p.code] == p.down {
				t.Fatalf("%s %q: %v is already %v (%s)", l.Name(), r, p.code, map[bool]string{true: "down", false: "up"}[p.down], pressString(ps))
			}
			state[p.code] = p.down
		}
		for k, v := range held {
			if state[k] != v {
				t.Fatalf("%s %q: %v left %v, held was %v (%s)", l.Name(), r, k, state[k], v, pressString(ps))
			}
		}
		strokes, _ := l.Strokes(r)
		for _, s := range strokes {
			if !strings.Contains(pressString(ps), fmt.Sprintf("+%v -%v", s.Key, s.Key)) {
				t.Fatalf("%s %q: %v not tapped (%s)", l.Name(), r, s.Key, pressString(ps))
			}
		}
	})
}
