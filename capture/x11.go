package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/record"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
	"github.com/keyrelay/keyrelay/internal/x11/xrecord"
	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoX11 is wrapped by the X11 source's errors when it cannot capture.
var ErrNoX11 = errors.New("X11 key capture unavailable")

// ErrNoHook is the old name of ErrNoX11 (--input hook).
var ErrNoHook = ErrNoX11

// X11 captures true key presses and releases from the X server of $DISPLAY
// (--input x11; --input hook is the same source), in pure Go on jezek/xgb.
// Physical keys: an X keycode is its evdev code + 8 (the evdev XKB rules).
// Auto-repeat is dropped at the source.
//
// Without Grab it observes, with the RECORD extension (internal/x11/xrecord):
// every key also acts on the local desktop. With Grab it owns the keyboard
// while relaying (an active keyboard grab: keys reach the receiver only) and
// the hotkey switches to local use and back (capture.Switch): in local use
// the keyboard is let go, and only the hotkey is grabbed (a passive grab,
// with its modifiers), so it reaches neither side. X releases every grab of
// a client that dies: keyrelay can never leave the keyboard owned.
//
// With named destinations (SetRouting) it also grabs each destination's
// hotkey in local use, which makes that destination the target and takes
// the keyboard again; and a destination's local key, which the grab keeps
// from the desktop, is given back to it through XTEST (a fake press and
// release while the keyboard is let go for a moment) when it is released:
// a tap, not a hold. The X server drops a press of a key already down, and
// the key's own press went to this grab, so no fake press reaches the
// desktop while the key is held (push-to-talk needs --input evdev).
//
// Locks reports the lock state the receiver should have: the local Caps
// Lock and Num Lock as relaying starts or resumes, with the epoch bit
// flipped each time (keys.Locks). Lock keys pressed while relaying toggle
// both sides (under a grab the X server still keeps the lock state).
type X11 struct {
	Label  string
	Status io.Writer
	// Grab owns the keyboard while relaying; Hotkey switches (DefaultHotkey
	// if nil).
	Grab   bool
	Hotkey Hotkey

	relaying mode
	locks    atomic.Uint32
	display  string
	ctrl     *xgb.Conn
	root     xproto.Window
	numMask  uint16 // the modifier bit of Num Lock
	modOf    map[xproto.Keycode]uint16

	// SetRouting's, read by Play.
	localKey func(keys.Code) bool
	targets  [][]keys.Code
	pick     func(int)

	grabs []keyGrab // Play's passive grabs of the hotkeys, in local use
}

// SetRouting takes what send's named destinations decide (the
// routing.RoutingSource interface): which keys act here, the destinations'
// hotkeys and how to make one the target. Call it before Play.
func (x *X11) SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int)) {
	x.localKey, x.targets, x.pick = local, hotkeys, pick
}

// SetRelaying asks the grabbing source to relay (take the keyboard) or
// go to local use (give it back), as the hotkey does, from another
// goroutine (keyrelay switch). It does not wait (ModeChanged tells when
// the mode changes); a request made before the last one was taken
// replaces it. Without Grab it does nothing.
func (x *X11) SetRelaying(on bool) { x.relaying.request(on) }

// ModeChanged is closed at the next change of Relaying after the call.
func (x *X11) ModeChanged() <-chan struct{} { return x.relaying.Changed() }

// Relaying reports whether keys go to the receiver now.
func (x *X11) Relaying() bool { return x.relaying.Load() }

// Grabbing reports whether the source owns the keyboard (--grab), so that
// the status shows the mode.
func (x *X11) Grabbing() bool { return x.Grab }

// Locks is the lock state the receiver should have (keys.Locks).
func (x *X11) Locks() keys.Locks { return keys.Locks(x.locks.Load()) }

// CheckX11 checks what the X11 source needs: an X display, and RECORD
// unless it grabs.
func CheckX11(grab bool) error {
	c, err := dialX11()
	if err != nil {
		return err
	}
	defer c.Close()
	if !grab {
		if err := record.Init(c); err != nil {
			return fmt.Errorf("%w: the X server of DISPLAY=%s lacks the RECORD extension (%v); enable it (Xorg: Load \"record\" in the Module section), or use --grab, which needs no RECORD", ErrNoX11, os.Getenv("DISPLAY"), err)
		}
	}
	return nil
}

// CheckHook is CheckX11(false), for --input hook.
func CheckHook() error { return CheckX11(false) }

func dialX11() (*xgb.Conn, error) {
	xquiet.Quiet()
	display := os.Getenv("DISPLAY")
	if display == "" {
		return nil, fmt.Errorf("%w: DISPLAY is not set (the X11 source reads keys from an X session; use --input evdev or --input terminal elsewhere)", ErrNoX11)
	}
	type result struct {
		c   *xgb.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := xgb.NewConnDisplay(display)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("%w: cannot connect to DISPLAY=%s: %v", ErrNoX11, display, r.err)
		}
		return r.c, nil
	case <-time.After(3 * time.Second):
		go func() {
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, fmt.Errorf("%w: DISPLAY=%s did not answer within 3s", ErrNoX11, display)
	}
}

// x11Event is a key event read from the X server, or the end.
type x11Event struct {
	keycode xproto.Keycode
	down    bool
	state   uint16 // the modifiers as a press was made (which passive grab took it)
	err     error
	set     int8 // SetRelaying: 1 relay, -1 local use, 0 a key event
}

// Play relays key events until ctx is done or the X server goes away.
func (x *X11) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	c, err := dialX11()
	if err != nil {
		return err
	}
	defer c.Close()
	x.ctrl, x.display = c, os.Getenv("DISPLAY")
	x.root = xproto.Setup(c).DefaultScreen(c).Root
	if err := x.readModifiers(); err != nil {
		return err
	}
	x.readLocks()
	if !x.Grab {
		stream, err := xrecord.Open(c, x.display)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNoX11, err)
		}
		defer stream.Close()
		// Closing the stream is what ends a Next that waits.
		stop := context.AfterFunc(ctx, func() { stream.Close() })
		defer stop()
		x.relaying.Store(true)
		x.status("capturing keys of DISPLAY=%s → %s (keys act here too; Ctrl+C or SIGTERM ends)", x.display, x.Label)
		return x.relay(ctx, recordEvents(ctx, stream, x.display), emit, nil)
	}

	hotkey := x.Hotkey
	if len(hotkey) == 0 {
		hotkey, _ = ParseHotkey(DefaultHotkey)
	}
	grabs, err := x.hotkeyGrabs(hotkey, -1)
	if err != nil {
		return err
	}
	sw := &Switch{Hotkey: hotkey, Emit: emit}
	// Each destination's hotkey is grabbed in local use too, to take the
	// keyboard again for it as the toggle hotkey does.
	for i, h := range x.targets {
		sw.Targets = append(sw.Targets, Hotkey(h))
		if len(h) == 0 {
			continue
		}
		g, err := x.hotkeyGrabs(h, i)
		if err != nil {
			return err
		}
		for _, k := range g {
			if !slices.ContainsFunc(grabs, func(o keyGrab) bool { return o.key == k.key && o.mods == k.mods }) {
				grabs = append(grabs, k)
			}
		}
	}
	x.grabs = grabs
	if x.pick != nil {
		sw.OnTarget = func(i int) error { x.pick(i); return nil }
	}
	if x.localKey != nil {
		if err := xtest.Init(c); err != nil {
			x.status("the X server of DISPLAY=%s lacks the XTEST extension (%v): local keys cannot act here and are swallowed while relaying", x.display, err)
		} else {
			sw.Here, sw.ActHere = x.localKey, x.actHere
			x.status("local keys act here through XTEST, each as a tap once released (no hold under --grab)")
		}
	}
	sw.OnToggle = func(relaying bool) error {
		if err := x.own(relaying, grabs); err != nil {
			return err
		}
		if relaying {
			x.readLocks()
			x.status("relaying to %s: the keyboard is grabbed (%v for local use)", x.Label, hotkey)
		} else {
			// Keys are not seen in local use: their releases never come.
			sw.Forget()
			x.status("local use: keys act here (%v to relay to %s)", hotkey, x.Label)
		}
		return nil
	}
	// Keys repeat on the receiving system: the sender's own auto-repeat
	// must not come through (relay drops a press of a held key, and a
	// release amid a hold would restart the receiver's repeat delay).
	detectableAutoRepeat(c)
	events := make(chan x11Event, 64)
	go grabEvents(c, x.display, events)
	if err := x.own(true, grabs); err != nil {
		return err
	}
	// Relaying from the start, not from the first key: keyrelay switch
	// NAME at once must find the mode it asks for.
	x.relaying.Store(true)
	x.status("relaying to %s: the keyboard is grabbed (%v for local use; Ctrl+C or SIGTERM ends)", x.Label, hotkey)
	defer x.own(false, nil)
	req := x.relaying.requests()
	next := func() x11Event {
		select {
		case <-ctx.Done():
			return x11Event{err: ctx.Err()}
		case ev := <-events:
			return ev
		case on := <-req:
			return x11Event{set: map[bool]int8{true: 1, false: -1}[on]}
		}
	}
	return x.relay(ctx, next, emit, sw)
}

// relay turns the X key events next returns into key events, through sw
// when grabbing, until next returns an error: ctx's when ctx is done.
func (x *X11) relay(ctx context.Context, next func() x11Event, emit func(keys.Key, bool) error, sw *Switch) error {
	var held []xproto.Keycode // X's auto-repeat is a press of a held key
	for {
		ev := next()
		if ev.err != nil {
			if sw != nil && ctx.Err() != nil {
				sw.ReleaseAll()
			}
			return ev.err
		}
		if ev.set != 0 {
			if sw != nil && (ev.set > 0) == sw.Local {
				if err := sw.Toggle(); err != nil {
					return err
				}
				if sw.Local {
					held = held[:0] // keys are not seen in local use
				}
				x.relaying.Store(!sw.Local)
			}
			continue
		}
		if ev.down && slices.Contains(held, ev.keycode) {
			continue
		}
		if ev.down {
			held = append(held, ev.keycode)
		} else {
			held = slices.DeleteFunc(held, func(k xproto.Keycode) bool { return k == ev.keycode })
		}
		// Every keycode the evdev rules give a key is relayed as itself
		// (PROTOCOL.md §3.1): 92, XKB's <LVL3> (ISO_Level3_Shift, which
		// xdotool presses for AltGr), as the evdev-only key 84, which is
		// <LVL3> on the receiver too, not as AltRight, which is Alt_R on
		// a US receiver.
		code, ok := EvdevToHID(uint16(ev.keycode) - 8)
		if ev.keycode < 8 || !ok {
			x.status("X keycode %d has no key of its own (evdev %d): not sent", ev.keycode, int(ev.keycode)-8)
			continue
		}
		var err error
		switch {
		case sw == nil:
			err = emit(keys.Key(code), ev.down)
		case sw.Local && ev.down:
			// In local use only a hotkey's passive grab delivers a
			// press: its last key (the keys before it acted locally, and
			// were not seen); the grab it matched says which hotkey.
			if err = sw.Key(code, true); err == nil && sw.Local {
				if to := grabbedBy(x.grabs, ev.keycode, ev.state); to >= 0 {
					err = sw.Target(to)
				} else {
					err = sw.Toggle()
				}
			}
		default:
			err = sw.Key(code, ev.down)
		}
		if err != nil {
			return err
		}
		if sw != nil {
			if sw.Local {
				held = held[:0] // keys are not seen in local use
			}
			x.relaying.Store(!sw.Local)
		}
	}
}

// xGone is the error that ends the source when its X server goes away:
// send must stop (non-zero) so that a service manager restarts it.
func xGone(display string) error {
	return fmt.Errorf("%w: the X server of DISPLAY=%s went away (it stopped, or the session ended); no keys can be captured from it", ErrNoX11, display)
}

// recordEvents reads a RECORD stream's key events in the caller's
// goroutine: no hand-off to another goroutine on the way to emit. The
// stream ends with ctx's error once ctx is done (Play closes it then).
func recordEvents(ctx context.Context, s *xrecord.Stream, display string) func() x11Event {
	return func() x11Event {
		k, err := s.Next()
		switch {
		case err == nil:
			return x11Event{keycode: xproto.Keycode(k.Keycode), down: k.Down}
		case ctx.Err() != nil:
			return x11Event{err: ctx.Err()}
		case errors.Is(err, io.EOF):
			return x11Event{err: xGone(display)}
		}
		// A connection the server reset is gone as surely as one it
		// closed (which of the two a dying server leaves is a race): both
		// name the display, with the cause.
		return x11Event{err: fmt.Errorf("%w (%v)", xGone(display), err)}
	}
}

// detectableAutoRepeat asks the server (XKB's per-client flag
// DetectableAutoRepeat, a round trip) to send c an auto-repeat of a held
// key as a press alone, without the release before it, which relay then
// drops as the press of a held key. Without XKB, or if the server says
// no, auto-repeat comes as a release and a press at one time, which
// grabEvents drops when it sees both together.
func detectableAutoRepeat(c *xgb.Conn) bool {
	ext, err := xproto.QueryExtension(c, uint16(len("XKEYBOARD")), "XKEYBOARD").Reply()
	if err != nil || !ext.Present {
		return false
	}
	op := ext.MajorOpcode
	// XkbUseExtension 1.0, which a client must send before other XKB
	// requests.
	use := c.NewCookie(true, true)
	c.NewRequest([]byte{op, 0, 2, 0, 1, 0, 0, 0}, use)
	if r, err := use.Reply(); err != nil || len(r) < 2 || r[1] == 0 {
		return false
	}
	// XkbPerClientFlags: device XkbUseCoreKbd (0x100); change and value
	// DetectableAutoRepeat (1); no auto-reset controls. The reply's
	// value (bytes 12-15) says whether the flag is now set.
	req := []byte{op, 21, 7, 0, 0x00, 0x01, 0, 0}
	req = binary.LittleEndian.AppendUint32(req, 1) // change
	req = binary.LittleEndian.AppendUint32(req, 1) // value
	req = append(req, make([]byte, 12)...)         // ctrlsToChange, autoCtrls, autoCtrlsValues
	pcf := c.NewCookie(true, true)
	c.NewRequest(req, pcf)
	r, err := pcf.Reply()
	return err == nil && len(r) >= 16 && binary.LittleEndian.Uint32(r[12:])&1 != 0
}

// grabEvents forwards the key events a grab delivers. Without
// detectableAutoRepeat X's auto-repeat comes as a release and a press of
// the same key at the same time: both are dropped when they were read
// together.
func grabEvents(c *xgb.Conn, display string, events chan<- x11Event) {
	var next xgb.Event
	for {
		ev := next
		next = nil
		if ev == nil {
			e, err := c.WaitForEvent()
			if e == nil && err == nil {
				events <- x11Event{err: xGone(display)}
				return
			}
			if err != nil {
				continue // an X error of a request sent without waiting
			}
			ev = e
		}
		switch e := ev.(type) {
		case xproto.KeyPressEvent:
			events <- x11Event{keycode: e.Detail, down: true, state: e.State}
		case xproto.KeyReleaseEvent:
			n, err := c.PollForEvent()
			if p, ok := n.(xproto.KeyPressEvent); ok && err == nil && p.Detail == e.Detail && p.Time == e.Time {
				continue // auto-repeat
			}
			next = n
			events <- x11Event{keycode: e.Detail, down: false}
		}
	}
}

// keyGrab is one passive grab of a hotkey: a key with modifiers, for the
// toggle hotkey (to -1) or destination to's.
type keyGrab struct {
	key  xproto.Keycode
	mods uint16
	to   int
}

// grabbedBy is the destination whose hotkey's passive grab took a press of
// kc with the modifiers state, or -1 for the toggle hotkey's (or none):
// the grab of those exact modifiers, else one of any modifiers.
func grabbedBy(grabs []keyGrab, kc xproto.Keycode, state uint16) int {
	const mods = 0xff // Shift, Lock, Control, Mod1-5; the rest are buttons
	to := -1
	for _, g := range grabs {
		switch {
		case g.key != kc:
		case g.mods == state&mods:
			return g.to
		case g.mods == xproto.ModMaskAny:
			to = g.to
		}
	}
	return to
}

// x11Keycode is the X keycode of a physical key (evdev rules).
func x11Keycode(c keys.Code) (xproto.Keycode, bool) {
	info, ok := keys.Lookup(c)
	if !ok || info.Evdev == 0 || info.Evdev+8 > 255 {
		return 0, false
	}
	return xproto.Keycode(info.Evdev + 8), true
}

// hotkeyGrabs are the passive grabs that catch hotkey h (the toggle's for
// to -1, else destination to's) in local use: a key of it pressed while the
// others, all modifiers, are down. A one-key hotkey is grabbed with any
// modifiers. Caps Lock and Num Lock must not matter, so each grab is made
// with and without them.
func (x *X11) hotkeyGrabs(h Hotkey, to int) ([]keyGrab, error) {
	kcs := make([]xproto.Keycode, len(h))
	for i, c := range h {
		kc, ok := x11Keycode(c)
		if !ok {
			return nil, fmt.Errorf("%w: hotkey %v: %v has no X keycode", ErrHotkey, h, c)
		}
		kcs[i] = kc
	}
	if len(kcs) == 1 {
		return []keyGrab{{kcs[0], xproto.ModMaskAny, to}}, nil
	}
	var grabs []keyGrab
	for i, kc := range kcs {
		var mods uint16
		all := true
		for j, o := range kcs {
			if j == i {
				continue
			}
			m := x.modOf[o]
			if m == 0 {
				all = false
				break
			}
			mods |= m
		}
		if !all {
			continue
		}
		for _, extra := range []uint16{0, xproto.ModMaskLock, x.numMask, xproto.ModMaskLock | x.numMask} {
			g := keyGrab{kc, mods | extra, to}
			if !slices.Contains(grabs, g) {
				grabs = append(grabs, g)
			}
		}
	}
	if len(grabs) == 0 {
		return nil, fmt.Errorf("%w: hotkey %v: with --input x11 --grab, all keys of a hotkey but one must be modifiers (Shift, Control, Alt, Meta), so the hotkey can be caught while the keyboard acts locally; one key alone (ScrollLock, Pause) works too", ErrHotkey, h)
	}
	return grabs, nil
}

// own takes the keyboard (an active grab) to relay, or gives it back and
// grabs only the hotkey for local use. grabs nil: give everything back.
func (x *X11) own(relaying bool, grabs []keyGrab) error {
	c := x.ctrl
	if !relaying {
		xproto.UngrabKeyboard(c, xproto.TimeCurrentTime)
		for _, g := range grabs {
			if err := xproto.GrabKeyChecked(c, true, x.root, g.mods, g.key, xproto.GrabModeAsync, xproto.GrabModeAsync).Check(); err != nil {
				if g.to >= 0 && g.to < len(x.targets) {
					return fmt.Errorf("%w: the destination hotkey %v is taken by another program (%v); give that destination another (hotkey = in its [[send.to]] table)", ErrNoX11, Hotkey(x.targets[g.to]), err)
				}
				return fmt.Errorf("%w: the hotkey is taken by another program (%v); choose another with --hotkey", ErrNoX11, err)
			}
		}
		// A round trip, so the keyboard is free before we report it.
		xproto.GetInputFocus(c).Reply()
		return nil
	}
	for _, g := range grabs {
		xproto.UngrabKey(c, g.key, x.root, g.mods)
	}
	// Another client may hold the keyboard for a moment (a menu, the
	// window manager while a shortcut is down): try for 2 s.
	deadline := time.Now().Add(2 * time.Second)
	for {
		r, err := xproto.GrabKeyboard(c, false, x.root, xproto.TimeCurrentTime, xproto.GrabModeAsync, xproto.GrabModeAsync).Reply()
		if err != nil {
			return fmt.Errorf("%w: unable to grab the keyboard of DISPLAY=%s: %v", ErrNoX11, x.display, err)
		}
		if r.Status == xproto.GrabStatusSuccess {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: another program holds the keyboard of DISPLAY=%s (grab status %d: a screen locker, a menu, a game?); close it, or run without --grab", ErrNoX11, x.display, r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// actHere gives a local key (a destination's local-keys) to the desktop,
// which the grab keeps every key from: once it is released, a fake press
// and release of it through XTEST, delivered as the keyboard is let go for
// that moment (fake events go to the grabbing client while a grab is
// active), then the keyboard is taken again. Not at its press: the X
// server drops a press of a key already down on the master keyboard (the
// Xorg server's Xi/exevents.c, UpdateDeviceState: "don't allow ddx to
// generate multiple downs"), and this one is, by the grab's own press. A
// program with a passive grab of the key (a desktop's media-key daemon)
// gets it as from the keyboard, its grab ending with the fake release, so
// the keyboard is free to take again at once.
func (x *X11) actHere(code keys.Code, down bool) error {
	kc, ok := x11Keycode(code)
	if down || !ok {
		return nil
	}
	c := x.ctrl
	xproto.UngrabKeyboard(c, xproto.TimeCurrentTime)
	xtest.FakeInput(c, xproto.KeyPress, byte(kc), xproto.TimeCurrentTime, x.root, 0, 0, 0)
	xtest.FakeInput(c, xproto.KeyRelease, byte(kc), xproto.TimeCurrentTime, x.root, 0, 0, 0)
	// A round trip: the fake events are delivered before the grab is
	// asked for again.
	if _, err := xproto.GetInputFocus(c).Reply(); err != nil {
		return fmt.Errorf("%w: passing the local key %v to DISPLAY=%s: %v", ErrNoX11, code, x.display, err)
	}
	return x.own(true, nil)
}

// readModifiers reads which modifier bit each modifier key sets, and Num
// Lock's.
func (x *X11) readModifiers() error {
	r, err := xproto.GetModifierMapping(x.ctrl).Reply()
	if err != nil {
		return fmt.Errorf("%w: unable to read the modifier map of DISPLAY=%s: %v", ErrNoX11, x.display, err)
	}
	x.modOf = map[xproto.Keycode]uint16{}
	per := int(r.KeycodesPerModifier)
	for i, kc := range r.Keycodes {
		if kc != 0 && per > 0 {
			x.modOf[kc] |= 1 << (i / per)
		}
	}
	if kc, ok := x11Keycode(keys.NumLock); ok {
		x.numMask = x.modOf[kc]
	}
	return nil
}

// readLocks reads the local Caps Lock and Num Lock (a round trip) as
// relaying (re)starts, and flips the epoch.
func (x *X11) readLocks() {
	r, err := xproto.QueryPointer(x.ctrl, x.root).Reply()
	if err != nil {
		return
	}
	l := keys.LocksKnown | (keys.Locks(x.locks.Load())^keys.LockEpoch)&keys.LockEpoch
	if r.Mask&xproto.ModMaskLock != 0 {
		l |= keys.LockCaps
	}
	if x.numMask != 0 && r.Mask&x.numMask != 0 {
		l |= keys.LockNum
	}
	x.locks.Store(uint32(l))
}

func (x *X11) status(format string, args ...any) {
	if x.Status != nil {
		fmt.Fprintf(x.Status, "keyrelay send: "+format+"\n", args...)
	}
}
