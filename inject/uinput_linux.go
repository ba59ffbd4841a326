package inject

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/keyrelay/keyrelay/internal/linux/evdev"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// uinputKeyboard is what Uinput needs of its virtual keyboard
// (*evdev.Virtual; tests give a broken one).
type uinputKeyboard interface {
	Write(evs ...evdev.Event) error
	Read(evs []evdev.Event) (int, error)
	Close() error
}

// Uinput presses keys through a virtual keyboard made with the Linux uinput
// device: it works without X (Wayland, the console, headless machines).
// The keyboard is one as a real one is seen: the kernel auto-repeats a held
// key (EV_REP), and it has Num, Caps and Scroll Lock LEDs, lit by whoever
// owns the lock state (the console, X, a compositor), which Uinput reads
// back so that SetLocks can make Caps and Num Lock follow the sender.
// The kernel has no keyboard layout, so a character (from a terminal or a
// script's type) is typed only through a layout the user names for this
// machine (recv --layout, SetLayout): the keys that layout needs, Shift,
// AltGr and dead keys included. Without one, or for a character that
// layout lacks, it is reported once and skipped, like a key with no evdev
// code, and nothing else is typed in its place.
//
// Inject, SetLocks and Close are called from one goroutine at a time (the
// receiver's); the LED reader is Uinput's own.
type Uinput struct {
	path    string
	kb      uinputKeyboard
	logf    func(format string, args ...any)
	skipped skipped
	down    map[int]bool      // evdev codes held
	layout  *xkblayout.Layout // characters are typed through it; nil: none

	mu   sync.Mutex
	leds keys.Locks    // Caps and Num Lock as the LEDs show them
	done chan struct{} // closed when the LED reader ends
}

// NewUinput opens path (DefaultUinputPath) and creates the virtual keyboard.
func NewUinput(path string, logf func(format string, args ...any)) (*Uinput, error) {
	// Opened first to tell the user what to do when it cannot be.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, uinputError(path, err)
	}
	f.Close()
	kb, err := evdev.CreateKeyboard(path, UinputName, MaxUinputKey)
	if err != nil {
		return nil, fmt.Errorf("%w: unable to create a virtual keyboard on %s: %v", ErrNoUinput, path, err)
	}
	return newUinput(path, kb, logf), nil
}

func newUinput(path string, kb uinputKeyboard, logf func(string, ...any)) *Uinput {
	u := &Uinput{path: path, kb: kb, logf: logf, down: map[int]bool{}, done: make(chan struct{})}
	go u.readLEDs()
	return u
}

// readLEDs follows the keyboard's Caps and Num Lock LEDs until it is
// closed. The kernel tells a new keyboard only the LEDs that are on (the
// input core passes on changes), so off is right until told otherwise.
func (u *Uinput) readLEDs() {
	defer close(u.done)
	evs := make([]evdev.Event, 16)
	for {
		n, err := u.kb.Read(evs)
		if err != nil {
			return
		}
		u.mu.Lock()
		for _, e := range evs[:n] {
			if e.Type != evdev.EvLED {
				continue
			}
			var bit keys.Locks
			switch e.Code {
			case evdev.LEDCapsLock:
				bit = keys.LockCaps
			case evdev.LEDNumLock:
				bit = keys.LockNum
			}
			if e.Value != 0 {
				u.leds |= bit
			} else {
				u.leds &^= bit
			}
		}
		u.mu.Unlock()
	}
}

// SetLayout names the layout characters are typed through (recv
// --layout); nil: characters are skipped.
func (u *Uinput) SetLayout(l *xkblayout.Layout) { u.layout = l }

// Inject presses or releases one key, or types a character through the
// layout.
func (u *Uinput) Inject(k Event) error {
	if r, ok := k.Key.Char(); ok {
		return u.char(k, r)
	}
	code, ok := k.Key.Code()
	if !ok {
		return u.skipped.report(u.logf, "uinput", k.Key, charWhyUinput)
	}
	ev, ok := EvdevCode(code)
	if !ok {
		return u.skipped.report(u.logf, "uinput", k.Key, "no evdev key code")
	}
	return u.key(ev, k.Down)
}

// char types r whole when it goes down (its release has nothing left to
// do): its presses, with the modifiers the sender holds released around
// it and back after.
func (u *Uinput) char(k Event, r rune) error {
	if u.layout == nil {
		return u.skipped.report(u.logf, "uinput", k.Key, charWhyUinput)
	}
	if !k.Down {
		return nil
	}
	held := func(c keys.Code) bool {
		ev, ok := EvdevCode(c)
		return ok && u.down[ev]
	}
	u.mu.Lock()
	caps := u.leds&keys.LockCaps != 0
	u.mu.Unlock()
	presses, ok := charPresses(u.layout, r, held, caps)
	if !ok {
		return u.skipped.report(u.logf, "uinput", k.Key, charWhyLayout(u.layout))
	}
	for _, p := range presses {
		ev, ok := EvdevCode(p.code)
		if !ok {
			return u.skipped.report(u.logf, "uinput", k.Key, "a key of its in the layout has no evdev code")
		}
		if err := u.key(ev, p.down); err != nil {
			return err
		}
	}
	return nil
}

func (u *Uinput) key(ev int, down bool) error {
	value := int32(0)
	if down {
		value = 1
	}
	if err := u.kb.Write(evdev.Event{Type: evdev.EvKey, Code: uint16(ev), Value: value}); err != nil {
		// The code is in range (EvdevCode), so only the device can fail
		// a write: the virtual keyboard no longer types anything, and
		// recv must stop, not ack keys it cannot type.
		return fmt.Errorf("the virtual keyboard %q on %s stopped taking keys (%v): keys can no longer be typed here; %w", UinputName, u.path, err, ErrGone)
	}
	if down {
		u.down[ev] = true
	} else {
		delete(u.down, ev)
	}
	return nil
}

// SetLocks makes Caps Lock and Num Lock what l says by tapping those keys
// where the keyboard's LEDs differ (PROTOCOL.md §3.2), unless the sender
// holds the lock key: then it decides.
func (u *Uinput) SetLocks(l keys.Locks, _ uint64) error {
	u.mu.Lock()
	have := u.leds
	u.mu.Unlock()
	for _, lk := range []struct {
		bit  keys.Locks
		code keys.Code
	}{{keys.LockCaps, keys.CapsLock}, {keys.LockNum, keys.NumLock}} {
		ev, ok := EvdevCode(lk.code)
		if !ok || l&lk.bit == have&lk.bit || u.down[ev] {
			continue
		}
		for _, down := range []bool{true, false} {
			if err := u.key(ev, down); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close destroys the virtual keyboard; the kernel releases its keys.
func (u *Uinput) Close() error {
	err := u.kb.Close()
	<-u.done
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}
