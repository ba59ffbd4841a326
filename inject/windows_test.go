package inject

import (
	"slices"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// TestWindowsInputs: what SendInput is given for each kind of key event
// (README "Windows"): physical keys by scan code with wVk from the layout,
// extended keys flagged, Pause and Num Lock by virtual key, characters as
// UTF-16 units with KEYEVENTF_UNICODE.
func TestWindowsInputs(t *testing.T) {
	vkOf := func(scan uint16) uint16 {
		return map[uint16]uint16{0x1e: 'A', 0xe01d: 0xa3, 0xe048: 0x26, 0x48: 0x68, 0x1d: 0xa2}[scan]
	}
	const sc, ext, up, uni = keyeventfScanCode, keyeventfExtendedKey, keyeventfKeyUp, keyeventfUnicode
	for _, tc := range []struct {
		name string
		ev   Event
		want []winInput
		ok   bool
	}{
		{"letter down", Event{Key: keys.Key(keys.KeyA), Down: true}, []winInput{{'A', 0x1e, sc}}, true},
		{"letter up", Event{Key: keys.Key(keys.KeyA)}, []winInput{{'A', 0x1e, sc | up}}, true},
		{"right control extended", Event{Key: keys.Key(keys.ControlRight), Down: true}, []winInput{{0xa3, 0x1d, sc | ext}}, true},
		{"left control", Event{Key: keys.Key(keys.ControlLeft)}, []winInput{{0xa2, 0x1d, sc | up}}, true},
		{"arrow", Event{Key: keys.Key(keys.ArrowUp), Down: true}, []winInput{{0x26, 0x48, sc | ext}}, true},
		{"keypad 8", Event{Key: keys.Key(keys.Numpad8), Down: true}, []winInput{{0x68, 0x48, sc}}, true},
		{"no layout VK: the table's", Event{Key: keys.Key(keys.KeyB), Down: true}, []winInput{{'B', 0x30, sc}}, true},
		{"Pause by VK", Event{Key: keys.Key(keys.Pause), Down: true}, []winInput{{vkPause, 0x45, 0}}, true},
		{"Num Lock by VK", Event{Key: keys.Key(keys.NumLock)}, []winInput{{vkNumLock, 0x45, ext | up}}, true},
		{"character", Event{Key: keys.Char('é'), Down: true}, []winInput{{0, 0xe9, uni}}, true},
		{"character up", Event{Key: keys.Char('@')}, []winInput{{0, '@', uni | up}}, true},
		{"emoji: a surrogate pair", Event{Key: keys.Char('😀'), Down: true}, []winInput{{0, 0xd83d, uni}, {0, 0xde00, uni}}, true},
		{"no scan code", Event{Key: keys.Key(0x03), Down: true}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := windowsInputs(tc.ev, vkOf)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("windowsInputs(%v down %v) = %+v, %v; want %+v, %v", tc.ev.Key, tc.ev.Down, got, ok, tc.want, tc.ok)
			}
		})
	}
}
