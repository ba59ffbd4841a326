package capture

import (
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

func TestEvdevToHID(t *testing.T) {
	for ev, want := range map[uint16]keys.Code{30: keys.KeyA, 42: keys.ShiftLeft, 29: keys.ControlLeft, 125: keys.MetaLeft, 28: keys.Enter, 103: keys.ArrowUp, 43: keys.Backslash} {
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
