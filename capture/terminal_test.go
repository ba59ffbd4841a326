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
		{'a', 0, "[KeyA]"},
		{'A', 0, "[ShiftLeft KeyA]"},
		{'?', 0, "[ShiftLeft Slash]"},
		{0, keyboard.KeySpace, "[Space]"},
		{0, keyboard.KeyEnter, "[Enter]"},
		{0, keyboard.KeyTab, "[Tab]"},
		{0, keyboard.KeyBackspace2, "[Backspace]"},
		{0, keyboard.KeyBackspace, "[Backspace]"},
		{0, keyboard.KeyEsc, "[Escape]"},
		{0, keyboard.KeyArrowUp, "[ArrowUp]"},
		{0, keyboard.KeyPgdn, "[PageDown]"},
		{0, keyboard.KeyF12, "[F12]"},
		{0, keyboard.KeyCtrlA, "[ControlLeft KeyA]"},
		{0, keyboard.KeyCtrlC, "[ControlLeft KeyC]"},
		{0, keyboard.KeyCtrlZ, "[ControlLeft KeyZ]"},
		{0, keyboard.KeyCtrlSpace, "[ControlLeft Space]"},
		{0, keyboard.KeyCtrlBackslash, "[ControlLeft Backslash]"},
		{'é', 0, "[]"},
	} {
		got, _ := TerminalKey(tc.r, tc.k)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("TerminalKey(%q, %#x) = %v, want %s", tc.r, uint16(tc.k), got, tc.want)
		}
	}
	if _, note := TerminalKey('é', 0); note == "" {
		t.Error("no note for a character the US layout cannot type")
	}
}
