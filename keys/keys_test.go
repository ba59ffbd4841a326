package keys

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

func TestParseStringRoundTrip(t *testing.T) {
	named := 0
	for _, e := range All() {
		if e.Name == "" {
			continue
		}
		named++
		for _, s := range []string{e.Name, strings.ToLower(e.Name), strings.ToUpper(e.Name)} {
			c, err := Parse(s)
			if err != nil || c != e.Code {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, c, err, e.Code)
			}
		}
		if e.Code.String() != e.Name {
			t.Errorf("%#x.String() = %q, want %q", uint16(e.Code), e.Code.String(), e.Name)
		}
	}
	if named < 140 {
		t.Errorf("only %d named keys", named)
	}
}

func TestKnownValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		code Code
	}{{"KeyA", 0x04}, {"Enter", 0x28}, {"ShiftLeft", 0xE1}, {"ArrowUp", 0x52}, {"F5", 0x3E}, {"Backslash", 0x31}, {"ControlRight", 0xE4}} {
		if c, err := Parse(tc.name); err != nil || c != tc.code {
			t.Errorf("Parse(%q) = %#x, %v; want %#x", tc.name, uint16(c), err, uint16(tc.code))
		}
	}
	a, ok := Lookup(KeyA)
	if !ok || a.Evdev != 30 || a.EvdevName != "KEY_A" || a.X11Keysym != 0x61 || a.Win32VK != 0x41 || a.MacOS != 0 || a.XKB != "AC01" {
		t.Errorf("Lookup(KeyA) = %+v", a)
	}
	if m, _ := Lookup(AudioVolumeMute); m.Evdev != 113 {
		t.Errorf("AudioVolumeMute evdev = %d, want 113 (KEY_MUTE)", m.Evdev)
	}
}

func TestParseHexAndErrors(t *testing.T) {
	if c, err := Parse("0x04"); err != nil || c != KeyA {
		t.Errorf("Parse(0x04) = %v, %v", c, err)
	}
	// 0x32 (the ISO key also called Backslash) has no name of its own.
	if s := Code(0x32).String(); s != "0x32" {
		t.Errorf("Code(0x32).String() = %q", s)
	}
	if c, err := Parse("0x32"); err != nil || c != 0x32 {
		t.Errorf("Parse(0x32) = %v, %v", c, err)
	}
	for _, s := range []string{"", "Foo", "0x", "0x0", "0x1FFFF", "0xZZ", "Key A", "0x03"} {
		if _, err := Parse(s); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("Parse(%q) error = %v, want ErrUnknownKey", s, err)
		}
	}
	_, err := Parse("Foo")
	if !strings.Contains(err.Error(), `"Foo"`) || !strings.Contains(err.Error(), "KeyA") {
		t.Errorf("error does not name the key and an example: %v", err)
	}
}

func TestForRuneUSLayout(t *testing.T) {
	seen := map[[2]int]rune{}
	for r := rune(0x20); r <= 0x7E; r++ {
		c, shift, ok := ForRune(r)
		if !ok {
			t.Errorf("no key for %q", r)
			continue
		}
		k := [2]int{int(c), 0}
		if shift {
			k[1] = 1
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%q and %q both map to %v shift=%v", r, other, c, shift)
		}
		seen[k] = r
	}
	for r, want := range map[rune]struct {
		c     Code
		shift bool
	}{'a': {KeyA, false}, 'A': {KeyA, true}, '!': {Digit1, true}, '"': {Quote, true}, '~': {Backquote, true}, '\n': {Enter, false}, '\t': {Tab, false}, ' ': {Space, false}} {
		c, shift, _ := ForRune(r)
		if c != want.c || shift != want.shift {
			t.Errorf("ForRune(%q) = %v %v, want %v %v", r, c, shift, want.c, want.shift)
		}
	}
	if _, _, ok := ForRune('é'); ok {
		t.Error("ForRune('é') found a key on the US layout")
	}
}

// TestTableIsGenerated: the committed table is what the generator makes from
// the CSV (when the CSV is beside the repository, as in CI).
func TestTableIsGenerated(t *testing.T) {
	csv := filepath.Join("..", "..", "shared", "data", "keycodemapdb", "keymaps.csv")
	if _, err := os.Stat(csv); err != nil {
		t.Skipf("keycodemapdb not beside the repository: %v", err)
	}
	want, err := keygen.Generate(csv, filepath.Join(filepath.Dir(csv), "LICENSE.BSD"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("table_gen.go is stale: run go generate ./keys")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"KeyA", "shiftleft", "0x04", "0x32", "", "Foo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrUnknownKey", s, err)
			}
			return
		}
		if c == 0 {
			t.Fatalf("Parse(%q) = 0 without error", s)
		}
		if c2, err := Parse(c.String()); err != nil || c2 != c {
			t.Fatalf("Parse(%q) = %v, but Parse(String()) = %v, %v", s, c, c2, err)
		}
	})
}
