// Package hidkbd is a USB HID boot keyboard as bytes: the held-key state a
// receiver's injector keeps, encoded as the 8-byte input report a keyboard
// sends its host (HID 1.11 appendix B.1), the report descriptor the USB
// gadget announces (with the LED output report), and the LED output report
// the host sends back. Pure: no I/O, no clock.
//
// The input report:
//
//	offset 0  modifiers: bit n is usage 0xE0+n (ControlLeft … MetaRight)
//	offset 1  reserved, 0
//	offset 2  six key slots: the usages (keyboard page 0x07) of the
//	          non-modifier keys held, oldest first, 0 when empty
//
// With more than six non-modifier keys held every slot says ErrorRollOver
// (0x01) and the modifier byte stays right (HID 1.11 appendix C): the host
// keeps the keys of the last report it could read, so nothing is released
// wrongly, and once six or fewer are held the report lists them again.
package hidkbd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/keyrelay/keyrelay/keys"
)

// ReportLen is the length of a boot keyboard input report.
const ReportLen = 8

// Slots is how many non-modifier keys a report holds.
const Slots = 6

// Offsets in the input report.
const (
	offMods  = 0
	offSlots = 2
)

// Usages with a meaning of their own in the key slots (HID Usage Tables,
// keyboard page 0x07).
const (
	ErrorRollOver keys.Code = 0x01
	// firstKey is the first usage that is a key (0x01–0x03 are errors).
	firstKey keys.Code = 0x04
	// The modifiers, one bit each in the report's first byte.
	firstMod keys.Code = 0xE0
	lastMod  keys.Code = 0xE7
	// lastKey is the highest usage the report descriptor declares.
	lastKey keys.Code = 0xFF
)

// Report is one input report.
type Report [ReportLen]byte

// Rollover reports whether r is the phantom state: more keys held than
// the slots hold.
func (r Report) Rollover() bool { return r[offSlots] == byte(ErrorRollOver) }

// String is the report in hex, for logs and test failures.
func (r Report) String() string { return fmt.Sprintf("% x", r[:]) }

// ErrNotInReport is wrapped by Press's error for a key a boot keyboard
// report cannot carry: a usage outside 0x04–0xFF.
var ErrNotInReport = errors.New("not a key a USB keyboard report carries")

// Modifier returns the bit of the report's first byte that code sets, and
// false for a key that is not one of the eight modifiers.
func Modifier(code keys.Code) (byte, bool) {
	if code < firstMod || code > lastMod {
		return 0, false
	}
	return 1 << (code - firstMod), true
}

// Carries reports whether a report can say that code is held.
func Carries(code keys.Code) bool { return code >= firstKey && code <= lastKey }

// Keyboard is the held-key state of one boot keyboard: what its next
// report says. The zero value holds nothing. Not safe for concurrent use.
type Keyboard struct {
	mods byte
	held []keys.Code // non-modifier keys, in the order they went down
}

// Press marks code held. Pressing a held key changes nothing: a keyboard
// cannot press a key twice (the receiver's balanced queue never asks,
// DESIGN.md invariant 2).
func (k *Keyboard) Press(code keys.Code) error {
	if !Carries(code) {
		return fmt.Errorf("%w: %v (usage 0x%02X)", ErrNotInReport, code, uint16(code))
	}
	if bit, ok := Modifier(code); ok {
		k.mods |= bit
		return nil
	}
	if !slices.Contains(k.held, code) {
		k.held = append(k.held, code)
	}
	return nil
}

// Release marks code no longer held; a key not held changes nothing.
func (k *Keyboard) Release(code keys.Code) {
	if bit, ok := Modifier(code); ok {
		k.mods &^= bit
		return
	}
	if i := slices.Index(k.held, code); i >= 0 {
		k.held = slices.Delete(k.held, i, i+1)
	}
}

// ReleaseAll marks every key released.
func (k *Keyboard) ReleaseAll() {
	k.mods = 0
	k.held = k.held[:0]
}

// Held returns the keys held, modifiers first (in usage order), then the
// others in the order they went down. The slice is the caller's.
func (k *Keyboard) Held() []keys.Code {
	var out []keys.Code
	for c := firstMod; c <= lastMod; c++ {
		if bit, _ := Modifier(c); k.mods&bit != 0 {
			out = append(out, c)
		}
	}
	return append(out, k.held...)
}

// Report is the input report that says what is held now.
func (k *Keyboard) Report() Report {
	var r Report
	r[offMods] = k.mods
	if len(k.held) > Slots {
		for i := range Slots {
			r[offSlots+i] = byte(ErrorRollOver)
		}
		return r
	}
	for i, c := range k.held {
		r[offSlots+i] = byte(c)
	}
	return r
}

// LEDs is the output report a host sends a keyboard: which of its lock
// lights are on (HID Usage Tables, LED page 0x08, usages 1–5 as bits 0–4).
type LEDs byte

const (
	LEDNumLock    LEDs = 1 << 0
	LEDCapsLock   LEDs = 1 << 1
	LEDScrollLock LEDs = 1 << 2
	LEDCompose    LEDs = 1 << 3
	LEDKana       LEDs = 1 << 4
	ledsValid          = LEDNumLock | LEDCapsLock | LEDScrollLock | LEDCompose | LEDKana
)

// ErrBadLEDReport is wrapped by ParseLEDs's error for bytes that are no LED
// output report.
var ErrBadLEDReport = errors.New("not a keyboard LED report")

// ParseLEDs reads one LED output report: one byte, its three padding bits
// zero. A host that numbers its reports would send two bytes; the
// descriptor declares no report IDs, so one byte is all that may come.
func ParseLEDs(b []byte) (LEDs, error) {
	if len(b) != 1 {
		return 0, fmt.Errorf("%w: %d bytes, want 1", ErrBadLEDReport, len(b))
	}
	l := LEDs(b[0])
	if l&^ledsValid != 0 {
		return 0, fmt.Errorf("%w: padding bits set in 0x%02x", ErrBadLEDReport, b[0])
	}
	return l, nil
}

// Locks is the lock state the LEDs show, as keys.Locks (known).
func (l LEDs) Locks() keys.Locks {
	out := keys.LocksKnown
	if l&LEDCapsLock != 0 {
		out |= keys.LockCaps
	}
	if l&LEDNumLock != 0 {
		out |= keys.LockNum
	}
	return out
}

// Descriptor is the report descriptor the gadget announces: the boot
// keyboard's (HID 1.11 appendix B.1, the layout of the input report above,
// five LEDs and three bits of padding in the output report), except that
// the key slots take usages up to 0xFF rather than 0x65, so that F13–F24,
// the international and language keys can be pressed too. A host in boot
// protocol (a BIOS) ignores the descriptor and reads the same 8 bytes.
var Descriptor = []byte{
	0x05, 0x01, // Usage Page (Generic Desktop)
	0x09, 0x06, // Usage (Keyboard)
	0xa1, 0x01, // Collection (Application)
	0x05, 0x07, //   Usage Page (Keyboard/Keypad)
	0x19, 0xe0, //   Usage Minimum (0xE0, ControlLeft)
	0x29, 0xe7, //   Usage Maximum (0xE7, MetaRight)
	0x15, 0x00, //   Logical Minimum (0)
	0x25, 0x01, //   Logical Maximum (1)
	0x75, 0x01, //   Report Size (1)
	0x95, 0x08, //   Report Count (8)
	0x81, 0x02, //   Input (Data, Variable, Absolute): the modifier byte
	0x95, 0x01, //   Report Count (1)
	0x75, 0x08, //   Report Size (8)
	0x81, 0x01, //   Input (Constant): the reserved byte
	0x95, 0x05, //   Report Count (5)
	0x75, 0x01, //   Report Size (1)
	0x05, 0x08, //   Usage Page (LEDs)
	0x19, 0x01, //   Usage Minimum (1, Num Lock)
	0x29, 0x05, //   Usage Maximum (5, Kana)
	0x91, 0x02, //   Output (Data, Variable, Absolute): the LEDs
	0x95, 0x01, //   Report Count (1)
	0x75, 0x03, //   Report Size (3)
	0x91, 0x01, //   Output (Constant): padding
	0x95, 0x06, //   Report Count (6)
	0x75, 0x08, //   Report Size (8)
	0x15, 0x00, //   Logical Minimum (0)
	0x26, 0xff, 0x00, //   Logical Maximum (255)
	0x05, 0x07, //   Usage Page (Keyboard/Keypad)
	0x19, 0x00, //   Usage Minimum (0)
	0x29, 0xff, //   Usage Maximum (0xFF)
	0x81, 0x00, //   Input (Data, Array): the six key slots
	0xc0, // End Collection
}
