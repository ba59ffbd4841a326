package capture

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// The evdev source against a fake /dev/input: the kernel's part (grabs,
// key state, hotplug) is modelled here; the VM harness (vmtest) runs the
// real one. Every test runs in a synctest bubble, so "after this event"
// is synctest.Wait: every goroutine of the source blocked again.

type fakeEvdev struct {
	mu    sync.Mutex
	devs  map[string]*fakeDev
	watch chan string
}

type fakeDev struct {
	path, name string
	keyboard   bool
	denied     bool
	evs        chan []evdevEvent
	gone       chan struct{}

	mu      sync.Mutex
	down    map[uint16]bool
	leds    keys.Locks
	hasLEDs bool
	grabbed bool
	grabErr error
	opened  int // handles open now
}

func newFakeEvdev() *fakeEvdev {
	return &fakeEvdev{devs: map[string]*fakeDev{}, watch: make(chan string)}
}

// add makes a device; a keyboard unless told otherwise.
func (f *fakeEvdev) add(path, name string, keyboard bool) *fakeDev {
	d := &fakeDev{path: path, name: name, keyboard: keyboard, evs: make(chan []evdevEvent),
		gone: make(chan struct{}), down: map[uint16]bool{}, hasLEDs: keyboard}
	f.mu.Lock()
	f.devs[path] = d
	f.mu.Unlock()
	return d
}

func (f *fakeEvdev) Open(path string) (evdevDev, evdevInfo, error) {
	f.mu.Lock()
	d, ok := f.devs[path]
	f.mu.Unlock()
	switch {
	case !ok:
		return nil, evdevInfo{}, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	case d.denied:
		return nil, evdevInfo{}, &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
	}
	d.mu.Lock()
	d.opened++
	d.mu.Unlock()
	return &fakeHandle{d: d, closed: make(chan struct{})}, evdevInfo{Name: d.name, Keyboard: d.keyboard, Keys: true}, nil
}

func (f *fakeEvdev) List() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.devs)), nil
}

func (f *fakeEvdev) Watch() (evdevWatch, error) { return &fakeWatch{f.watch, make(chan struct{})}, nil }

type fakeWatch struct {
	c      chan string
	closed chan struct{}
}

func (w *fakeWatch) Next() (string, error) {
	select {
	case p := <-w.c:
		return p, nil
	case <-w.closed:
		return "", os.ErrClosed
	}
}

func (w *fakeWatch) Close() error { close(w.closed); return nil }

type fakeHandle struct {
	d         *fakeDev
	closed    chan struct{}
	closeOnce sync.Once
	grabbed   bool
}

func (h *fakeHandle) Read(evs []evdevEvent) (int, error) {
	select {
	case b := <-h.d.evs:
		return copy(evs, b), nil
	case <-h.d.gone:
		return 0, syscall.ENODEV
	case <-h.closed:
		return 0, os.ErrClosed
	}
}

func (h *fakeHandle) KeysDown() ([]uint16, error) {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	var out []uint16
	for c, down := range h.d.down {
		if down {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (h *fakeHandle) LEDs() (keys.Locks, bool, error) {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	return h.d.leds, h.d.hasLEDs, nil
}

func (h *fakeHandle) Grab() error {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	switch {
	case h.d.grabErr != nil:
		return h.d.grabErr
	case h.d.grabbed && !h.grabbed:
		return syscall.EBUSY
	}
	h.d.grabbed, h.grabbed = true, true
	return nil
}

func (h *fakeHandle) Ungrab() error {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if h.grabbed {
		h.d.grabbed, h.grabbed = false, false
	}
	return nil
}

// Close drops the handle's grab, as the kernel does with the file.
func (h *fakeHandle) Close() error {
	h.closeOnce.Do(func() {
		h.Ungrab()
		h.d.mu.Lock()
		h.d.opened--
		h.d.mu.Unlock()
		close(h.closed)
	})
	return nil
}

// key presses (1), repeats (2) or releases (0) code on the device, as the
// kernel reports it: the key state first, then the event and a SYN_REPORT.
func (d *fakeDev) key(code uint16, v int32) {
	d.mu.Lock()
	d.down[code] = v != 0
	d.mu.Unlock()
	d.evs <- []evdevEvent{{evKey, code, v}, {evSyn, synReport, 0}}
}

// stateUp shows code released in the key state, with the release itself
// not handed to this reader: what it reads is a SYN_REPORT alone (the
// kernel between clearing the bit and the SYN_REPORT, or a release some
// input filter swallowed).
func (d *fakeDev) stateUp(code uint16) {
	d.mu.Lock()
	d.down[code] = false
	d.mu.Unlock()
	d.evs <- []evdevEvent{{evSyn, synReport, 0}}
}

func (d *fakeDev) isGrabbed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.grabbed
}

func (d *fakeDev) openHandles() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opened
}

// evdevPlay runs an Evdev source on sys until the test ends it, and
// records what it relays ("+KeyA") and says.
type evdevPlay struct {
	e      *Evdev
	cancel context.CancelFunc
	done   chan error

	mu     sync.Mutex
	sent   []string
	status strings.Builder
}

func (p *evdevPlay) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status.Write(b)
}

// take returns what was relayed since the last take.
func (p *evdevPlay) take() string {
	synctest.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.sent, " ")
	p.sent = nil
	return s
}

func (p *evdevPlay) said() string {
	synctest.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status.String()
}

func startEvdev(t *testing.T, sys *fakeEvdev, e *Evdev) *evdevPlay {
	t.Helper()
	e.sys = sys
	p := &evdevPlay{e: e, done: make(chan error, 1)}
	e.Status = p
	ctx, cancel := context.WithCancel(t.Context())
	p.cancel = cancel
	go func() {
		p.done <- e.Play(ctx, func(k keys.Key, down bool) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			sign := "-"
			if down {
				sign = "+"
			}
			p.sent = append(p.sent, sign+k.String())
			return nil
		})
	}()
	synctest.Wait()
	return p
}

// stop ends Play and returns its error.
func (p *evdevPlay) stop() error {
	p.cancel()
	return <-p.done
}

// TestEvdevReadsKeyboards (Evdev's doc): every device with the letter keys
// is read, but not a mouse nor recv's own uinput keyboard (reading it would
// send back what recv types); true downs and ups, auto-repeat dropped; a key
// held on two keyboards is one press; without --grab nothing is grabbed; the
// lock state comes from the LEDs; stopping closes every device.
func TestEvdevReadsKeyboards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb1 := sys.add("/dev/input/event3", "AT keyboard", true)
		kb1.leds = keys.LockNum
		kb2 := sys.add("/dev/input/event7", "USB keyboard", true)
		mouse := sys.add("/dev/input/event4", "USB mouse", false)
		own := sys.add("/dev/input/event9", UinputName, true)
		p := startEvdev(t, sys, &Evdev{Label: "127.0.0.1:7575"})

		if s := p.said(); !strings.Contains(s, "reading /dev/input/event3 (AT keyboard), /dev/input/event7 (USB keyboard), and keyboards plugged in later") || !strings.Contains(s, "not grabbed") {
			t.Errorf("status: %q", s)
		}
		if mouse.openHandles() != 0 || own.openHandles() != 0 {
			t.Errorf("the mouse (%d) or recv's own keyboard (%d) is kept open", mouse.openHandles(), own.openHandles())
		}
		if l := p.e.Locks(); l&^keys.LockEpoch != keys.LocksKnown|keys.LockNum {
			t.Errorf("Locks = %v, want num from the LEDs", l)
		}
		kb1.key(evShift, 1)
		kb1.key(evA, 1)
		kb1.key(evA, 2)
		kb1.key(evA, 2)
		kb1.key(evA, 0)
		synctest.Wait()     // two devices, two readers: one at a time, for the order
		kb2.key(evShift, 1) // the other keyboard's left Shift
		synctest.Wait()
		kb1.key(evShift, 0) // still held on kb2
		synctest.Wait()
		kb2.key(evB, 1)
		kb2.key(evB, 0)
		kb2.key(evShift, 0)
		if got, want := p.take(), "+ShiftLeft +KeyA -KeyA +KeyB -KeyB -ShiftLeft"; got != want {
			t.Errorf("relayed %q, want %q", got, want)
		}
		if kb1.isGrabbed() || kb2.isGrabbed() {
			t.Error("grabbed without --grab")
		}
		if !p.e.Relaying() {
			t.Error("Relaying() is false")
		}
		if err := p.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Play = %v", err)
		}
		if kb1.openHandles() != 0 || kb2.openHandles() != 0 {
			t.Error("a device is left open after Play")
		}
	})
}

// TestEvdevGrabAndHotkey (Evdev's and Switch's docs): with --grab the
// keyboard is grabbed while relaying, once no key is down (so the local side
// sees the release of every key it saw pressed); the hotkey gives it back
// (releasing at the receiver what was held there) and takes it again; the
// hotkey reaches neither side; the lock state is read again from the LEDs,
// with a new epoch, when relaying resumes.
func TestEvdevGrabAndHotkey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		kb.down[evShift] = true // held as send starts: Enter of the command line, say
		hk, _ := ParseHotkey("ScrollLock")
		p := startEvdev(t, sys, &Evdev{Grab: true, Hotkey: hk})
		if kb.isGrabbed() {
			t.Fatal("grabbed while a key is down: the local side would never see it go up")
		}
		kb.key(evShift, 0) // its press was not relayed: nor is its release
		if got := p.take(); got != "" || !kb.isGrabbed() {
			t.Fatalf("after the release: relayed %q, grabbed %v; want nothing, grabbed", got, kb.isGrabbed())
		}
		if !strings.Contains(p.said(), "relaying (grabbed; ScrollLock for local use)") {
			t.Errorf("status: %q", p.said())
		}
		epoch := p.e.Locks() & keys.LockEpoch

		kb.key(evA, 1)
		kb.key(evScroll, 1) // the hotkey, KeyA held
		if got := p.take(); got != "+KeyA -KeyA" {
			t.Errorf("relayed %q, want +KeyA then its release at the switch", got)
		}
		if kb.isGrabbed() || p.e.Relaying() {
			t.Fatal("still grabbed or relaying after the hotkey")
		}
		kb.key(evScroll, 0)
		kb.key(evA, 0)
		kb.key(evB, 1) // local use: acts here only
		kb.key(evB, 0)
		kb.mu.Lock()
		kb.leds = keys.LockCaps // Caps Lock turned on locally
		kb.mu.Unlock()
		if got := p.take(); got != "" {
			t.Errorf("in local use relayed %q", got)
		}
		if !strings.Contains(p.said(), "local use (ScrollLock to relay)") {
			t.Errorf("status: %q", p.said())
		}

		kb.key(evScroll, 1)
		synctest.Wait()
		if kb.isGrabbed() {
			t.Error("grabbed again with the hotkey still down")
		}
		if !p.e.Relaying() {
			t.Error("not relaying after the hotkey again")
		}
		if l := p.e.Locks(); l&^keys.LockEpoch != keys.LocksKnown|keys.LockCaps || l&keys.LockEpoch == epoch {
			t.Errorf("Locks after resuming = %v (epoch was %v): want caps and a new epoch", l, epoch)
		}
		// The kernel clears the key's state bit before it hands the release
		// to readers (at the SYN_REPORT): a batch read in between must not
		// lead to a grab, or the local system, whose reader would then never
		// get the release, keeps ScrollLock down.
		kb.stateUp(evScroll)
		synctest.Wait()
		if kb.isGrabbed() {
			t.Error("grabbed with the hotkey's release not yet delivered to other readers")
		}
		kb.evs <- []evdevEvent{{evKey, evScroll, 0}, {evSyn, synReport, 0}}
		synctest.Wait()
		if !kb.isGrabbed() {
			t.Error("not grabbed again once the hotkey was released")
		}
		kb.key(evB, 1)
		kb.key(evB, 0)
		if got := p.take(); got != "+KeyB -KeyB" {
			t.Errorf("after resuming relayed %q", got)
		}

		// A release the state shows but readers never get (a kernel
		// filter swallowed it): the state is believed after
		// releaseDelivery, not never, and the hotkey is up again for the
		// switch.
		kb.key(evScroll, 1)
		kb.key(evScroll, 0) // to local use
		kb.key(evScroll, 1) // back to relaying
		kb.stateUp(evScroll)
		synctest.Wait()
		if kb.isGrabbed() {
			t.Error("grabbed at once with the hotkey's release unread")
		}
		time.Sleep(releaseDelivery - time.Millisecond)
		synctest.Wait()
		if kb.isGrabbed() {
			t.Errorf("grabbed before releaseDelivery (%v)", releaseDelivery)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !kb.isGrabbed() {
			t.Errorf("not grabbed releaseDelivery (%v) after the state showed the release", releaseDelivery)
		}
		kb.key(evB, 1)
		kb.key(evB, 0)
		if got := p.take(); got != "+KeyB -KeyB" {
			t.Errorf("relayed %q after the lost release", got)
		}
		kb.key(evScroll, 1)
		synctest.Wait()
		if kb.isGrabbed() || p.e.Relaying() {
			t.Error("the hotkey pressed after its lost release did not switch to local use")
		}
		p.stop()
		if kb.isGrabbed() {
			t.Error("the grab outlives Play")
		}
	})
}

// TestEvdevHotplug (Evdev's doc): a keyboard plugged in later is read (and
// grabbed while relaying with --grab); one unplugged with a key held has
// that key released at the receiver (DESIGN invariant 1: nothing stuck); a
// device with --device that goes away ends send with an error.
func TestEvdevHotplug(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		p := startEvdev(t, sys, &Evdev{Grab: true})
		usb := sys.add("/dev/input/event12", "USB keyboard", true)
		sys.add("/dev/input/event13", "USB mouse", false)
		sys.watch <- "/dev/input/event13"
		sys.watch <- "/dev/input/event12"
		sys.watch <- "/dev/input/event12" // udev's chmod after the kernel's create
		synctest.Wait()
		if !usb.isGrabbed() || usb.openHandles() != 1 {
			t.Fatalf("plugged keyboard: grabbed %v, %d handles", usb.isGrabbed(), usb.openHandles())
		}
		if !strings.Contains(p.said(), "keyboard plugged in: /dev/input/event12 (USB keyboard)") {
			t.Errorf("status: %q", p.said())
		}
		usb.key(evCtrlL, 1)
		synctest.Wait() // two devices, two readers: one at a time, for the order
		kb.key(evA, 1)
		synctest.Wait()
		close(usb.gone)
		if got := p.take(); got != "+ControlLeft +KeyA -ControlLeft" {
			t.Errorf("relayed %q, want ControlLeft released when its keyboard went away", got)
		}
		if !strings.Contains(p.said(), "/dev/input/event12 (USB keyboard) went away") {
			t.Errorf("status: %q", p.said())
		}
		close(kb.gone)
		if got := p.take(); got != "-KeyA" {
			t.Errorf("relayed %q, want -KeyA", got)
		}
		if !strings.Contains(p.said(), "no keyboard left: waiting for one to be plugged in") {
			t.Errorf("status: %q", p.said())
		}
		p.stop()
	})
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		p := startEvdev(t, sys, &Evdev{Devices: []string{"/dev/input/event3"}})
		kb.key(evA, 1)
		close(kb.gone)
		err := <-p.done
		if !errors.Is(err, ErrEvdev) || !strings.Contains(err.Error(), "no --device left") {
			t.Errorf("Play = %v, want no --device left", err)
		}
		if got := p.take(); got != "+KeyA -KeyA" {
			t.Errorf("relayed %q", got)
		}
	})
}

// TestEvdevResync: after the kernel dropped events (SYN_DROPPED) the key
// state is read again and the receiver made to match it.
func TestEvdevResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		p := startEvdev(t, sys, &Evdev{})
		kb.key(evA, 1)
		kb.mu.Lock()
		kb.down = map[uint16]bool{evB: true} // A went up, B down: lost
		kb.mu.Unlock()
		kb.evs <- []evdevEvent{{evSyn, synDropped, 0}, {evKey, evB, 1}, {evSyn, synReport, 0}}
		if got := p.take(); got != "+KeyA -KeyA +KeyB" {
			t.Errorf("relayed %q, want the state read again", got)
		}
		if !strings.Contains(p.said(), "the kernel dropped events of /dev/input/event3") {
			t.Errorf("status: %q", p.said())
		}
		p.stop()
	})
}

// TestEvdevErrors: bad set-ups get an error that says what to do (the bar:
// "a missing display, a wrong key ...": here, devices).
func TestEvdevErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*fakeEvdev)
		devices []string
		grab    bool
		want    string
	}{
		{"permission denied", func(f *fakeEvdev) { f.add("/dev/input/event0", "kbd", true).denied = true }, nil, false, "usermod -aG input"},
		{"no keyboard", func(f *fakeEvdev) { f.add("/dev/input/event0", "Power Button", false) }, nil, false, "no keyboard found among the 1 input devices"},
		{"only our own", func(f *fakeEvdev) { f.add("/dev/input/event0", UinputName, true) }, nil, false, "no keyboard found"},
		{"missing --device", func(f *fakeEvdev) {}, []string{"/dev/input/event5"}, false, "does not exist"},
		{"--device is ours", func(f *fakeEvdev) { f.add("/dev/input/event5", UinputName, true) }, []string{"/dev/input/event5"}, false, "keyrelay's own virtual keyboard"},
		{"--device denied", func(f *fakeEvdev) { f.add("/dev/input/event5", "kbd", true).denied = true }, []string{"/dev/input/event5"}, false, "permission denied"},
		{"grabbed by another program", func(f *fakeEvdev) { f.add("/dev/input/event5", "kbd", true).grabErr = syscall.EBUSY }, nil, true, "no keyboard left to grab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys := newFakeEvdev()
				tc.setup(sys)
				p := startEvdev(t, sys, &Evdev{Devices: tc.devices, Grab: tc.grab})
				err := <-p.done
				if !errors.Is(err, ErrEvdev) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Play = %v; want ErrEvdev saying %q", err, tc.want)
				}
				p.cancel()
			})
		})
	}
}

// fakeLocal is a localKeyboard that records what it is told, and fails
// every key once broken.
type fakeLocal struct {
	mu     sync.Mutex
	keys   []string
	broken bool
	closed bool
}

func (f *fakeLocal) Key(code uint16, down bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return errors.New("no such device")
	}
	f.keys = append(f.keys, fmt.Sprintf("%s%d", map[bool]string{true: "+", false: "-"}[down], code))
	return nil
}

func (f *fakeLocal) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeLocal) take() string {
	synctest.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.keys, " ")
	f.keys = nil
	return s
}

// TestEvdevLocalKeysAndDestinationHotkeys checks DESIGN.md's Named
// destinations on the evdev source with --grab: a key the router says acts
// here is passed, down while held, to send's own virtual keyboard (the grab
// keeps it from this machine), and still given to the router; in local use a
// destination's hotkey makes it the target and takes the keyboard again,
// neither the hotkey's keys nor their releases relayed; a virtual keyboard
// that cannot be made or stops taking keys is a status line, not an end.
func TestEvdevLocalKeysAndDestinationHotkeys(t *testing.T) {
	const evDigit2, evVolUp = 3, 115
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		hk, _ := ParseHotkey("ScrollLock")
		local := &fakeLocal{}
		var picked []int
		e := &Evdev{Grab: true, Hotkey: hk, newLocal: func() (localKeyboard, error) { return local, nil }}
		e.SetRouting(func(c keys.Code) bool { return c == keys.AudioVolumeUp },
			[][]keys.Code{nil, {keys.ControlRight, keys.Digit2}},
			func(i int) { picked = append(picked, i) })
		p := startEvdev(t, sys, e)
		synctest.Wait()
		if !kb.isGrabbed() {
			t.Fatal("not grabbed")
		}
		kb.key(evVolUp, 1)
		if got := local.take(); got != "+115" {
			t.Errorf("the local key's press reached the virtual keyboard as %q, want +115", got)
		}
		kb.key(evA, 1)
		kb.key(evA, 0)
		kb.key(evVolUp, 0)
		if got := local.take(); got != "-115" {
			t.Errorf("the local key's release reached the virtual keyboard as %q, want -115 (held while held)", got)
		}
		if got := p.take(); got != "+AudioVolumeUp +KeyA -KeyA -AudioVolumeUp" {
			t.Errorf("relayed %q: the router gets every key, local ones too", got)
		}

		kb.key(evScroll, 1)
		kb.key(evScroll, 0)
		synctest.Wait()
		if p.e.Relaying() {
			t.Fatal("relaying after the toggle hotkey")
		}
		kb.key(evCtrlR, 1)
		kb.key(evDigit2, 1)
		synctest.Wait()
		if !slices.Equal(picked, []int{1}) || !p.e.Relaying() {
			t.Fatalf("after destination 1's hotkey in local use: picked %v, relaying %v; want [1], relaying", picked, p.e.Relaying())
		}
		kb.key(evDigit2, 0)
		kb.key(evCtrlR, 0)
		synctest.Wait()
		if !kb.isGrabbed() {
			t.Error("not grabbed again once the destination hotkey was released")
		}
		kb.key(evB, 1)
		kb.key(evB, 0)
		if got := p.take(); got != "+KeyB -KeyB" {
			t.Errorf("relayed %q after the destination hotkey, want only KeyB: the hotkey's keys reach no side", got)
		}

		local.mu.Lock()
		local.broken = true
		local.mu.Unlock()
		kb.key(evVolUp, 1)
		kb.key(evVolUp, 0)
		if !strings.Contains(p.said(), "stopped taking keys") {
			t.Errorf("status after the virtual keyboard broke: %q", p.said())
		}
		if err := p.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Play = %v after the virtual keyboard broke, want it to go on until stopped", err)
		}
		if !local.closed {
			t.Error("the virtual keyboard outlives Play")
		}
	})

	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		e := &Evdev{Grab: true, newLocal: func() (localKeyboard, error) {
			return nil, errors.New("/dev/uinput is not writable by this user")
		}}
		e.SetRouting(func(c keys.Code) bool { return c == keys.AudioVolumeUp }, nil, nil)
		p := startEvdev(t, sys, e)
		kb.key(evVolUp, 1)
		kb.key(evVolUp, 0)
		if got := p.take(); got != "+AudioVolumeUp -AudioVolumeUp" {
			t.Errorf("relayed %q", got)
		}
		if !strings.Contains(p.said(), "local keys cannot act on this machine, and are swallowed while relaying: /dev/uinput is not writable") {
			t.Errorf("status without uinput: %q", p.said())
		}
		p.stop()
	})
}
