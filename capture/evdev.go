package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrEvdev is wrapped by the evdev source's errors when it cannot read a
// keyboard.
var ErrEvdev = errors.New("evdev keyboard input unavailable")

// UinputName is the name of the virtual keyboard recv --inject uinput
// creates (inject.UinputName; a cmd test checks they agree). The evdev
// source never reads it: with a recv on the same machine, what recv types
// would be sent again, for ever.
const UinputName = "keyrelay"

// LocalKeysName is the name of the virtual keyboard send --input evdev
// --grab passes local keys through (a destination's local-keys, which the
// grab keeps from this machine). The evdev source never reads it, as it
// never reads UinputName.
const LocalKeysName = "keyrelay send local keys"

// uinputPath is the Linux uinput device (inject.DefaultUinputPath).
const uinputPath = "/dev/uinput"

// uinputFix is what to do when uinputPath cannot be opened for writing.
const uinputFix = `add a udev rule such as KERNEL=="uinput", GROUP="input", MODE="0660" (/etc/udev/rules.d/60-keyrelay-uinput.rules), add yourself to the group (sudo usermod -aG input $USER, then log in again), or run send as root`

// permissionFix is what to do when /dev/input/event* cannot be read.
const permissionFix = `add yourself to the input group (sudo usermod -aG input $USER, then log in again) or add a udev rule such as SUBSYSTEM=="input", KERNEL=="event*", ENV{ID_INPUT_KEYBOARD}=="1", TAG+="uaccess" (in /etc/udev/rules.d/60-keyrelay.rules, then sudo udevadm trigger), or run send as root`

// Evdev reads key events from the Linux input devices of keyboards
// (/dev/input/event*): true key-downs and key-ups from the kernel, below X
// or Wayland, on the console and headless machines too. Auto-repeat is
// dropped at the source; buttons are ignored; a code keycodemapdb does not
// list (so no key of the keys table, PROTOCOL.md §3.1) is noted once and not
// sent.
//
// Without Devices it reads every event device with the letter keys, but
// not recv's own virtual keyboard (UinputName), and picks up keyboards
// plugged in later. A device that goes away is dropped, with a status
// line, and its held keys are released.
//
// With Grab it owns the keyboards while relaying (EVIOCGRAB): keys reach
// the receiver only. The Hotkey switches to local use (the grab is dropped;
// keys act here, and are read only to see the hotkey) and back. A grab is
// taken once no key of the device is down, so that the local system sees
// the release of every key it saw pressed (the hotkey's own, for one).
// Without Grab every key is relayed and acts locally too.
//
// With named destinations (SetRouting) the grabbing source also takes
// each destination's hotkey in local use as the toggle hotkey (it reads
// every key then), and passes a destination's local keys to this machine
// through a virtual keyboard of its own (LocalKeysName, on /dev/uinput,
// made as Play starts, and only if some destination has local keys): down
// while held, so push-to-talk works, as keyd and kmonad pass keys on. If
// /dev/uinput cannot be written, a status line says so and local keys are
// swallowed while relaying.
//
// It ends when ctx is done; the grab ends with it (closing the device
// drops it, and the kernel drops it if the process dies).
type Evdev struct {
	// Devices are the event devices to read (--device); empty: every
	// keyboard, and those plugged in later.
	Devices []string
	Grab    bool
	// Hotkey switches between relaying and local use with Grab (nil:
	// DefaultHotkey).
	Hotkey Hotkey
	Label  string
	Status io.Writer

	sys      evdevSystem // nil: the system's (tests put a fake here)
	relaying mode
	locks    atomic.Uint32

	// newLocal makes the virtual keyboard of local keys (nil: the
	// system's, on uinputPath; tests put a fake here).
	newLocal func() (localKeyboard, error)

	// SetRouting's, read by Play.
	localKey func(keys.Code) bool
	targets  [][]keys.Code
	pick     func(int)
}

// localKeyboard is the virtual keyboard local keys act through: Key
// presses or releases the evdev key code.
type localKeyboard interface {
	Key(code uint16, down bool) error
	Close() error
}

// SetRouting takes what send's named destinations decide (the
// routing.RoutingSource interface): which keys act here, the destinations'
// hotkeys and how to make one the target. Call it before Play.
func (e *Evdev) SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int)) {
	e.localKey, e.targets, e.pick = local, hotkeys, pick
}

// Relaying reports whether keys go to the receiver now. Safe for
// concurrent use.
func (e *Evdev) Relaying() bool { return e.relaying.Load() }

// SetRelaying asks the grabbing source to relay (grab the keyboards) or
// go to local use (let them go), as the hotkey does, from another
// goroutine (keyrelay switch). It does not wait (ModeChanged tells when
// the mode changes); a request made before the last one was taken
// replaces it. Without Grab it does nothing.
func (e *Evdev) SetRelaying(on bool) { e.relaying.request(on) }

// ModeChanged is closed at the next change of Relaying after the call.
func (e *Evdev) ModeChanged() <-chan struct{} { return e.relaying.Changed() }

// Locks is the lock state the receiver should have (keys.Locks): Caps and
// Num Lock from the keyboards' LEDs as relaying starts or resumes, with the
// epoch bit flipped each time, as the X11 source does. It is not moved by
// the lock keys relayed in between: those toggle the receiver's state
// themselves, and a locks byte that changed with them would make the
// receiver toggle it a second time. 0 (unknown) when no keyboard has those
// LEDs. Safe for concurrent use.
func (e *Evdev) Locks() keys.Locks { return keys.Locks(e.locks.Load()) }

// evdevSystem opens and finds event devices: the system's (evdev_linux.go)
// or a test's.
type evdevSystem interface {
	Open(path string) (evdevDev, evdevInfo, error)
	// List is the event devices now, in number order.
	List() ([]string, error)
	// Watch reports devices appearing (or changing permissions).
	Watch() (evdevWatch, error)
}

// evdevInfo is what the source needs to know of a device before reading it.
type evdevInfo struct {
	Name     string
	Keyboard bool // it has the letter keys KEY_A..KEY_Z
	Keys     bool // it has any key or button
}

// evdevDev is one open event device. Read runs in its own goroutine, the
// rest in the source's; Close must end a waiting Read.
type evdevDev interface {
	Read(evs []evdevEvent) (int, error)
	// KeysDown is the keys and buttons down now (EVIOCGKEY).
	KeysDown() ([]uint16, error)
	// LEDs is the lit lock LEDs, and false when the device has no Caps
	// or Num Lock LED.
	LEDs() (keys.Locks, bool, error)
	Grab() error
	Ungrab() error
	Close() error
}

type evdevWatch interface {
	Next() (string, error)
	Close() error
}

// evdevOpen is a device the source reads.
type evdevOpen struct {
	path, name string
	dev        evdevDev
	dec        evdevDecoder
	grabbed    bool
	// upUnread is the keys the local system saw go down (in this
	// source's own reading, or in the kernel's key state) whose release
	// this source has not read yet. The kernel clears a key's state bit
	// as the release comes in but hands the event to readers only at
	// the SYN_REPORT after it: a grab taken in between, on the key state
	// alone, would take the release from every other reader, and the
	// local system would keep the key down.
	upUnread []uint16
	// upSince is when the kernel's state was first seen with every key
	// up while upUnread was not empty.
	upSince time.Time
}

// releaseDelivery is how long a release the kernel's state already shows
// may take to reach readers. The kernel hands it over at the SYN_REPORT
// that the writer sends right after the key event, so within microseconds.
// Should it never come (a kernel input filter, SysRq's say, can swallow
// it), the kernel's state is taken as the truth after this long: the key
// is released at the receiver and the grab taken, rather than the keyboard
// left ungrabbed with the key held.
const releaseDelivery = 50 * time.Millisecond

// note follows the local system's view of d's keys: a press or release
// read, delivered to every reader of an ungrabbed device at once.
func (d *evdevOpen) note(ev evdevEvent) {
	if ev.Type != evKey || ev.Value == 2 {
		return
	}
	i := slices.Index(d.upUnread, ev.Code)
	switch {
	case ev.Value != 0 && i < 0:
		d.upUnread = append(d.upUnread, ev.Code)
	case ev.Value == 0 && i >= 0:
		d.upUnread = slices.Delete(d.upUnread, i, i+1)
		if len(d.upUnread) == 0 {
			d.upSince = time.Time{}
		}
	}
}

// sawDown adds keys the kernel's state has down.
func (d *evdevOpen) sawDown(down []uint16) {
	for _, c := range down {
		if !slices.Contains(d.upUnread, c) {
			d.upUnread = append(d.upUnread, c)
		}
	}
}

func (d *evdevOpen) String() string { return fmt.Sprintf("%s (%s)", d.path, d.name) }

// evdevBatch is what one Read returned.
type evdevBatch struct {
	d   *evdevOpen
	evs []evdevEvent
	err error
}

// evdevScan opens the devices to read: the given ones, or every keyboard.
// It returns them with a note on devices it could not read, or an error
// saying why there is none.
func evdevScan(sys evdevSystem, devices []string) ([]*evdevOpen, string, error) {
	var out []*evdevOpen
	closeAll := func() {
		for _, d := range out {
			d.dev.Close()
		}
	}
	if len(devices) > 0 {
		for _, p := range devices {
			d, err := evdevOpenOne(sys, p)
			if err == nil && !d.Keys {
				err = fmt.Errorf("%w: %s (%s) has no keys", ErrEvdev, p, d.name)
				d.dev.Close()
			}
			if err != nil {
				closeAll()
				return nil, "", err
			}
			if slices.ContainsFunc(out, func(o *evdevOpen) bool { return o.path == p }) {
				d.dev.Close()
				continue
			}
			out = append(out, d.evdevOpen)
		}
		return out, "", nil
	}
	paths, err := sys.List()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%w: this system has no /dev/input (a container or a VM without input devices?): run send where the keyboard is plugged in, pass the devices into the container (--device /dev/input/eventN), or use --input x11 or --input terminal", ErrEvdev)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: cannot list the input devices: %w", ErrEvdev, err)
	}
	var denied []string
	for _, p := range paths {
		d, err := evdevOpenOne(sys, p)
		switch {
		case errors.Is(err, fs.ErrPermission):
			denied = append(denied, p)
		case err != nil:
			// Gone since the listing, not an event device, our own:
			// none is a keyboard to read.
		case !d.Keyboard:
			d.dev.Close()
		default:
			out = append(out, d.evdevOpen)
		}
	}
	switch {
	case len(out) == 0 && len(denied) > 0:
		return nil, "", fmt.Errorf("%w: cannot read %s (permission denied): %s", ErrEvdev, strings.Join(denied, ", "), permissionFix)
	case len(out) == 0:
		return nil, "", fmt.Errorf("%w: no keyboard found among the %d input devices (none has the letter keys, or it is keyrelay's own); name one with --device /dev/input/eventN (see ls -l /dev/input/by-id)", ErrEvdev, len(paths))
	case len(denied) > 0:
		return out, fmt.Sprintf("%d input devices cannot be read (permission denied), keyboards among them are not relayed: %s", len(denied), permissionFix), nil
	}
	return out, "", nil
}

type evdevOpened struct {
	*evdevOpen
	evdevInfo
}

// evdevOpenOne opens one device, refusing recv's own.
func evdevOpenOne(sys evdevSystem, path string) (evdevOpened, error) {
	dev, info, err := sys.Open(path)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrPermission):
			return evdevOpened{}, fmt.Errorf("%w: cannot read %s (permission denied): %s: %w", ErrEvdev, path, permissionFix, err)
		case errors.Is(err, fs.ErrNotExist):
			return evdevOpened{}, fmt.Errorf("%w: %s does not exist (the keyboards: ls -l /dev/input/by-id, or keyrelay doctor --input evdev): %w", ErrEvdev, path, err)
		}
		return evdevOpened{}, fmt.Errorf("%w: cannot read %s: %w", ErrEvdev, path, err)
	}
	if info.Name == LocalKeysName {
		dev.Close()
		return evdevOpened{}, fmt.Errorf("%w: %s is keyrelay send's own virtual keyboard of local keys: reading it would relay them", ErrEvdev, path)
	}
	if info.Name == UinputName {
		dev.Close()
		return evdevOpened{}, fmt.Errorf("%w: %s is keyrelay's own virtual keyboard (recv --inject uinput): reading it would send back what recv types", ErrEvdev, path)
	}
	return evdevOpened{&evdevOpen{path: path, name: info.Name, dev: dev}, info}, nil
}

// EvdevKeyboards lists the keyboards --input evdev would read now, as
// "path (name)", or says why there is none.
func EvdevKeyboards(devices []string) ([]string, error) {
	sys, err := systemEvdev()
	if err != nil {
		return nil, err
	}
	ds, _, err := evdevScan(sys, devices)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
		d.dev.Close()
	}
	return out, nil
}

// CheckEvdev checks up front that --input evdev has a keyboard to read:
// the devices given, or any keyboard under /dev/input.
func CheckEvdev(devices []string) error {
	_, err := EvdevKeyboards(devices)
	return err
}

// evdevRun is one Play: its state belongs to Play's goroutine; the device
// readers and the watcher hand over what they read through channels.
type evdevRun struct {
	e      *Evdev
	sys    evdevSystem
	emit   func(keys.Key, bool) error
	hotkey Hotkey
	sw     *Switch       // with Grab
	local  localKeyboard // where local keys act, with Grab; nil: none

	devs     map[string]*evdevOpen
	held     map[keys.Code]int // devices holding each key down: one press for all
	wantGrab bool              // relaying with Grab, but a device is not grabbed yet
	noted    map[uint16]bool   // unknown codes reported
	retry    *time.Timer       // tryGrab again: a release is still on its way (releaseDelivery)
	retryC   <-chan time.Time  // retry's channel while it is set

	batches chan evdevBatch
	done    chan struct{}
	wg      sync.WaitGroup
}

// Play relays key events until ctx is done.
func (e *Evdev) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	sys := e.sys
	if sys == nil {
		var err error
		if sys, err = systemEvdev(); err != nil {
			return err
		}
	}
	r := &evdevRun{e: e, sys: sys, emit: emit, hotkey: e.Hotkey,
		devs: map[string]*evdevOpen{}, held: map[keys.Code]int{}, noted: map[uint16]bool{},
		batches: make(chan evdevBatch), done: make(chan struct{})}
	if len(r.hotkey) == 0 {
		r.hotkey, _ = ParseHotkey(DefaultHotkey)
	}
	defer r.stop()

	// Watch before listing: a keyboard plugged in between is seen by one
	// or the other (or both: add ignores a device already open).
	var plugged <-chan string
	if len(e.Devices) == 0 {
		w, err := sys.Watch()
		if err != nil {
			return fmt.Errorf("%w: cannot watch for keyboards plugged in: %w", ErrEvdev, err)
		}
		plugged = r.watch(w)
	}
	ds, note, err := evdevScan(sys, e.Devices)
	if err != nil {
		return err
	}
	for _, d := range ds {
		r.start(d)
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.String()
	}
	later := ""
	if len(e.Devices) == 0 {
		later = ", and keyboards plugged in later"
	}
	r.status("reading %s%s → %s (Ctrl+C or SIGTERM ends)", strings.Join(names, ", "), later, e.Label)
	if note != "" {
		r.status("%s", note)
	}

	e.relaying.Store(true)
	r.readLocks()
	if e.Grab {
		r.sw = &Switch{Hotkey: r.hotkey, Emit: r.relay, OnToggle: r.toggled}
		for _, h := range e.targets {
			r.sw.Targets = append(r.sw.Targets, Hotkey(h))
		}
		if e.pick != nil {
			r.sw.OnTarget = func(i int) error { e.pick(i); return nil }
		}
		if e.localKey != nil {
			r.openLocal()
		}
		r.wantGrab = true
		if err := r.tryGrab(); err != nil {
			return err
		}
	} else {
		r.status("relaying (not grabbed: keys act on this machine too; --grab to keep them off it)")
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case b := <-r.batches:
			if r.devs[b.d.path] != b.d {
				continue // dropped already
			}
			for _, ev := range b.evs {
				if err := r.event(b.d, ev); err != nil {
					return err
				}
			}
			if b.err != nil {
				if err := r.lost(b.d, b.err); err != nil {
					return err
				}
			}
			if err := r.tryGrab(); err != nil {
				return err
			}
		case <-r.retryC:
			r.retryC = nil
			if err := r.tryGrab(); err != nil {
				return err
			}
		case on := <-e.relaying.requests():
			if r.sw == nil || on == r.sw.Relaying() {
				continue
			}
			if err := r.sw.Toggle(); err != nil {
				return err
			}
			if err := r.tryGrab(); err != nil {
				return err
			}
		case p, ok := <-plugged:
			if !ok {
				plugged = nil
				r.status("no longer watching for keyboards plugged in")
				continue
			}
			if err := r.plug(p); err != nil {
				return err
			}
		}
	}
}

// stop ends the readers and the watcher, and closes every device: the
// kernel drops a grab with the file.
func (r *evdevRun) stop() {
	close(r.done)
	if r.local != nil {
		// Destroying it releases, for every reader, what it holds.
		r.local.Close()
	}
	for _, d := range r.devs {
		if d.grabbed {
			d.dev.Ungrab()
		}
		d.dev.Close()
	}
	r.wg.Wait()
	r.e.relaying.Store(false)
}

// start reads d in a goroutine of its own.
func (r *evdevRun) start(d *evdevOpen) {
	r.devs[d.path] = d
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		buf := make([]evdevEvent, 64)
		for {
			n, err := d.dev.Read(buf)
			select {
			case r.batches <- evdevBatch{d, slices.Clone(buf[:n]), err}:
			case <-r.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// watch hands over the paths w reports, until it fails or Play ends.
func (r *evdevRun) watch(w evdevWatch) <-chan string {
	out := make(chan string)
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		<-r.done
		w.Close()
	}()
	go func() {
		defer r.wg.Done()
		defer close(out)
		for {
			p, err := w.Next()
			if err != nil {
				return
			}
			select {
			case out <- p:
			case <-r.done:
				return
			}
		}
	}()
	return out
}

// plug opens a device that appeared, if it is a keyboard to read.
func (r *evdevRun) plug(path string) error {
	if _, ok := r.devs[path]; ok {
		return nil
	}
	d, err := evdevOpenOne(r.sys, path)
	if err != nil {
		// Permission: udev sets the node's group and mode just after
		// the kernel creates it, and says so again (IN_ATTRIB). Gone
		// already, recv's own: nothing to read.
		return nil
	}
	if !d.Keyboard {
		d.dev.Close()
		return nil
	}
	r.start(d.evdevOpen)
	r.status("keyboard plugged in: %s", d)
	if r.sw != nil && r.sw.Relaying() {
		r.wantGrab = true
	}
	return r.tryGrab()
}

// lost drops a device whose read failed (unplugged), releasing its keys.
func (r *evdevRun) lost(d *evdevOpen, err error) error {
	delete(r.devs, d.path)
	d.dev.Close()
	var errs []error
	for _, k := range d.dec.Release() {
		errs = append(errs, r.key(k.Code, false))
	}
	r.status("%s went away (%v): its held keys are released", d, err)
	if len(r.devs) == 0 {
		if len(r.e.Devices) > 0 {
			errs = append(errs, fmt.Errorf("%w: no --device left to read (%s went away)", ErrEvdev, d))
		} else {
			r.status("no keyboard left: waiting for one to be plugged in")
		}
	}
	return errors.Join(errs...)
}

// event handles one input event of d.
func (r *evdevRun) event(d *evdevOpen, ev evdevEvent) error {
	d.note(ev)
	res := d.dec.Event(ev)
	switch res.Action {
	case evdevPress:
		return r.key(res.Key.Code, res.Key.Down)
	case evdevUnknown:
		if !r.noted[res.Key.Evdev] {
			r.noted[res.Key.Evdev] = true
			r.status("evdev key %d (of %s) is no key keyrelay knows (not in keycodemapdb): not sent", res.Key.Evdev, d)
		}
	case evdevLED:
		// The lock state is read at the start and at each resume
		// (readLocks); the LEDs moving in between follow keys already
		// relayed.
	case evdevResync:
		down, err := d.dev.KeysDown()
		if err != nil {
			down = nil // unreadable: release everything rather than leave a key stuck
		}
		r.status("the kernel dropped events of %s: its key state was read again", d)
		d.upUnread = append(d.upUnread[:0], down...)
		for _, k := range d.dec.Sync(down) {
			if err := r.key(k.Code, k.Down); err != nil {
				return err
			}
		}
	}
	return nil
}

// key takes a press or release from one device. Keyboards are merged: a
// key held on two of them is one press, released with the last.
func (r *evdevRun) key(c keys.Code, down bool) error {
	n := r.held[c]
	switch {
	case down:
		r.held[c] = n + 1
		if n > 0 {
			return nil
		}
	case n == 0:
		return nil
	case n > 1:
		r.held[c] = n - 1
		return nil
	default:
		delete(r.held, c)
	}
	if r.sw != nil {
		return r.sw.Key(c, down)
	}
	return r.relay(keys.Key(c), down)
}

// openLocal makes the virtual keyboard local keys act through, or says
// why there is none: they are swallowed then, as the grab keeps them from
// this machine.
func (r *evdevRun) openLocal() {
	newLocal := r.e.newLocal
	if newLocal == nil {
		newLocal = systemLocalKeyboard
	}
	kb, err := newLocal()
	if err != nil {
		r.status("local keys cannot act on this machine, and are swallowed while relaying: %v", err)
		return
	}
	r.local = kb
	r.sw.Here, r.sw.ActHere = r.e.localKey, r.actHere
	r.status("local keys act here through the virtual keyboard %q", LocalKeysName)
}

// actHere presses or releases a local key on this machine, through the
// virtual keyboard. One it cannot type is dropped, with a status line:
// the key is not relayed either, and send goes on.
func (r *evdevRun) actHere(c keys.Code, down bool) error {
	info, ok := keys.Lookup(c)
	if r.local == nil || !ok || info.Evdev == 0 || info.Evdev > maxLocalKey {
		return nil // broken since its press: nothing is held there now
	}
	if err := r.local.Key(info.Evdev, down); err != nil {
		r.status("the virtual keyboard %q stopped taking keys (%v): local keys are swallowed from now on", LocalKeysName, err)
		r.local.Close()
		r.local, r.sw.Here = nil, nil
	}
	return nil
}

// maxLocalKey is the highest evdev key code of the local keys' virtual
// keyboard (inject.MaxUinputKey: above it, the kernel's key bits and X's
// keycodes stop).
const maxLocalKey = 248

// relay sends one key event to the receiver.
func (r *evdevRun) relay(k keys.Key, down bool) error { return r.emit(k, down) }

// toggled follows the Switch: local use drops the grabs at once; relaying
// takes them again once the keys held now (the hotkey's) are released.
func (r *evdevRun) toggled(relaying bool) error {
	r.e.relaying.Store(relaying)
	if relaying {
		r.readLocks()
		r.wantGrab = true
		return nil // tryGrab after this batch
	}
	r.wantGrab = false
	for _, d := range r.sorted() {
		if d.grabbed {
			if err := d.dev.Ungrab(); err != nil {
				r.status("cannot ungrab %s: %v", d, err)
			}
			d.grabbed = false
		}
	}
	r.status("local use (%s to relay)", r.hotkey)
	return nil
}

// tryGrab grabs, while relaying with Grab, every device with no key down
// and no release still unread (the local system saw those keys go down and
// must see them go up: see upUnread), and says so once all are.
func (r *evdevRun) tryGrab() error {
	if !r.wantGrab {
		return nil
	}
	all := true
	for _, d := range r.sorted() {
		if d.grabbed {
			continue
		}
		if down, err := d.dev.KeysDown(); err != nil || len(down) > 0 {
			d.sawDown(down)
			d.upSince = time.Time{}
			all = false
			continue
		}
		if len(d.upUnread) > 0 {
			now := time.Now()
			if d.upSince.IsZero() {
				d.upSince = now
			}
			if wait := releaseDelivery - now.Sub(d.upSince); wait > 0 {
				r.retryIn(wait)
				all = false
				continue
			}
			d.upUnread = d.upUnread[:0]
			for _, k := range d.dec.Sync(nil) { // nothing is down
				if err := r.key(k.Code, k.Down); err != nil {
					return err
				}
			}
		}
		d.upSince = time.Time{}
		if err := d.dev.Grab(); err != nil {
			// Another program has it (another keyrelay send --grab?):
			// relaying its keys would type them here too.
			r.status("cannot grab %s (%v): not read", d, err)
			delete(r.devs, d.path)
			d.dev.Close()
			for _, k := range d.dec.Release() {
				if err := r.key(k.Code, false); err != nil {
					return err
				}
			}
			if len(r.devs) == 0 {
				return fmt.Errorf("%w: no keyboard left to grab (%s: %w)", ErrEvdev, d, err)
			}
			continue
		}
		// A key pressed between the check and the grab reached the local
		// system: give the device back until that key is released too.
		if down, err := d.dev.KeysDown(); err != nil || len(down) > 0 {
			d.sawDown(down)
			d.dev.Ungrab()
			all = false
			continue
		}
		d.grabbed = true
	}
	if all && len(r.devs) > 0 {
		r.wantGrab = false
		r.status("relaying (grabbed; %s for local use)", r.hotkey)
	}
	return nil
}

// retryIn has Play call tryGrab again after wait.
func (r *evdevRun) retryIn(wait time.Duration) {
	if r.retry == nil {
		r.retry = time.NewTimer(wait)
	} else {
		r.retry.Reset(wait)
	}
	r.retryC = r.retry.C
}

// readLocks reads the lock state from the LEDs of the keyboards that have
// them, as relaying starts or resumes, and flips the epoch so the receiver
// matches it even when it is the same as last time (keys.LockEpoch).
func (r *evdevRun) readLocks() {
	l := (r.e.Locks() ^ keys.LockEpoch) & keys.LockEpoch
	for _, d := range r.sorted() {
		if leds, ok, err := d.dev.LEDs(); err == nil && ok {
			l |= leds | keys.LocksKnown
		}
	}
	if !l.Known() {
		l = 0
	}
	r.e.locks.Store(uint32(l))
}

// sorted is the open devices in path order, for a stable order of grabs
// and messages.
func (r *evdevRun) sorted() []*evdevOpen {
	out := make([]*evdevOpen, 0, len(r.devs))
	for _, p := range slices.Sorted(maps.Keys(r.devs)) {
		out = append(out, r.devs[p])
	}
	return out
}

func (r *evdevRun) status(format string, args ...any) {
	if r.e.Status != nil {
		fmt.Fprintf(r.e.Status, "keyrelay send: "+format+"\n", args...)
	}
}

// Grabbing reports whether the source owns the keyboards while relaying
// (--grab), for the status line.
func (e *Evdev) Grabbing() bool { return e.Grab }
