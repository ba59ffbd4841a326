package capture

import (
	"fmt"
	"testing"

	"github.com/eiannone/keyboard"
)

func TestTerminalKey(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		k    keyboard.Key
		want string
	}{
		{'a', 0, "['a']"},
		{'A', 0, "['A']"},
		{'?', 0, "['?']"},
		{0, keyboard.KeySpace, "[Space]"},
		{0, keyboard.KeyEnter, "[Enter]"},
		{0, keyboard.KeyTab, "[Tab]"},
		{0, keyboard.KeyBackspace2, "[Backspace]"},
		{0, keyboard.KeyBackspace, "[Backspace]"},
		{0, keyboard.KeyEsc, "[Escape]"},
		{0, keyboard.KeyArrowUp, "[ArrowUp]"},
		{0, keyboard.KeyPgdn, "[PageDown]"},
		{0, keyboard.KeyF12, "[F12]"},
		{0, keyboard.KeyCtrlA, "[ControlLeft 'a']"},
		{0, keyboard.KeyCtrlC, "[ControlLeft 'c']"},
		{0, keyboard.KeyCtrlZ, "[ControlLeft 'z']"},
		{0, keyboard.KeyCtrlSpace, "[ControlLeft Space]"},
		{0, keyboard.KeyCtrlBackslash, "[ControlLeft Backslash]"},
		{'é', 0, "['é']"},
		{0x7f, 0, "[]"},
	} {
		got, _ := TerminalKey(tc.r, tc.k)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("TerminalKey(%q, %#x) = %v, want %s", tc.r, uint16(tc.k), got, tc.want)
		}
	}
	if _, note := TerminalKey(0x7f, 0); note == "" {
		t.Error("no note for a control character")
	}
}
