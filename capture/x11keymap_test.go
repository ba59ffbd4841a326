package capture

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/testutil/xvfbtest"
	"github.com/keyrelay/keyrelay/keys"
)

// deCoreMapping is part of the core keyboard mapping Xvfb gives for
// setxkbmap de (xmodmap -pke), 7 keysyms a keycode: keycode 24 q Q q Q @
// Greek_OMEGA, 29 z Z z Z leftarrow yen, 21 dead_acute dead_grave ...,
// 36 Return, 108 ISO_Level3_Shift.
var deCoreMapping = map[xproto.Keycode][]xproto.Keysym{
	24:  {'q', 'Q', 'q', 'Q', '@', 0x7d9, 0},
	29:  {'z', 'Z', 'z', 'Z', 0x8fb, 0xa5, 0},
	21:  {0xfe51, 0xfe50, 0xfe51, 0xfe50, 0xfe5b, 0xfe59, 0},
	36:  {0xff0d, 0, 0xff0d, 0, 0, 0, 0},
	108: {0xfe03, 0, 0xfe03, 0, 0, 0, 0},
}

func flatten(first, last xproto.Keycode, per int, m map[xproto.Keycode][]xproto.Keysym) []xproto.Keysym {
	out := make([]xproto.Keysym, 0, int(last-first+1)*per)
	for kc := int(first); kc <= int(last); kc++ {
		row := make([]xproto.Keysym, per)
		copy(row, m[xproto.Keycode(kc)])
		out = append(out, row...)
	}
	return out
}

// TestX11TableLevels checks X11Keymap's reading of the core mapping for send
// --keys characters (DESIGN.md, Named destinations): levels 1 and 2 are the
// first two keysyms, levels 3 and 4 (AltGr) the fifth and sixth (the second
// pair is group 2's); a keycode is its evdev code + 8; a letter's key is
// alphabetic (Caps Lock shifts it), another is not.
func TestX11TableLevels(t *testing.T) {
	tb := x11Table(8, 7, flatten(8, 255, 7, deCoreMapping))
	tests := []struct {
		code  keys.Code
		want  [4]uint32
		alpha bool
	}{
		{keys.KeyQ, [4]uint32{'q', 'Q', '@', 0x7d9}, true},
		{keys.KeyY, [4]uint32{'z', 'Z', 0x8fb, 0xa5}, true},
		{keys.Equal, [4]uint32{0xfe51, 0xfe50, 0xfe5b, 0xfe59}, false},
		{keys.Enter, [4]uint32{0xff0d}, false},
		{keys.AltRight, [4]uint32{0xfe03}, false},
	}
	for _, tt := range tests {
		got, alpha, ok := tb.Keysyms(tt.code)
		if !ok || got != tt.want || alpha != tt.alpha {
			t.Errorf("%v: %x alpha %v (ok %v), want %x alpha %v", tt.code, got, alpha, ok, tt.want, tt.alpha)
		}
	}
	if _, _, ok := tb.Keysyms(keys.KeyA); ok {
		t.Errorf("KeyA, whose keycode has no keysyms, is in the table")
	}
}

// FuzzX11Table: any core mapping (keysyms per keycode, first keycode,
// keysyms) the X server might send makes a table without panicking, and
// every key in it has a level-1 or other keysym.
func FuzzX11Table(f *testing.F) {
	f.Add(byte(8), byte(7), []byte{0x71, 0, 0, 0, 0x51, 0, 0, 0})
	f.Add(byte(0), byte(0), []byte{})
	f.Add(byte(8), byte(1), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, first, per byte, raw []byte) {
		syms := make([]xproto.Keysym, len(raw)/4)
		for i := range syms {
			syms[i] = xproto.Keysym(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		tb := x11Table(xproto.Keycode(first), int(per), syms)
		for c, lv := range tb.Syms {
			if lv == [4]uint32{} {
				t.Fatalf("%v has no keysym but is in the table", c)
			}
		}
	})
}

// TestFollowX11KeymapFollowsSetxkbmap checks FollowX11Keymap on an Xvfb:
// setxkbmap de, then de again, then fr, gives two new tables (de's KeyY z,
// then fr's KeyQ a), none for the layout set again, and the follower ends
// with ctx, then with ErrNoX11 once the server goes away.
func TestFollowX11KeymapFollowsSetxkbmap(t *testing.T) {
	if _, err := exec.LookPath("setxkbmap"); err != nil {
		t.Skip("needs setxkbmap (apt-get install x11-xkb-utils)")
	}
	display, stopX := xvfbtest.StartStoppable(t)
	t.Setenv("DISPLAY", display)
	setxkbmap := func(layout string) {
		t.Helper()
		if out, err := exec.Command("setxkbmap", layout).CombinedOutput(); err != nil {
			t.Fatalf("setxkbmap %s: %v %s", layout, err, out)
		}
	}
	setxkbmap("us")
	was, err := X11Keymap(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	follow := func(ctx context.Context) (<-chan *charmode.Table, <-chan error) {
		tables, done := make(chan *charmode.Table, 8), make(chan error, 1)
		go func() { done <- FollowX11Keymap(ctx, was, func(t *charmode.Table) { tables <- t }) }()
		return tables, done
	}
	sym := func(tb *charmode.Table, c keys.Code) uint32 { return tb.Syms[c][0] }
	ctx, cancel := context.WithCancel(t.Context())
	tables, done := follow(ctx)
	for _, step := range []struct {
		layouts []string
		key     keys.Code
		want    uint32
	}{{[]string{"de"}, keys.KeyY, 'z'}, {[]string{"de", "fr"}, keys.KeyQ, 'a'}} {
		for _, l := range step.layouts {
			setxkbmap(l)
		}
		select {
		case tb := <-tables:
			if got := sym(tb, step.key); got != step.want {
				t.Errorf("after setxkbmap %v: %v gives %#x, want %q", step.layouts, step.key, got, rune(step.want))
			}
		case err := <-done:
			t.Fatalf("FollowX11Keymap ended: %v", err)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("FollowX11Keymap returned %v once ctx was done, want context.Canceled", err)
	}
	if len(tables) != 0 {
		t.Errorf("%d more tables than layout changes", len(tables))
	}
	_, done = follow(t.Context())
	stopX()
	if err := <-done; !errors.Is(err, ErrNoX11) {
		t.Errorf("FollowX11Keymap returned %v once the X server went away, want ErrNoX11", err)
	}
}

// TestRulesLayout checks the reading of _XKB_RULES_NAMES, which doctor
// names the X keymap's layout by: the layout field, each group's variant
// in parentheses, nothing for a value that names no layout.
func TestRulesLayout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  string
	}{
		{"setxkbmap de", "evdev\x00pc105\x00de\x00\x00\x00", "de"},
		{"a variant", "evdev\x00pc105\x00fr\x00bepo\x00\x00", "fr(bepo)"},
		{"two groups, a variant for the second", "evdev\x00pc105\x00us,de\x00,nodeadkeys\x00grp:alt_shift_toggle\x00", "us,de(nodeadkeys)"},
		{"more variants than layouts", "evdev\x00pc105\x00de\x00nodeadkeys,intl\x00", "de(nodeadkeys)"},
		{"no layout field", "evdev\x00pc105\x00", ""},
		{"an empty layout", "evdev\x00pc105\x00\x00\x00", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rulesLayout([]byte(tc.value)); got != tc.want {
				t.Errorf("rulesLayout(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

// FuzzRulesLayout: any property value the X server holds is read without
// a panic, into a layout with no NUL in it.
func FuzzRulesLayout(f *testing.F) {
	f.Add([]byte("evdev\x00pc105\x00us,de\x00,nodeadkeys\x00grp:alt_shift_toggle\x00"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if l := rulesLayout(v); strings.Contains(l, "\x00") {
			t.Errorf("rulesLayout(%q) = %q, with a NUL", v, l)
		}
	})
}
