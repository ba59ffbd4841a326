// Package darwin is what keyrelay's macOS source (capture.MacOS) and
// injector (inject.MacOS) share: the Quartz event constants, the decoding of
// the key events an event tap sees into key downs and ups, the modifier
// flags of the events the injector posts, and what to tell a user about
// permissions and Secure Event Input. All of that is pure Go, built and
// tested on every system; the calls into the macOS frameworks (sys_darwin.go)
// go through github.com/ebitengine/purego, so GOOS=darwin CGO_ENABLED=0
// builds it without a C toolchain.
package darwin

import (
	"unicode/utf16"

	"github.com/keyrelay/keyrelay/keys"
)

// EventType is a CGEventType.
type EventType uint32

// The event types of CGEventTypes.h a keyboard tap sees.
const (
	KeyDown      EventType = 10 // kCGEventKeyDown
	KeyUp        EventType = 11 // kCGEventKeyUp
	FlagsChanged EventType = 12 // kCGEventFlagsChanged: a modifier or Caps Lock
	// The tap itself was turned off: by macOS, when a callback took too
	// long, or by user input (Secure Event Input among the causes). The
	// callback must turn it on again (CGEventTapEnable).
	TapDisabledByTimeout   EventType = 0xFFFFFFFE
	TapDisabledByUserInput EventType = 0xFFFFFFFF
)

// Flags is a CGEventFlags: the generic modifier bits of CGEventTypes.h, and
// in the low 16 bits the device-dependent ones of IOKit's IOLLEvent.h
// (NX_DEVICE*KEYMASK), which tell the left key from the right.
type Flags uint64

const (
	FlagAlphaShift  Flags = 0x00010000 // Caps Lock is on
	FlagShift       Flags = 0x00020000
	FlagControl     Flags = 0x00040000
	FlagAlternate   Flags = 0x00080000 // Option
	FlagCommand     Flags = 0x00100000
	FlagNumericPad  Flags = 0x00200000
	FlagSecondaryFn Flags = 0x00800000 // fn
	// FlagNonCoalesced is set on every event from a real device.
	FlagNonCoalesced Flags = 0x00000100

	DevLeftControl    Flags = 0x00000001
	DevLeftShift      Flags = 0x00000002
	DevRightShift     Flags = 0x00000004
	DevLeftCommand    Flags = 0x00000008
	DevRightCommand   Flags = 0x00000010
	DevLeftAlternate  Flags = 0x00000020
	DevRightAlternate Flags = 0x00000040
	DevRightControl   Flags = 0x00002000

	// devMask is every device-dependent modifier bit.
	devMask = DevLeftControl | DevLeftShift | DevRightShift | DevLeftCommand |
		DevRightCommand | DevLeftAlternate | DevRightAlternate | DevRightControl
)

// The CGEventField numbers of a keyboard event (CGEventGetIntegerValueField).
const (
	FieldAutorepeat = 8 // kCGKeyboardEventAutorepeat: nonzero on a repeat
	FieldKeycode    = 9 // kCGKeyboardEventKeycode: the virtual keycode
)

// The virtual keycodes (Events.h kVK_*) the decoder treats apart: Caps Lock
// and the modifiers, whose presses and releases come as FlagsChanged.
const (
	VKCapsLock = 0x39
	VKFunction = 0x3F
)

// modifier is a key that comes as FlagsChanged: its generic flag, and its
// device-dependent bit (0 for fn, which has none).
type modifier struct {
	vk      uint16
	generic Flags
	dev     Flags
}

var modifiers = [...]modifier{
	{0x38, FlagShift, DevLeftShift},         // kVK_Shift
	{0x3C, FlagShift, DevRightShift},        // kVK_RightShift
	{0x3B, FlagControl, DevLeftControl},     // kVK_Control
	{0x3E, FlagControl, DevRightControl},    // kVK_RightControl
	{0x3A, FlagAlternate, DevLeftAlternate}, // kVK_Option
	{0x3D, FlagAlternate, DevRightAlternate},
	{0x37, FlagCommand, DevLeftCommand}, // kVK_Command
	{0x36, FlagCommand, DevRightCommand},
	{VKFunction, FlagSecondaryFn, 0},
}

func modifierOf(vk uint16) (modifier, bool) {
	for _, m := range modifiers {
		if m.vk == vk {
			return m, true
		}
	}
	return modifier{}, false
}

// IsModifier reports whether the virtual keycode vk is a modifier key
// (Shift, Control, Option, Command, fn): one macOS reports with
// FlagsChanged, and the injector posts as FlagsChanged with its flag set.
func IsModifier(vk uint16) bool { _, ok := modifierOf(vk); return ok }

// Event is one event as an event tap hands it over: what the decoder
// reads of a CGEventRef. Recorded events are these four numbers.
type Event struct {
	Type       EventType
	Keycode    uint16
	Flags      Flags
	Autorepeat bool
}

// Change is one key going down or up, to relay.
type Change struct {
	Code keys.Code
	Down bool
}

// Result is what one event means.
type Result struct {
	// Changes are the key events to relay, in order (none for a repeat,
	// a key up whose down was never seen, or an unknown keycode).
	Changes []Change
	// Down is the direction of the event's own key: true for a press or
	// a repeat. For Caps Lock, whose FlagsChanged comes once per press,
	// it is true.
	Down bool
	// Unknown is set for a key event whose keycode keycodemapdb does not
	// list: nothing relayed.
	Unknown bool
	// Reenable is set when macOS turned the tap off: turn it on again.
	Reenable bool
}

// Decoder turns the events an event tap sees into balanced key downs and
// ups: a key goes up only once it went down, goes down again only after it
// went up, and auto-repeat is dropped at the source (the receiver repeats
// by itself). Modifiers come as FlagsChanged; which way is read from their
// device-dependent flag (left and right apart), or, for an event without
// device bits (posted by another program), from the generic flag and what
// is held. Every event also carries the flags of the moment: a modifier
// held here whose flag has gone is released, so that one whose release the
// tap missed (while macOS had it disabled) does not stay down at the
// receiver. Caps Lock's FlagsChanged comes once per press and is relayed as
// a tap, a press and a release, which toggles the receiver's Caps Lock.
//
// Decoder is pure and not safe for concurrent use; its zero value is ready.
type Decoder struct {
	held  [128]bool // by virtual keycode
	flags Flags     // of the last event
	seen  bool      // an event was decoded: flags holds its flags
}

// Decode reads one event.
func (d *Decoder) Decode(ev Event) Result {
	switch ev.Type {
	case TapDisabledByTimeout, TapDisabledByUserInput:
		return Result{Reenable: true}
	case KeyDown, KeyUp, FlagsChanged:
	default:
		return Result{}
	}
	var r Result
	d.flags, d.seen = ev.Flags, true
	r.Changes = d.releaseGone(ev.Flags, ev.Keycode)
	vk := ev.Keycode
	code, known := keys.FromMacOS(vk)
	if !known || int(vk) >= len(d.held) {
		r.Unknown = true
		r.Down = ev.Type == KeyDown || (ev.Type == FlagsChanged && ev.Flags&devMask != 0)
		return r
	}
	switch ev.Type {
	case KeyDown:
		r.Down = true
		if ev.Autorepeat || d.held[vk] {
			return r
		}
		d.held[vk] = true
		r.Changes = append(r.Changes, Change{code, true})
	case KeyUp:
		if d.held[vk] {
			d.held[vk] = false
			r.Changes = append(r.Changes, Change{code, false})
		}
	case FlagsChanged:
		if vk == VKCapsLock {
			r.Down = true
			if d.held[vk] {
				// A KeyDown of Caps Lock came first (a remapping
				// tool's): that press is relayed, this ends it.
				d.held[vk] = false
				r.Changes = append(r.Changes, Change{code, false})
				return r
			}
			r.Changes = append(r.Changes, Change{code, true}, Change{code, false})
			return r
		}
		r.Down = d.modifierDown(ev.Flags, vk)
		if r.Down != d.held[vk] {
			d.held[vk] = r.Down
			r.Changes = append(r.Changes, Change{code, r.Down})
		}
	}
	return r
}

// modifierDown reads which way a FlagsChanged of the key vk goes.
func (d *Decoder) modifierDown(f Flags, vk uint16) bool {
	m, ok := modifierOf(vk)
	switch {
	case !ok:
		// A key macOS reports as a modifier that is none of the known
		// ones: each report flips it.
		return !d.held[vk]
	case m.dev != 0 && f&devMask != 0:
		return f&m.dev != 0
	case f&m.generic == 0:
		return false
	default:
		// No device bits (fn has none; a program's event may lack
		// them): the generic flag is set, so this key went down unless
		// it was down already.
		return !d.held[vk]
	}
}

// releaseGone releases every modifier held here whose flag f says is up:
// its generic flag is clear, or f has device bits and not its own. The
// event's own key (except) is left to Decode.
func (d *Decoder) releaseGone(f Flags, except uint16) []Change {
	var out []Change
	for _, m := range modifiers {
		if !d.held[m.vk] || m.vk == except {
			continue
		}
		if f&m.generic == 0 || (m.dev != 0 && f&devMask != 0 && f&m.dev == 0) {
			d.held[m.vk] = false
			if code, ok := keys.FromMacOS(m.vk); ok {
				out = append(out, Change{code, false})
			}
		}
	}
	return out
}

// Held returns the keys held now, by code, in virtual keycode order.
func (d *Decoder) Held() []keys.Code {
	var out []keys.Code
	for vk, down := range d.held {
		if down {
			c, _ := keys.FromMacOS(uint16(vk))
			out = append(out, c)
		}
	}
	return out
}

// Locks is the lock state for the receiver (PROTOCOL.md §3.2) that flags f
// tell, with epoch's LockEpoch bit: Caps Lock from FlagAlphaShift, and Num
// Lock on, since a Mac has none and its keypad always types digits, which
// is what Num Lock on does at the receiver.
func Locks(f Flags, epoch keys.Locks) keys.Locks {
	l := keys.LocksKnown | keys.LockNum | epoch&keys.LockEpoch
	if f&FlagAlphaShift != 0 {
		l |= keys.LockCaps
	}
	return l
}

// Flags returns the flags of the last event decoded, and false before any.
func (d *Decoder) Flags() (Flags, bool) { return d.flags, d.seen }

// Post is one keyboard event for the injector to create and post
// (CGEventCreateKeyboardEvent, CGEventSetType, CGEventSetFlags, CGEventPost).
type Post struct {
	Keycode uint16
	Down    bool
	// Type is KeyDown, KeyUp, or FlagsChanged for a modifier, which is how
	// a keyboard reports one.
	Type  EventType
	Flags Flags
	// Text is set for a character: the UTF-16 string
	// CGEventKeyboardSetUnicodeString gives the event (keycode 0).
	Text []uint16
}

// Poster keeps the modifiers the injector holds down, so that every event
// it posts carries their flags as a keyboard's events do: an app reads
// Command+C from the flags of the C, not from the Command key's own event.
//
// Poster is pure and not safe for concurrent use; its zero value is ready.
type Poster struct {
	held map[uint16]bool // modifier keycodes down
}

// Key plans the event that presses (down) or releases the physical key c;
// caps is whether Caps Lock is on now (FlagAlphaShift of the system's
// state), kept in the flags. It is false for a key without a macOS
// virtual keycode.
func (p *Poster) Key(c keys.Code, down bool, caps Flags) (Post, bool) {
	vk, ok := keys.MacOSKeycode(c)
	if !ok {
		return Post{}, false
	}
	typ := KeyUp
	if down {
		typ = KeyDown
	}
	if IsModifier(vk) {
		if p.held == nil {
			p.held = map[uint16]bool{}
		}
		if down {
			p.held[vk] = true
		} else {
			delete(p.held, vk)
		}
		typ = FlagsChanged
	}
	return Post{Keycode: vk, Down: down, Type: typ, Flags: p.flags() | caps&FlagAlphaShift}, true
}

// flags are the generic and device flags of the modifiers held.
func (p *Poster) flags() Flags {
	var f Flags
	for _, m := range modifiers {
		if p.held[m.vk] {
			f |= m.generic | m.dev
		}
	}
	return f
}

// Char plans the two events (down, then up) that type r whatever the
// layout: keycode 0 with r as the event's Unicode string, and no modifier
// flags, so that a modifier the injector holds does not turn the character
// into a shortcut.
func (p *Poster) Char(r rune) [2]Post {
	text := utf16.Encode([]rune{r})
	return [2]Post{{Type: KeyDown, Down: true, Text: text}, {Type: KeyUp, Text: text}}
}
