package hidkbd

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/keys"
)

// step is a key going down or up.
type step struct {
	code keys.Code
	down bool
}

func dn(c keys.Code) step { return step{c, true} }
func up(c keys.Code) step { return step{c, false} }

func apply(t testing.TB, k *Keyboard, s step) {
	t.Helper()
	if !s.down {
		k.Release(s.code)
		return
	}
	if err := k.Press(s.code); err != nil {
		t.Fatalf("Press(%v): %v", s.code, err)
	}
}

// Eight letter keys, for the rollover cases.
var k1, k2, k3, k4, k5, k6, k7, k8 = keys.KeyA, keys.KeyB, keys.KeyC, keys.KeyD, keys.KeyE, keys.KeyF, keys.KeyG, keys.KeyH

// TestReportSaysWhatIsHeld: the input report's layout (the package doc, HID
// 1.11 appendix B.1): the modifier byte, a zero, the keys in the order they
// went down; ErrorRollOver in every slot beyond six keys (appendix C), the
// modifiers still right; the held keys listed again when the count drops.
func TestReportSaysWhatIsHeld(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"nothing held", nil, "00 00 00 00 00 00 00 00"},
		{"one key", []step{dn(keys.KeyA)}, "00 00 04 00 00 00 00 00"},
		{"pressed and released", []step{dn(keys.KeyA), up(keys.KeyA)}, "00 00 00 00 00 00 00 00"},
		{"shift and a key", []step{dn(keys.ShiftLeft), dn(keys.KeyB)}, "02 00 05 00 00 00 00 00"},
		{"every modifier", []step{dn(keys.ControlLeft), dn(keys.ShiftLeft), dn(keys.AltLeft), dn(keys.MetaLeft), dn(keys.ControlRight), dn(keys.ShiftRight), dn(keys.AltRight), dn(keys.MetaRight)}, "ff 00 00 00 00 00 00 00"},
		{"AltGr", []step{dn(keys.AltRight), dn(keys.KeyQ)}, "40 00 14 00 00 00 00 00"},
		{"keys in press order", []step{dn(keys.KeyC), dn(keys.KeyA), dn(keys.Enter)}, "00 00 06 04 28 00 00 00"},
		{"a released key leaves no gap", []step{dn(keys.KeyC), dn(keys.KeyA), dn(keys.Enter), up(keys.KeyA)}, "00 00 06 28 00 00 00 00"},
		{"a second press of a held key", []step{dn(keys.KeyA), dn(keys.KeyA)}, "00 00 04 00 00 00 00 00"},
		{"releasing a key not held", []step{dn(keys.KeyA), up(keys.KeyB), up(keys.ShiftLeft)}, "00 00 04 00 00 00 00 00"},
		{"six keys", []step{dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6)}, "00 00 04 05 06 07 08 09"},
		{"seven keys: rollover", []step{dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7)}, "00 00 01 01 01 01 01 01"},
		{"rollover keeps the modifiers", []step{dn(keys.ShiftLeft), dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7), dn(k8), dn(keys.ControlRight)}, "12 00 01 01 01 01 01 01"},
		{"a modifier released in rollover", []step{dn(keys.ShiftLeft), dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7), up(keys.ShiftLeft)}, "00 00 01 01 01 01 01 01"},
		{"back to six: the keys still held", []step{dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7), dn(k8), up(k1), up(k2)}, "00 00 06 07 08 09 0a 0b"},
		{"back to six: the last two released", []step{dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7), dn(k8), up(k8), up(k7)}, "00 00 04 05 06 07 08 09"},
		{"a key pressed in rollover keeps its place", []step{dn(k1), dn(k2), dn(k3), dn(k4), dn(k5), dn(k6), dn(k7), up(k3), dn(k8), up(k1), up(k5)}, "00 00 05 07 09 0a 0b 00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k Keyboard
			for _, s := range tt.steps {
				apply(t, &k, s)
			}
			if got := k.Report().String(); got != tt.want {
				t.Errorf("report %s, want %s", got, tt.want)
			}
		})
	}
}

// TestReleaseAll: the report after ReleaseAll is all zeros, from any
// state, rollover included (recv's exit: the host sees every key up).
func TestReleaseAll(t *testing.T) {
	var k Keyboard
	for _, c := range []keys.Code{keys.ShiftLeft, k1, k2, k3, k4, k5, k6, k7, k8} {
		apply(t, &k, dn(c))
	}
	k.ReleaseAll()
	if got := k.Report(); got != (Report{}) || len(k.Held()) != 0 {
		t.Errorf("after ReleaseAll: report %v, held %v", got, k.Held())
	}
	apply(t, &k, dn(keys.KeyZ))
	if got := k.Report().String(); got != "00 00 1d 00 00 00 00 00" {
		t.Errorf("a key pressed after ReleaseAll: %s", got)
	}
}

// TestPressRefusesWhatNoReportCarries: usages 0 to 3 are "no event" and
// the error codes, and a report's slot is one byte: none of them is a key
// the keyboard can press, and pressing one changes nothing.
func TestPressRefusesWhatNoReportCarries(t *testing.T) {
	for _, c := range []keys.Code{0, ErrorRollOver, 0x02, 0x03, 0x100, 0x1FF, 0xFFFF} {
		var k Keyboard
		if err := k.Press(c); !errors.Is(err, ErrNotInReport) {
			t.Errorf("Press(0x%X) = %v, want ErrNotInReport", uint16(c), err)
		}
		if k.Report() != (Report{}) {
			t.Errorf("Press(0x%X) changed the report to %v", uint16(c), k.Report())
		}
	}
	for _, c := range []keys.Code{keys.KeyA, keys.F24, keys.MetaRight, 0xFF} {
		if !Carries(c) {
			t.Errorf("Carries(%v) = false", c)
		}
	}
}

// TestParseLEDs: the host's LED output report is one byte, Num Lock bit 0,
// Caps Lock bit 1 (HID Usage Tables, LED page); anything else is refused.
func TestParseLEDs(t *testing.T) {
	tests := []struct {
		in    []byte
		want  LEDs
		locks keys.Locks
		bad   bool
	}{
		{in: []byte{0x00}, want: 0, locks: keys.LocksKnown},
		{in: []byte{0x01}, want: LEDNumLock, locks: keys.LocksKnown | keys.LockNum},
		{in: []byte{0x02}, want: LEDCapsLock, locks: keys.LocksKnown | keys.LockCaps},
		{in: []byte{0x07}, want: LEDNumLock | LEDCapsLock | LEDScrollLock, locks: keys.LocksKnown | keys.LockNum | keys.LockCaps},
		{in: []byte{0x1f}, want: 0x1f, locks: keys.LocksKnown | keys.LockNum | keys.LockCaps},
		{in: []byte{0x20}, bad: true},
		{in: []byte{0x80}, bad: true},
		{in: nil, bad: true},
		{in: []byte{0x00, 0x02}, bad: true},
	}
	for _, tt := range tests {
		got, err := ParseLEDs(tt.in)
		if tt.bad {
			if !errors.Is(err, ErrBadLEDReport) {
				t.Errorf("ParseLEDs(% x) = %v, %v; want ErrBadLEDReport", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want || got.Locks() != tt.locks {
			t.Errorf("ParseLEDs(% x) = %v (locks %v), %v; want %v (locks %v)", tt.in, got, got.Locks(), err, tt.want, tt.locks)
		}
	}
}

// TestDescriptorIsTheBootKeyboards: the descriptor is HID 1.11 appendix
// B.1's boot keyboard but for the slots' range (0xFF, not 0x65): a host
// that parses it reads the same 8-byte input report and 1-byte output
// report this package encodes and parses.
func TestDescriptorIsTheBootKeyboards(t *testing.T) {
	boot := []byte{
		0x05, 0x01, 0x09, 0x06, 0xa1, 0x01, 0x05, 0x07, 0x19, 0xe0, 0x29, 0xe7, 0x15, 0x00, 0x25, 0x01,
		0x75, 0x01, 0x95, 0x08, 0x81, 0x02, 0x95, 0x01, 0x75, 0x08, 0x81, 0x01, 0x95, 0x05, 0x75, 0x01,
		0x05, 0x08, 0x19, 0x01, 0x29, 0x05, 0x91, 0x02, 0x95, 0x01, 0x75, 0x03, 0x91, 0x01, 0x95, 0x06,
		0x75, 0x08, 0x15, 0x00, 0x25, 0x65, 0x05, 0x07, 0x19, 0x00, 0x29, 0x65, 0x81, 0x00, 0xc0,
	}
	ours := bytes.Replace(Descriptor, []byte{0x26, 0xff, 0x00}, []byte{0x25, 0x65}, 1)
	ours = bytes.Replace(ours, []byte{0x29, 0xff}, []byte{0x29, 0x65}, 1)
	if !bytes.Equal(ours, boot) {
		t.Errorf("descriptor, with the boot range put back:\n% x\nwant\n% x", ours, boot)
	}
}

// hostView is what a host makes of the reports (Linux's hid-input, as a
// keyboard's array field): a report with ErrorRollOver in it changes no
// key, any other one says which keys are down.
type hostView struct {
	mods byte
	keys []byte
}

// read takes one report and returns the keys it released.
func (h *hostView) read(r Report) (released []keys.Code) {
	for bit := range 8 {
		if h.mods&(1<<bit) != 0 && r[offMods]&(1<<bit) == 0 {
			released = append(released, firstMod+keys.Code(bit))
		}
	}
	h.mods = r[offMods]
	if r.Rollover() {
		return released
	}
	var now []byte
	for _, b := range r[offSlots:] {
		if b != 0 {
			now = append(now, b)
		}
	}
	for _, b := range h.keys {
		if !slices.Contains(now, b) {
			released = append(released, keys.Code(b))
		}
	}
	h.keys = now
	return released
}

// TestRapidReportIsTheHeldSet: for any sequence of key downs and ups (the
// eight modifiers and ten other keys, so that rollover comes often), the
// report says exactly the held set when six or fewer non-modifier keys
// are held, and the phantom state otherwise, its modifier byte always
// right; a host reading every report never sees a key released while it
// is still held, and once the count drops back it sees exactly the held
// set (HID 1.11 appendix C).
func TestRapidReportIsTheHeldSet(t *testing.T) {
	alphabet := []keys.Code{keys.ShiftLeft, keys.ControlLeft, keys.AltRight, keys.MetaRight}
	for c := keys.KeyA; c < keys.KeyA+10; c++ {
		alphabet = append(alphabet, c)
	}
	rapid.Check(t, func(t *rapid.T) {
		var k Keyboard
		var host hostView
		held := map[keys.Code]bool{}
		for range rapid.IntRange(0, 80).Draw(t, "steps") {
			c := rapid.SampledFrom(alphabet).Draw(t, "key")
			if rapid.Bool().Draw(t, "down") {
				if err := k.Press(c); err != nil {
					t.Fatalf("Press(%v): %v", c, err)
				}
				held[c] = true
			} else {
				k.Release(c)
				delete(held, c)
			}
			r := k.Report()
			var mods byte
			var others []byte
			for c := range held {
				if bit, ok := Modifier(c); ok {
					mods |= bit
				} else {
					others = append(others, byte(c))
				}
			}
			if r[offMods] != mods || r[1] != 0 {
				t.Fatalf("held %v: report %v, want modifier byte %02x", k.Held(), r, mods)
			}
			slots := r[offSlots:]
			if len(others) > Slots {
				if !bytes.Equal(slots, bytes.Repeat([]byte{byte(ErrorRollOver)}, Slots)) {
					t.Fatalf("%d keys held: report %v, want the rollover state", len(others), r)
				}
			} else {
				got := slices.DeleteFunc(slices.Clone(slots), func(b byte) bool { return b == 0 })
				slices.Sort(got)
				slices.Sort(others)
				if !slices.Equal(got, others) || slices.Index(slots, 0) >= 0 && slices.ContainsFunc(slots[slices.Index(slots, 0):], func(b byte) bool { return b != 0 }) {
					t.Fatalf("held %v: report %v, want exactly the held keys, then zeros", k.Held(), r)
				}
			}
			for _, rel := range host.read(r) {
				if held[rel] {
					t.Fatalf("the host released %v, still held (report %v)", rel, r)
				}
			}
			if len(k.Held()) != len(held) {
				t.Fatalf("Held() = %v, want %d keys", k.Held(), len(held))
			}
		}
	})
}

// FuzzKeyboard: any sequence of presses and releases of any usage (two
// bytes a step: the first's top bit for down and its low bit for usages
// above 0xFF, the second the usage's low byte) keeps the report
// well formed: a zero reserved byte, and either six rollover slots or the
// held keys (no ErrorRollOver, no usage below 4) followed by zeros.
func FuzzKeyboard(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x04, 0x00, 0x04})
	f.Fuzz(func(t *testing.T, b []byte) {
		var k Keyboard
		for i := 0; i+1 < len(b); i += 2 {
			code := keys.Code(b[i]&0x01)<<8 | keys.Code(b[i+1])
			if b[i]&0x80 != 0 {
				if err := k.Press(code); err != nil && Carries(code) {
					t.Fatalf("Press(0x%X): %v", uint16(code), err)
				}
			} else {
				k.Release(code)
			}
			r := k.Report()
			if r[1] != 0 {
				t.Fatalf("reserved byte set: %v", r)
			}
			if r.Rollover() {
				if len(k.Held()) <= Slots || !bytes.Equal(r[offSlots:], bytes.Repeat([]byte{1}, Slots)) {
					t.Fatalf("rollover report %v with %v held", r, k.Held())
				}
				continue
			}
			end := false
			for _, s := range r[offSlots:] {
				switch {
				case s == 0:
					end = true
				case end || s < byte(firstKey):
					t.Fatalf("bad slots in %v (held %v)", r, k.Held())
				}
			}
		}
	})
}

// FuzzParseLEDs: ParseLEDs never panics, and what it accepts is one byte
// with only the five LED bits.
func FuzzParseLEDs(f *testing.F) {
	for _, s := range [][]byte{{0}, {2}, {0x1f}, {0x20}, {}, {1, 2}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLEDs(b)
		if err == nil && (len(b) != 1 || l&^ledsValid != 0 || byte(l) != b[0]) {
			t.Fatalf("ParseLEDs(% x) accepted %v", b, l)
		}
	})
}
