package capture

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/keyrelay/keyrelay/internal/darwin"
	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoMacOS is wrapped by the macOS source's errors when it cannot
// capture.
var ErrNoMacOS = errors.New("macOS key capture unavailable")

// MacOS captures true key presses and releases system-wide on macOS (--input
// macos) with a Quartz event tap (KeyDown, KeyUp, FlagsChanged), through
// purego: no cgo. Physical keys by virtual keycode (keys.FromMacOS, from
// keycodemapdb); internal/darwin.Decoder does the decoding (modifiers from
// FlagsChanged, auto-repeat dropped).
//
// Without Grab the tap only listens (macOS asks for Input Monitoring):
// every key also acts on this Mac. With Grab the tap drops the keys while
// relaying (macOS asks for Accessibility too) and the hotkey switches to
// local use and back (capture.Switch); the tap sees every key in local use
// too, so any chord can be the hotkey, and a key pressed in local use has
// its release go to macOS as well, whatever the mode is by then. macOS
// removes a tap with its process: keyrelay can never leave the keyboard
// taken.
//
// With named destinations (SetRouting) a destination's local key pressed
// while relaying is handed back to macOS (the tap returns the event rather
// than dropping it), its repeats and release too, and still relayed, so
// that the router keeps it from the destinations that list it; in local
// use, where the tap sees every key, a destination's hotkey makes it the
// target and takes the keyboard again. The tap's callback runs on Play's
// goroutine, so it asks the router directly.
//
// Locks reports Caps Lock from the keyboard's flags as relaying starts or
// resumes, and Num Lock on (a Mac has none; its keypad types digits), with
// the epoch bit flipped each time (PROTOCOL.md §3.2). While an app has
// Secure Event Input on, the tap sees no keys: the source says so when it
// starts and when it ends.
//
// Relaying, Grabbing and Locks are safe for concurrent use; Play runs once.
type MacOS struct {
	Label  string
	Status io.Writer
	// Grab drops keys while relaying; Hotkey switches (DefaultHotkey if
	// nil).
	Grab   bool
	Hotkey Hotkey
	// Debug writes each event the tap hands over to Status as a line of
	// internal/darwin's recording format ("tapped keydown 0x00 0x100"),
	// so that a Mac's real events can become test data. It shows what
	// is typed, as --debug does everywhere.
	Debug bool

	relaying atomic.Bool
	locks    atomic.Uint32
	statusMu sync.Mutex

	// SetRouting's, read by Play.
	localKey func(keys.Code) bool
	targets  [][]keys.Code
	pick     func(int)
}

// SetRouting takes what send's named destinations decide (the
// routing.RoutingSource interface): which keys act here, the destinations'
// hotkeys and how to make one the target. Call it before Play.
func (m *MacOS) SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int)) {
	m.localKey, m.targets, m.pick = local, hotkeys, pick
}

// Relaying reports whether keys go to the receiver now.
func (m *MacOS) Relaying() bool { return m.relaying.Load() }

// Grabbing reports whether the source keeps keys from this Mac (--grab).
func (m *MacOS) Grabbing() bool { return m.Grab }

// Locks is the lock state the receiver should have (keys.Locks).
func (m *MacOS) Locks() keys.Locks { return keys.Locks(m.locks.Load()) }

// readLocks takes the lock state from flags and flips the epoch.
func (m *MacOS) readLocks(f darwin.Flags) {
	epoch := (keys.Locks(m.locks.Load()) ^ keys.LockEpoch) & keys.LockEpoch
	m.locks.Store(uint32(darwin.Locks(f, epoch)))
}

func (m *MacOS) status(format string, args ...any) {
	if m.Status == nil {
		return
	}
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	fmt.Fprintf(m.Status, "keyrelay send: "+format+"\n", args...)
}

// CheckMacOSHotkey says whether every key of h has a macOS virtual keycode,
// so that the tap can see it.
func CheckMacOSHotkey(h Hotkey) error {
	for _, c := range h {
		if _, ok := keys.MacOSKeycode(c); !ok {
			return fmt.Errorf("%w %v: %v is a key a Mac does not report (no macOS virtual keycode in keycodemapdb)", ErrHotkey, h, c)
		}
	}
	return nil
}

// macTap is what the event tap's callback runs for each event: decode,
// relay (through the Switch with Grab), and say whether macOS should drop
// the event. Pure, so that it is tested on any system; not safe for
// concurrent use (the tap calls it on its one thread).
type macTap struct {
	m    *MacOS
	dec  darwin.Decoder
	sw   *Switch // nil without Grab
	emit func(keys.Key, bool) error
	// local holds the virtual keycodes whose press macOS had (local
	// use, or a key that acts here): their releases go to macOS too, or
	// it would keep them down.
	local map[uint16]bool
	// own is the key of the event being handled; through is set when the
	// Switch passes its press here (actHere).
	own     keys.Code
	through bool
	unknown map[uint16]bool // keycodes already reported
	// err is the first error relaying gave: the source stops with it.
	err error
}

func (m *MacOS) newTap(emit func(keys.Key, bool) error) *macTap {
	t := &macTap{m: m, emit: emit, local: map[uint16]bool{}, unknown: map[uint16]bool{}}
	m.relaying.Store(true)
	if !m.Grab {
		return t
	}
	hotkey := m.Hotkey
	if len(hotkey) == 0 {
		hotkey, _ = ParseHotkey(DefaultHotkey)
	}
	t.sw = &Switch{Hotkey: hotkey, Emit: emit}
	t.sw.OnToggle = func(relaying bool) error {
		m.relaying.Store(relaying)
		if relaying {
			if f, ok := t.dec.Flags(); ok {
				m.readLocks(f)
			}
			m.status("relaying to %s: keys are kept from this Mac (%v for local use)", m.Label, hotkey)
		} else {
			m.status("local use: keys act here (%v to relay to %s)", hotkey, m.Label)
		}
		return nil
	}
	if m.pick != nil {
		for _, h := range m.targets {
			t.sw.Targets = append(t.sw.Targets, Hotkey(h))
		}
		t.sw.OnTarget = func(i int) error { m.pick(i); return nil }
	}
	if m.localKey != nil {
		t.sw.Here, t.sw.ActHere = m.localKey, t.actHere
	}
	return t
}

// actHere is the Switch's ActHere with grab: the press of the event's own
// key acts here, so the tap hands the event to macOS. A release needs
// nothing: its press went to macOS, so it does too (local); and a key
// still held when the Switch releases it here (a switch to local use) is
// macOS's already, which sees its physical release.
func (t *macTap) actHere(code keys.Code, down bool) error {
	if down && code == t.own {
		t.through = true
	}
	return nil
}

// event handles one tapped event and reports whether to drop it.
func (t *macTap) event(ev darwin.Event) bool {
	if t.m.Debug {
		t.m.status("tapped %s", darwin.FormatEvent(ev))
	}
	r := t.dec.Decode(ev)
	if r.Reenable {
		t.m.status("macOS turned the key tap off (it lagged, or secure input began); it is on again: keys pressed meanwhile were not seen")
		return false
	}
	if ev.Type != darwin.KeyDown && ev.Type != darwin.KeyUp && ev.Type != darwin.FlagsChanged {
		return false
	}
	wasRelaying := t.sw == nil || t.sw.Relaying()
	t.own, _ = keys.FromMacOS(ev.Keycode)
	t.through = false
	for _, c := range r.Changes {
		var err error
		if t.sw != nil {
			err = t.sw.Key(c.Code, c.Down)
		} else {
			err = t.emit(keys.Key(c.Code), c.Down)
		}
		if err != nil && t.err == nil {
			t.err = err
		}
	}
	if r.Unknown && !t.unknown[ev.Keycode] {
		t.unknown[ev.Keycode] = true
		t.m.status("macOS virtual keycode %#x is a key keycodemapdb does not list: not sent", ev.Keycode)
	}
	if t.sw == nil {
		return false
	}
	vk := ev.Keycode
	if ev.Type == darwin.FlagsChanged && vk == darwin.VKCapsLock {
		// One event a press, no release to follow: it goes where the
		// mode sends it, or here if it acts here.
		return (wasRelaying || t.sw.Relaying()) && !t.through
	}
	if r.Down {
		if t.local[vk] {
			return false // a repeat of a key macOS has
		}
		drop := (wasRelaying || t.sw.Relaying()) && !t.through
		if !drop {
			t.local[vk] = true
		}
		return drop
	}
	if t.local[vk] {
		delete(t.local, vk)
		return false
	}
	return true
}

// stop releases, at the receiver, what the tap relayed down, as the source
// ends.
func (t *macTap) stop() error {
	if t.sw != nil {
		return t.sw.ReleaseAll()
	}
	return nil
}
