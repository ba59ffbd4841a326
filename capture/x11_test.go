package capture

import (
	"testing"

	"github.com/jezek/xgb/xproto"
)

// TestGrabbedBy checks how the X11 source tells, in local use, which
// hotkey's passive grab took a press (DESIGN.md, Named destinations: a
// destination's hotkey targets it, the toggle hotkey resumes relaying): the
// grab of the press's exact modifiers (Caps Lock or Num Lock among them),
// else one of any modifiers; pointer buttons in the state do not matter.
func TestGrabbedBy(t *testing.T) {
	const ctrl, numLock = xproto.ModMaskControl, xproto.ModMask2
	grabs := []keyGrab{
		{key: 78, mods: xproto.ModMaskAny, to: -1}, // ScrollLock alone: the toggle
		{key: 10, mods: ctrl, to: 0},               // ControlRight+Digit1
		{key: 10, mods: ctrl | numLock, to: 0},
		{key: 11, mods: ctrl, to: 2}, // ControlRight+Digit2
		{key: 11, mods: ctrl | numLock, to: 2},
	}
	for _, tc := range []struct {
		name  string
		kc    xproto.Keycode
		state uint16
		want  int
	}{
		{"the toggle hotkey, any modifiers", 78, xproto.ModMaskShift, -1},
		{"a destination's hotkey", 11, ctrl, 2},
		{"with Num Lock on", 10, ctrl | numLock, 0},
		{"a pointer button held", 11, ctrl | xproto.KeyButMaskButton1, 2},
		{"a key no grab has", 12, ctrl, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grabbedBy(grabs, tc.kc, tc.state); got != tc.want {
				t.Errorf("grabbedBy(keycode %d, state %#x) = %d, want %d", tc.kc, tc.state, got, tc.want)
			}
		})
	}
}
