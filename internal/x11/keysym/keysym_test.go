package keysym

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestKnownKeysyms: the keysyms the German and French layouts use for the
// characters the layout tests type, and Unicode keysyms.
func TestKnownKeysyms(t *testing.T) {
	for _, tc := range []struct {
		ks   uint32
		r    rune
		name string
	}{
		{0x0061, 'a', "a"},
		{0x0040, '@', "at"},
		{0x00df, 'ß', "ssharp"},
		{0x00fc, 'ü', "udiaeresis"},
		{0x00e9, 'é', "eacute"},
		{0x20ac, '€', "EuroSign"},
		{0x07d9, 'Ω', "Greek_OMEGA"},
		{0x08fb, '←', "leftarrow"},
		{0x01001e9e, 'ẞ', "U1E9E"},
		{0x01002032, '′', "U2032"},
	} {
		if r, ok := ToRune(tc.ks); !ok || r != tc.r {
			t.Errorf("ToRune(%#x %s) = %q, %v; want %q", tc.ks, tc.name, r, ok, tc.r)
		}
	}
	for _, r := range []rune{'a', '@', 'ß', 'é', '€', 'Ω', '←', 'ẞ', '😀'} {
		if got, ok := ToRune(FromRune(r)); !ok || got != r {
			t.Errorf("ToRune(FromRune(%q) = %#x) = %q, %v", r, FromRune(r), got, ok)
		}
	}
	if FromRune('€') != 0x20ac || FromRune('é') != 0xe9 || FromRune('😀') != 0x0101f600 {
		t.Errorf("FromRune picks %#x for €, %#x for é, %#x for 😀; want the legacy/Latin-1 keysym where one exists", FromRune('€'), FromRune('é'), FromRune('😀'))
	}
}

// TestKeysOfNoCharacter: keysyms of keys that are not characters type none,
// so a character is never typed with Return, a keypad key or a dead key.
func TestKeysOfNoCharacter(t *testing.T) {
	for _, ks := range []uint32{0, 0x0d, 0x7f, 0x9f, 0xff0d /* Return */, 0xff08 /* BackSpace */, 0xffb1 /* KP_1 */, 0xfe52 /* dead_circumflex */, 0xfe03 /* ISO_Level3_Shift */, 0xffe1 /* Shift_L */, 0x0100d800 /* a surrogate */, 0x01000041 /* Unicode keysym below U+0100 */} {
		if r, ok := ToRune(ks); ok {
			t.Errorf("ToRune(%#x) = %q, want no character", ks, r)
		}
	}
}

// TestTableIsGenerated: table_gen.go is what gen.go makes of this machine's
// keysymdef.h (skipped where x11proto-dev is not installed).
func TestTableIsGenerated(t *testing.T) {
	const header = "/usr/include/X11/keysymdef.h"
	if _, err := os.Stat(header); err != nil {
		t.Skip("no keysymdef.h here (apt-get install x11proto-dev)")
	}
	want, err := os.ReadFile("table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/table_gen.go"
	cmd := exec.Command("go", "run", "gen.go", "-in", header, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, b)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Error("table_gen.go is stale: run go generate ./internal/x11/keysym")
	}
}

// TestParseNames: the names XKB symbols files and the Compose file use
// for keysyms (keysymdef.h's, Unicode "Uxxxx", hex numbers) give the
// keysym X gives them.
func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ks   uint32
		ok   bool
	}{
		{"a", 0x61, true},
		{"1", 0x31, true},
		{"EuroSign", 0x20ac, true},
		{"dead_acute", 0xfe51, true},
		{"ISO_Level3_Shift", 0xfe03, true},
		{"udiaeresis", 0xfc, true},
		{"U20AC", 0x010020ac, true},
		{"U00E9", 0xe9, true}, // a Latin-1 character is its Latin-1 keysym
		{"0x1000263a", 0x1000263a, true},
		{"XF86AudioMute", 0, false},
		{"U", 0x55, true}, // the letter, not a Unicode keysym
		{"Uzzzz", 0, false},
		{"", 0, false},
	} {
		ks, ok := Parse(tc.name)
		if ks != tc.ks || ok != tc.ok {
			t.Errorf("Parse(%q) = %#x, %v; want %#x, %v", tc.name, ks, ok, tc.ks, tc.ok)
		}
	}
}
