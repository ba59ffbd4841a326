package capture

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/keys"
)

func TestEvdevToHID(t *testing.T) {
	for ev, want := range map[uint16]keys.Code{30: keys.KeyA, 42: keys.ShiftLeft, 29: keys.ControlLeft, 125: keys.MetaLeft, 28: keys.Enter, 103: keys.ArrowUp, 43: keys.Backslash, 84: keys.EvdevBase + 84, 182: keys.EvdevBase + 182} {
		if got, ok := EvdevToHID(ev); !ok || got != want {
			t.Errorf("EvdevToHID(%d) = %v, %v; want %v", ev, got, ok, want)
		}
	}
	if _, ok := EvdevToHID(0); ok {
		t.Error("evdev 0 (KEY_RESERVED) maps to a key")
	}
	// Every key of the US layout round-trips through its evdev code.
	for r := rune(0x20); r <= 0x7e; r++ {
		c, _, _ := keys.ForRune(r)
		info, _ := keys.Lookup(c)
		if got, ok := EvdevToHID(info.Evdev); !ok || got != c {
			t.Errorf("%q: %v -> evdev %d -> %v", r, c, info.Evdev, got)
		}
	}
}

// TestX11RelaysEveryKeycode (PROTOCOL.md §3.1): the X11 source relays a
// press and a release of every X keycode the evdev rules give a key (9 to
// 255) as the key whose evdev code is the keycode - 8: 92, XKB's <LVL3>
// (ISO_Level3_Shift), as the evdev-only key 84, not as AltRight (108); Print
// (218), Redo (190) and Mode_switch (203) as themselves. Keycode 8 (evdev 0)
// is no key: not sent, and said so (press and release).
func TestX11RelaysEveryKeycode(t *testing.T) {
	var evs []x11Event
	for kc := 8; kc <= 255; kc++ {
		evs = append(evs, x11Event{keycode: xproto.Keycode(kc), down: true}, x11Event{keycode: xproto.Keycode(kc)})
	}
	end := errors.New("end")
	next := func() x11Event {
		if len(evs) == 0 {
			return x11Event{err: end}
		}
		ev := evs[0]
		evs = evs[1:]
		return ev
	}
	type sent struct {
		key  keys.Key
		down bool
	}
	var got []sent
	emit := func(k keys.Key, down bool) error {
		got = append(got, sent{k, down})
		return nil
	}
	var status strings.Builder
	x := &X11{Status: &status}
	if err := x.relay(context.Background(), next, emit, nil); err != end {
		t.Fatalf("relay = %v", err)
	}
	if len(got) != 2*247 {
		t.Errorf("%d events sent for 247 keycodes pressed and released, want %d", len(got), 2*247)
	}
	for i := 0; i+1 < len(got); i += 2 {
		down, up := got[i], got[i+1]
		c, _ := down.key.Code()
		info, _ := keys.Lookup(c)
		kc := 9 + i/2
		if !down.down || up.down || up.key != down.key || int(info.Evdev)+8 != kc {
			t.Errorf("keycode %d relayed as %v %v, %v %v (evdev %d)", kc, down.key, down.down, up.key, up.down, info.Evdev)
		}
	}
	for kc, want := range map[int]keys.Code{92: keys.EvdevBase + 84, 108: keys.AltRight, 218: keys.EvdevBase + 210, 190: keys.EvdevBase + 182, 203: keys.EvdevBase + 195} {
		if i := 2 * (kc - 9); i >= len(got) || got[i].key != keys.Key(want) {
			t.Errorf("keycode %d not relayed as %v", kc, want)
		}
	}
	s := status.String()
	if n := strings.Count(s, "not sent"); n == 0 || n != strings.Count(s, "X keycode 8 has no key of its own") {
		t.Errorf("status %q, want keycode 8 alone not sent", s)
	}
}
