package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/keyrelay/keyrelay/internal/linux/evdev"
	"github.com/keyrelay/keyrelay/keys"
)

// systemEvdev is the kernel's event devices under /dev/input.
func systemEvdev() (evdevSystem, error) { return linuxEvdev{dir: evdev.Dir}, nil }

type linuxEvdev struct{ dir string }

// letterKeys are the evdev codes of KEY_A..KEY_Z: a device with all of
// them is a keyboard (not a power button, a mouse or a remote control).
var letterKeys = func() []int {
	var out []int
	for c := keys.KeyA; c <= keys.KeyZ; c++ {
		info, _ := keys.Lookup(c)
		out = append(out, int(info.Evdev))
	}
	return out
}()

func (s linuxEvdev) Open(path string) (evdevDev, evdevInfo, error) {
	d, err := evdev.Open(path)
	if err != nil {
		return nil, evdevInfo{}, err
	}
	info, leds, err := describe(d)
	if err != nil {
		d.Close()
		return nil, evdevInfo{}, err
	}
	state, err := evdev.Open(path)
	if err != nil {
		d.Close()
		return nil, evdevInfo{}, err
	}
	return &linuxDev{d: d, state: state, leds: leds, buf: make([]evdev.Event, 64)}, info, nil
}

func describe(d *evdev.Device) (info evdevInfo, leds bool, err error) {
	if info.Name, err = d.Name(); err != nil {
		return info, false, err
	}
	kb, err := d.Capabilities(evdev.EvKey)
	if err != nil {
		return info, false, err
	}
	info.Keys = len(kb.Set()) > 0
	info.Keyboard = true
	for _, k := range letterKeys {
		info.Keyboard = info.Keyboard && kb.Has(k)
	}
	lb, err := d.Capabilities(evdev.EvLED)
	if err != nil {
		return info, false, err
	}
	return info, lb.Has(evdev.LEDCapsLock) || lb.Has(evdev.LEDNumLock), nil
}

func (s linuxEvdev) List() ([]string, error) { return evdev.List(s.dir) }

func (s linuxEvdev) Watch() (evdevWatch, error) { return evdev.Watch(s.dir) }

type linuxDev struct {
	d *evdev.Device
	// state is a second open file of the device, asked only for the key
	// state: EVIOCGKEY also drops the key events queued for the file it
	// is asked on (the state includes them), and on d that would take
	// presses and releases from the decoder, a hotkey's release with them.
	state *evdev.Device
	leds  bool
	buf   []evdev.Event // Read's, in the reader's goroutine
}

func (l *linuxDev) Read(evs []evdevEvent) (int, error) {
	if len(l.buf) < len(evs) {
		l.buf = make([]evdev.Event, len(evs))
	}
	n, err := l.d.Read(l.buf[:len(evs)])
	for i, e := range l.buf[:n] {
		evs[i] = evdevEvent{Type: e.Type, Code: e.Code, Value: e.Value}
	}
	return n, err
}

func (l *linuxDev) KeysDown() ([]uint16, error) {
	b, err := l.state.KeyState()
	if err != nil {
		return nil, err
	}
	var out []uint16
	for _, c := range b.Set() {
		out = append(out, uint16(c))
	}
	return out, nil
}

func (l *linuxDev) LEDs() (keys.Locks, bool, error) {
	if !l.leds {
		return 0, false, nil
	}
	b, err := l.d.LEDState()
	if err != nil {
		return 0, false, err
	}
	var out keys.Locks
	if b.Has(evdev.LEDCapsLock) {
		out |= keys.LockCaps
	}
	if b.Has(evdev.LEDNumLock) {
		out |= keys.LockNum
	}
	return out, true, nil
}

func (l *linuxDev) Grab() error   { return l.d.Grab() }
func (l *linuxDev) Ungrab() error { return l.d.Ungrab() }
func (l *linuxDev) Close() error {
	l.state.Close()
	return l.d.Close()
}

// systemLocalKeyboard makes send's virtual keyboard of local keys
// (LocalKeysName) on /dev/uinput.
func systemLocalKeyboard() (localKeyboard, error) {
	f, err := os.OpenFile(uinputPath, os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%s is not writable by this user: %s", uinputPath, uinputFix)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist: load the module (sudo modprobe uinput)", uinputPath)
		}
		return nil, fmt.Errorf("cannot open %s: %w", uinputPath, err)
	}
	f.Close()
	kb, err := evdev.CreateKeyboard(uinputPath, LocalKeysName, maxLocalKey)
	if err != nil {
		return nil, fmt.Errorf("unable to create a virtual keyboard on %s: %w", uinputPath, err)
	}
	return uinputLocal{kb}, nil
}

// uinputLocal is a localKeyboard on a uinput device.
type uinputLocal struct{ kb *evdev.Virtual }

func (u uinputLocal) Key(code uint16, down bool) error {
	v := int32(0)
	if down {
		v = 1
	}
	return u.kb.Write(evdev.Event{Type: evdev.EvKey, Code: code, Value: v})
}

func (u uinputLocal) Close() error { return u.kb.Close() }
