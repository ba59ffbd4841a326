package capture

import (
	"slices"

	"github.com/keyrelay/keyrelay/keys"
)

// Input event types and codes the evdev source reads
// (linux/input-event-codes.h); here, not in internal/linux/evdev, so that the
// decoder builds and is tested on every system.
const (
	evSyn = 0x00
	evKey = 0x01
	evLED = 0x11

	synReport  = 0
	synDropped = 3

	ledNumLock  = 0x00
	ledCapsLock = 0x01
)

// evdevEvent is one input event from a device, without its timestamp.
type evdevEvent struct {
	Type  uint16
	Code  uint16
	Value int32
}

// evdevButton reports whether an EV_KEY code is a button (BTN_*: mice,
// joysticks, tablets, gamepads), which a keyboard source ignores: some
// keyboards share one device with a touchpad or a mouse.
func evdevButton(code uint16) bool {
	return code >= 0x100 && code < 0x160 || // BTN_MISC .. BTN_GEAR_UP
		code >= 0x220 && code < 0x224 || // BTN_DPAD_*
		code >= 0x2c0 && code < 0x2e8 // BTN_TRIGGER_HAPPY*
}

// evdevRelayable reports whether an EV_KEY code is a key the source relays:
// a key (not a button) of the keys table: a HID usage, or keys.EvdevBase +
// the code (PROTOCOL.md §3.1).
func evdevRelayable(code uint16) (keys.Code, bool) {
	if code == 0 || evdevButton(code) {
		return 0, false
	}
	return EvdevToHID(code)
}

// evdevKey is a key press or release the decoder relays.
type evdevKey struct {
	Evdev uint16
	Code  keys.Code
	Down  bool
}

// evdevAction is what one input event means to the source.
type evdevAction uint8

const (
	evdevNone    evdevAction = iota
	evdevPress               // Key went down or up
	evdevUnknown             // Key.Evdev was pressed, but is no key of the table: not sent
	evdevLED                 // a lock LED (Lock) went on or off (On)
	evdevResync              // the kernel dropped events: read the key state and call Sync
)

type evdevResult struct {
	Action evdevAction
	Key    evdevKey
	Lock   keys.Locks
	On     bool
}

// evdevDecoder turns one device's input events into true key presses and
// releases: kernel auto-repeat (value 2) is dropped, so the receiver sees
// one key-down per press; buttons are ignored; a press of a code the keys
// table lacks is reported so the source can say so once, and is not sent; a
// release is relayed only for a key whose press was (keys held when the
// device was opened are left alone). After SYN_DROPPED the kernel has lost
// events: everything up to and including the next SYN_REPORT is stale, and
// the source must read the key state (EVIOCGKEY) and call Sync, which relays
// the differences, so that no key stays stuck at the receiver.
//
// Its zero value is ready. It is not safe for concurrent use.
type evdevDecoder struct {
	down     []uint16 // evdev codes relayed down, in press order
	dropping bool     // after SYN_DROPPED, until SYN_REPORT
}

// Event decodes one input event.
func (d *evdevDecoder) Event(ev evdevEvent) evdevResult {
	if d.dropping {
		if ev.Type == evSyn && ev.Code == synReport {
			d.dropping = false
			return evdevResult{Action: evdevResync}
		}
		return evdevResult{}
	}
	switch ev.Type {
	case evSyn:
		if ev.Code == synDropped {
			d.dropping = true
		}
	case evLED:
		switch ev.Code {
		case ledCapsLock:
			return evdevResult{Action: evdevLED, Lock: keys.LockCaps, On: ev.Value != 0}
		case ledNumLock:
			return evdevResult{Action: evdevLED, Lock: keys.LockNum, On: ev.Value != 0}
		}
	case evKey:
		if ev.Value == 2 {
			return evdevResult{} // auto-repeat of a held key
		}
		down := ev.Value != 0 // as the kernel reads a value (!!value)
		code, ok := evdevRelayable(ev.Code)
		if !ok {
			if down && ev.Code != 0 && !evdevButton(ev.Code) {
				return evdevResult{Action: evdevUnknown, Key: evdevKey{Evdev: ev.Code, Down: true}}
			}
			return evdevResult{}
		}
		i := slices.Index(d.down, ev.Code)
		switch {
		case down && i < 0:
			d.down = append(d.down, ev.Code)
		case !down && i >= 0:
			d.down = slices.Delete(d.down, i, i+1)
		default:
			return evdevResult{} // no change: a press of a held key, a release of a key never relayed
		}
		return evdevResult{Action: evdevPress, Key: evdevKey{Evdev: ev.Code, Code: code, Down: down}}
	}
	return evdevResult{}
}

// Sync takes the keys down now (evdev codes, from EVIOCGKEY) and returns
// what makes the receiver match: releases first (last pressed first), then
// presses, in code order.
func (d *evdevDecoder) Sync(state []uint16) []evdevKey {
	d.dropping = false
	var out []evdevKey
	for i := len(d.down) - 1; i >= 0; i-- {
		if c := d.down[i]; !slices.Contains(state, c) {
			code, _ := evdevRelayable(c)
			out = append(out, evdevKey{Evdev: c, Code: code})
			d.down = slices.Delete(d.down, i, i+1)
		}
	}
	sorted := slices.Sorted(slices.Values(state))
	for i, c := range sorted {
		if i > 0 && sorted[i-1] == c {
			continue
		}
		code, ok := evdevRelayable(c)
		if ok && !slices.Contains(d.down, c) {
			d.down = append(d.down, c)
			out = append(out, evdevKey{Evdev: c, Code: code, Down: true})
		}
	}
	return out
}

// Release returns a release of every key relayed down, last pressed first,
// and forgets them: the device is gone.
func (d *evdevDecoder) Release() []evdevKey {
	out := make([]evdevKey, 0, len(d.down))
	for i := len(d.down) - 1; i >= 0; i-- {
		code, _ := evdevRelayable(d.down[i])
		out = append(out, evdevKey{Evdev: d.down[i], Code: code})
	}
	d.down = d.down[:0]
	d.dropping = false
	return out
}
