package inject

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/keyrelay/keyrelay/inject/internal/guard"
	"github.com/keyrelay/keyrelay/internal/usb/hidkbd"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// hidgWriteTimeout bounds one report's write. The gadget takes a report
// only once the host has read the one before (the kernel's f_hidg keeps
// one in flight), so a host that stops polling (asleep, or nothing reads
// the keyboard) would block recv for good.
const hidgWriteTimeout = time.Second

// hidgDevice is what Hidg needs of /dev/hidgN (an *os.File; tests give a
// fake): input reports written, LED output reports read.
type hidgDevice interface {
	io.ReadWriteCloser
	SetWriteDeadline(t time.Time) error
}

// Hidg types as a USB keyboard: the Linux USB gadget's HID function
// (/dev/hidg0, made by `keyrelay gadget setup`) on a board with a USB
// device port, plugged into the computer to type into. That computer runs
// nothing of keyrelay: a BIOS, a login screen or a locked-down machine
// is typed into as by any keyboard.
//
// Each key event changes the held-key state (hidkbd.Keyboard) and writes
// the whole state as one report, so a report the host missed is made good
// by the next, and the report after the last key up says nothing is held.
// Physical keys type what the target's layout puts on them. A character
// is typed through the layout the user names for the target (recv
// --layout, SetLayout): the keys that layout needs, Shift, AltGr and dead
// keys included, each change its own report. Without one, or for a
// character that layout lacks, it is reported once and skipped.
//
// The host's LED output reports are read as they come: SetLocks taps Caps
// Lock and Num Lock where the host's lights differ from the sender's lock
// state. Until the host has sent one, its lights are taken to be off, as a
// keyboard's are when plugged in.
//
// Inject, SetLocks and Close are called from one goroutine at a time (the
// receiver's); the LED reader is Hidg's own.
type Hidg struct {
	path    string
	dev     hidgDevice
	logf    func(format string, args ...any)
	skipped skipped
	layout  *xkblayout.Layout // characters are typed through it; nil: none

	kb        hidkbd.Keyboard
	last      hidkbd.Report
	written   bool // last is what the host has
	attempted bool // a report was written, or tried: the host may hold keys
	failing   bool // the last write failed, and that was logged

	mu   sync.Mutex
	leds hidkbd.LEDs
	done chan struct{} // closed when the LED reader ends

	// guard sends the host an empty report if recv ends while the host
	// may hold keys: mayHold (its page) says so (hidg.go).
	guard   *guard.Guard
	mayHold []byte
}

// NewHidg opens path (DefaultHidgPath) and starts reading the host's LED
// reports. Nothing is written until the first key: a host that has not
// configured the gadget yet (the cable not plugged) is no error here.
func NewHidg(path string, logf func(format string, args ...any)) (*Hidg, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, hidgOpenError(path, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a character device: name the gadget's device (/dev/hidgN) with --device", ErrNoHidg, path)
	}
	h := newHidg(path, f, logf)
	h.guard, h.mayHold = startGuard("hidg", hidgGuardSize, logf, path)
	return h, nil
}

func newHidg(path string, dev hidgDevice, logf func(string, ...any)) *Hidg {
	h := &Hidg{path: path, dev: dev, logf: logf, done: make(chan struct{}), mayHold: make([]byte, hidgGuardSize)}
	go h.readLEDs()
	return h
}

// readLEDs keeps the host's last LED report until the device is closed.
func (h *Hidg) readLEDs() {
	defer close(h.done)
	buf := make([]byte, 64)
	for {
		n, err := h.dev.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && h.logf != nil {
				h.logf("reading the USB host's LED reports from %s: %v: Caps Lock and Num Lock are matched to the last ones read", h.path, err)
			}
			return
		}
		l, err := hidkbd.ParseLEDs(buf[:n])
		if err != nil {
			continue // not ours to act on; the next report says it all again
		}
		h.mu.Lock()
		h.leds = l
		h.mu.Unlock()
	}
}

// SetLayout names the target's layout, which characters are typed
// through (recv --layout); nil: characters are skipped.
func (h *Hidg) SetLayout(l *xkblayout.Layout) { h.layout = l }

// Inject presses or releases one physical key, or types a character
// through the layout.
func (h *Hidg) Inject(k Event) error {
	if r, ok := k.Key.Char(); ok && h.layout != nil {
		return h.char(k, r)
	}
	code, ok := k.Key.Code()
	if !ok {
		return h.skipped.report(h.logf, "hidg", k.Key, charWhyHidg)
	}
	if k.Down {
		if err := h.kb.Press(code); err != nil {
			return h.skipped.report(h.logf, "hidg", k.Key, "no USB keyboard usage of its own")
		}
	} else {
		h.kb.Release(code)
	}
	return h.flush()
}

// char types r whole when it goes down (its release has nothing left to
// do): each press and release is a report of its own, so that the host
// sees the modifiers before the key, as from a keyboard.
func (h *Hidg) char(k Event, r rune) error {
	if !k.Down {
		return nil
	}
	held := h.kb.Held()
	h.mu.Lock()
	caps := h.leds.Locks()&keys.LockCaps != 0
	h.mu.Unlock()
	presses, ok := charPresses(h.layout, r, func(c keys.Code) bool { return containsCode(held, c) }, caps)
	if !ok {
		return h.skipped.report(h.logf, "hidg", k.Key, charWhyLayout(h.layout))
	}
	for _, p := range presses {
		if p.down {
			if err := h.kb.Press(p.code); err != nil {
				return h.skipped.report(h.logf, "hidg", k.Key, "a key of its in the layout has no USB keyboard usage")
			}
		} else {
			h.kb.Release(p.code)
		}
		if err := h.flush(); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the held-key state when the host does not have it yet.
func (h *Hidg) flush() error {
	r := h.kb.Report()
	if h.written && r == h.last {
		return nil // rollover on rollover: the host has it
	}
	h.attempted = true
	empty := r == hidkbd.Report{}
	if !empty {
		h.mayHold[0] = 1 // before: the host may have it once written
	}
	h.dev.SetWriteDeadline(time.Now().Add(hidgWriteTimeout))
	_, err := h.dev.Write(r[:])
	if err != nil {
		// The next report is written whatever it says: the host may have
		// none of this state.
		h.written = false
		err = h.writeError(err)
		// Said once, not per key (the receiver counts the failures and
		// names no key without --debug): this error names no key.
		if !h.failing && h.logf != nil && !errors.Is(err, ErrGone) {
			h.logf("%v; keys are not typed until it does (said once)", err)
		}
		h.failing = true
		return err
	}
	if h.failing && h.logf != nil {
		h.logf("the USB host reads the keyboard gadget %s again: keys are typed", h.path)
	}
	h.failing = false
	h.last, h.written = r, true
	if empty {
		h.mayHold[0] = 0
	}
	return nil
}

// writeError says what a failed report write means. A host that has not
// configured the gadget (no cable, the host off or asleep) or does not
// read it is no reason to stop: the next report, once it reads again,
// carries the whole state.
func (h *Hidg) writeError(err error) error {
	switch {
	case errors.Is(err, syscall.ESHUTDOWN):
		return fmt.Errorf("the USB host has not configured the keyboard gadget %s (is its cable in a computer's USB port, and that computer on and awake? is the gadget bound to a UDC: keyrelay gadget setup?)", h.path)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the USB host did not read the keyboard gadget %s within %v (asleep, or nothing there reads the keyboard)", h.path, hidgWriteTimeout)
	case errors.Is(err, syscall.ENODEV), errors.Is(err, os.ErrClosed):
		return fmt.Errorf("the keyboard gadget %s went away (%v): keys can no longer be typed here; %w", h.path, err, ErrGone)
	}
	return fmt.Errorf("writing a keyboard report to %s: %w", h.path, err)
}

// SetLocks makes the host's Caps Lock and Num Lock what l says by tapping
// those keys where the host's LEDs differ (PROTOCOL.md §3.2), unless the
// sender holds the lock key: then it decides.
func (h *Hidg) SetLocks(l keys.Locks, _ uint64) error {
	h.mu.Lock()
	have := h.leds.Locks()
	h.mu.Unlock()
	held := h.kb.Held()
	for _, lk := range []struct {
		bit  keys.Locks
		code keys.Code
	}{{keys.LockCaps, keys.CapsLock}, {keys.LockNum, keys.NumLock}} {
		if l&lk.bit == have&lk.bit || containsCode(held, lk.code) {
			continue
		}
		for _, down := range []bool{true, false} {
			if down {
				h.kb.Press(lk.code)
			} else {
				h.kb.Release(lk.code)
			}
			if err := h.flush(); err != nil {
				return fmt.Errorf("setting %v on the USB host: %w", lk.code, err)
			}
		}
	}
	return nil
}

func containsCode(cs []keys.Code, c keys.Code) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// Close tells the host nothing is held, unless it knows already, and
// closes the device. The LED reader ends with it: the device is pollable,
// so closing it ends a read under way. The guard ends last: if the empty
// report could not be written, it tries once more.
func (h *Hidg) Close() error {
	defer stopGuard(h.guard, h.logf)
	var err error
	h.kb.ReleaseAll()
	if h.attempted {
		err = h.flush()
	}
	cerr := h.dev.Close()
	select {
	case <-h.done:
	case <-time.After(hidgWriteTimeout):
		// A device that is not pollable blocks the read in the kernel,
		// and the process is about to end anyway.
	}
	return errors.Join(err, cerr)
}

// CheckHidg says whether path is the USB keyboard gadget's device and this
// user may open it (doctor), without writing to it.
func CheckHidg(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", hidgOpenError(path, err)
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		return "", fmt.Errorf("%w: %s is not a character device, so not the gadget's: set up the USB keyboard gadget (sudo keyrelay gadget setup) and name its device (/dev/hidgN) with recv --device", ErrNoHidg, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", hidgOpenError(path, err)
	}
	f.Close()
	return path + " is a character device this user can open (whether a computer is at the other end of the cable shows at the first key)", nil
}

// A USB host keeps the last report the gadget sent until the next: a recv
// killed while a report says a key is down would leave it down there, and
// the host's keyboard driver auto-repeating it. So Hidg keeps, in its
// guard's page, whether the host may hold keys (a report with keys was
// written, or tried, and no empty one written since), and the guard then
// sends the empty report (emptyHidgReport).

// hidgGuardSize is the size of Hidg's part of the guard's page: one byte,
// 1 while the host may hold keys.
const hidgGuardSize = 1

// emptyHidgReport is Hidg's guard for the gadget's device args[0]: it
// opens the device at once, and at the end, when page says the host may
// hold keys, writes the 8-byte report with none, waiting up to
// hidgWriteTimeout for the host to take it.
func emptyHidgReport(args []string) guard.Undo {
	if len(args) != 1 {
		return func([]byte) (string, error) { return "", nil }
	}
	path := args[0]
	f, openErr := os.OpenFile(path, os.O_WRONLY, 0)
	return func(page []byte) (string, error) {
		if page[0] == 0 {
			return "", nil
		}
		if openErr != nil {
			return "", fmt.Errorf("opening %s: %w", path, openErr)
		}
		f.SetWriteDeadline(time.Now().Add(hidgWriteTimeout))
		if _, err := f.Write(make([]byte, 8)); err != nil {
			return "", fmt.Errorf("writing the empty report to %s (the USB host may keep the last keys down): %w", path, err)
		}
		return "sent the USB host an empty keyboard report through " + path + " (it would have kept the last report's keys down, auto-repeating)", nil
	}
}
