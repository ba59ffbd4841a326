package scangen

import (
	"slices"
	"strings"
	"testing"
)

const header = `"Linux Name","USB Keycodes","AT set1 keycode","HTML code"` + "\n"

// TestRead: one entry per usage with a set 1 code, the named row's name,
// Windows's own codes for Pause, Num Lock and PrintScreen (package doc).
func TestRead(t *testing.T) {
	csv := header +
		"KEY_RESERVED,,,\n" + // no usage: skipped
		"KEY_FOO,5,,\n" + // no set 1 code: skipped
		"KEY_A,4,0x1e,KeyA\n" +
		"KEY_A,4,0x1e,KeyA\n" + // the same key for another keysym
		"KEY_RIGHTCTRL,228,0xe01d,ControlRight\n" +
		"KEY_PAUSE,72,0xe046,Pause\n" +
		"KEY_NUMLOCK,83,0x45,NumLock\n" +
		"KEY_SYSRQ,70,0x54,PrintScreen\n"
	got, err := Read(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{4, "KeyA", 0x1e}, {70, "PrintScreen", 0xe037}, {72, "Pause", 0x45}, {83, "NumLock", 0xe045}, {228, "ControlRight", 0xe01d}}
	if !slices.Equal(got, want) {
		t.Errorf("Read = %v, want %v", got, want)
	}
}

// TestReadRefuses: a code that is no set 1 make code, a usage out of
// range, and one usage with two codes are errors naming the line.
func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct{ name, rows, want string }{
		{"two bytes not E0", "KEY_X,4,0xe11d,KeyA\n", "line 2: set 1 code"},
		{"zero", "KEY_X,4,0x00,KeyA\n", "line 2: set 1 code"},
		{"not a number", "KEY_X,4,one,KeyA\n", "line 2: set 1 code"},
		{"usage zero", "KEY_X,0,0x1e,KeyA\n", "line 2: usage"},
		{"two codes", "KEY_A,4,0x1e,KeyA\nKEY_A,4,0x1f,KeyA\n", "line 3: usage 0x04 has set 1 codes"},
		{"column missing", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := header + tc.rows
			if tc.name == "column missing" {
				in = `"USB Keycodes","HTML code"` + "\n4,KeyA\n"
				tc.want = `column "AT set1 keycode" missing`
			}
			_, err := Read(strings.NewReader(in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
