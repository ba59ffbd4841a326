package capture

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// evdev key codes used below (linux/input-event-codes.h).
const (
	evA, evB, evShift, evCtrlL, evCtrlR = 30, 48, 42, 29, 97
	evCaps, evNum, evScroll             = 58, 69, 70
	evBtnLeft                           = 0x110
)

// noUsage is an evdev key code (not a button) with no HID usage.
var noUsage = func() uint16 {
	for c := uint16(1); c < 0x2ff; c++ {
		if _, ok := EvdevToHID(c); !ok && !evdevButton(c) {
			return c
		}
	}
	panic("every key code has a HID usage")
}()

// decodeTrace runs events through a fresh decoder and writes what it made
// of them: "+KeyA" a press, "-KeyA" a release, "?N" an unknown key, "led
// caps on", "resync".
func decodeTrace(d *evdevDecoder, evs ...evdevEvent) string {
	var out []string
	for _, ev := range evs {
		r := d.Event(ev)
		switch r.Action {
		case evdevPress:
			sign := "-"
			if r.Key.Down {
				sign = "+"
			}
			out = append(out, sign+keys.Key(r.Key.Code).String())
		case evdevUnknown:
			out = append(out, fmt.Sprintf("?%d", r.Key.Evdev))
		case evdevLED:
			out = append(out, fmt.Sprintf("led %v %v", (r.Lock|keys.LocksKnown).String(), r.On))
		case evdevResync:
			out = append(out, "resync")
		}
	}
	return strings.Join(out, " ")
}

func key(code uint16, v int32) evdevEvent { return evdevEvent{evKey, code, v} }

var syn = evdevEvent{evSyn, synReport, 0}

// TestEvdevDecoder (Evdev's doc): true downs and ups with kernel auto-repeat
// dropped at the source; buttons are not keys; a key with no HID usage is
// reported, not sent; after SYN_DROPPED the events up to the next SYN_REPORT
// are stale and a resync is asked for; DESIGN invariant 2 (never an up
// without a down, never a second down).
func TestEvdevDecoder(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []evdevEvent
		want string
	}{
		{"press and release", []evdevEvent{key(evA, 1), syn, key(evA, 0), syn}, "+KeyA -KeyA"},
		{"auto-repeat dropped", []evdevEvent{key(evA, 1), key(evA, 2), key(evA, 2), key(evA, 0)}, "+KeyA -KeyA"},
		{"shifted", []evdevEvent{key(evShift, 1), key(evB, 1), key(evB, 0), key(evShift, 0)}, "+ShiftLeft +KeyB -KeyB -ShiftLeft"},
		{"a release of a key never pressed (held when opened)", []evdevEvent{key(evA, 0), key(evB, 1)}, "+KeyB"},
		{"a second press of a held key", []evdevEvent{key(evA, 1), key(evA, 1), key(evA, 0), key(evA, 0)}, "+KeyA -KeyA"},
		{"buttons ignored", []evdevEvent{key(evBtnLeft, 1), key(evBtnLeft, 0), key(0, 1)}, ""},
		{"no HID usage", []evdevEvent{key(noUsage, 1), key(noUsage, 0)}, fmt.Sprintf("?%d", noUsage)},
		{"any nonzero value is down, as the kernel reads it", []evdevEvent{key(evA, -5), key(evA, 0)}, "+KeyA -KeyA"},
		{"LEDs", []evdevEvent{{evLED, ledCapsLock, 1}, {evLED, ledNumLock, 0}, {evLED, 2, 1}}, "led caps true led num false"},
		{"dropped", []evdevEvent{key(evA, 1), {evSyn, synDropped, 0}, key(evA, 0), key(evB, 1), syn, key(evB, 0)}, "+KeyA resync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d evdevDecoder
			if got := decodeTrace(&d, tc.evs...); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEvdevDecoderSync: after dropped events, the key state read from the
// kernel (EVIOCGKEY) is made the receiver's: keys released meanwhile are
// released (last pressed first), keys pressed meanwhile pressed (DESIGN
// invariant 1: balanced at rest; nothing stays stuck).
func TestEvdevDecoderSync(t *testing.T) {
	var d evdevDecoder
	decodeTrace(&d, key(evShift, 1), key(evA, 1), key(evCaps, 1), evdevEvent{evSyn, synDropped, 0})
	got := d.Sync([]uint16{evShift, evB, evB, evBtnLeft, noUsage})
	want := []evdevKey{{evCaps, keys.CapsLock, false}, {evA, keys.KeyA, false}, {evB, keys.KeyB, true}}
	if !slices.Equal(got, want) {
		t.Errorf("Sync = %v, want %v", got, want)
	}
	if tr := decodeTrace(&d, key(evA, 1), key(evB, 0), key(evShift, 0)); tr != "+KeyA -KeyB -ShiftLeft" {
		t.Errorf("after Sync: %q", tr)
	}
	// An unreadable state (nil) releases everything.
	decodeTrace(&d, key(evCtrlL, 1))
	if got := d.Sync(nil); !slices.Equal(got, []evdevKey{{evCtrlL, keys.ControlLeft, false}, {evA, keys.KeyA, false}}) {
		t.Errorf("Sync(nil) = %v", got)
	}
	decodeTrace(&d, key(evA, 1), key(evB, 1))
	if got := d.Release(); !slices.Equal(got, []evdevKey{{evB, keys.KeyB, false}, {evA, keys.KeyA, false}}) {
		t.Errorf("Release = %v", got)
	}
	if got := d.Release(); len(got) != 0 {
		t.Errorf("a second Release = %v", got)
	}
}

// FuzzEvdevDecoder: any event stream, with resyncs from any key state,
// keeps DESIGN invariant 2 (a release only for a key relayed down, no
// second press) and Sync leaves relayed exactly the keys of the state it
// was given that have a HID usage. The input is 8-byte records: type,
// code, value (and, for a resync, the next 8 bytes are a key state).
func FuzzEvdevDecoder(f *testing.F) {
	rec := func(typ, code uint16, v int32) []byte {
		b := binary.LittleEndian.AppendUint16(nil, typ)
		b = binary.LittleEndian.AppendUint16(b, code)
		return binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	f.Add(slices.Concat(rec(evKey, evA, 1), rec(evKey, evA, 2), rec(evKey, evA, 0)))
	f.Add(slices.Concat(rec(evKey, evA, 1), rec(evSyn, synDropped, 0), rec(evKey, evA, 0), rec(evSyn, synReport, 0), rec(evKey, evB, 0x30), rec(evKey, evB, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d evdevDecoder
		down := map[uint16]bool{}
		for len(b) >= 8 {
			ev := evdevEvent{binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]) % 0x300, int32(binary.LittleEndian.Uint32(b[4:]))}
			b = b[8:]
			r := d.Event(ev)
			switch r.Action {
			case evdevPress:
				if ev.Value == 2 {
					t.Fatalf("auto-repeat %v relayed", ev)
				}
				if down[r.Key.Evdev] == r.Key.Down {
					t.Fatalf("%v relayed with the key already in that state", r.Key)
				}
				if c, ok := evdevRelayable(r.Key.Evdev); !ok || c != r.Key.Code {
					t.Fatalf("%v relayed: not a key with that HID usage", r.Key)
				}
				down[r.Key.Evdev] = r.Key.Down
			case evdevResync:
				var state []uint16
				for i := 0; i+2 <= min(len(b), 8); i += 2 {
					state = append(state, binary.LittleEndian.Uint16(b[i:])%0x300)
				}
				for _, k := range d.Sync(state) {
					if down[k.Evdev] == k.Down {
						t.Fatalf("Sync relayed %v with the key already in that state", k)
					}
					down[k.Evdev] = k.Down
				}
				for c, isDown := range down {
					_, ok := evdevRelayable(c)
					if isDown != (ok && slices.Contains(state, c)) {
						t.Fatalf("after Sync(%v) key %d down=%v", state, c, isDown)
					}
				}
			}
		}
		for _, k := range d.Release() {
			if !down[k.Evdev] || k.Down {
				t.Fatalf("Release gave %v for a key not down", k)
			}
			down[k.Evdev] = false
		}
		for c, isDown := range down {
			if isDown {
				t.Fatalf("key %d still down after Release", c)
			}
		}
	})
}
