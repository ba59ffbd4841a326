package evdev

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// uinput's ioctl requests (linux/uinput.h).
func uioc(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | 'U'<<8 | nr }

// uinputSetup is struct uinput_setup: the device's id, name and force
// feedback slots (none).
type uinputSetup struct {
	Bustype, Vendor, Product, Version uint16
	Name                              [80]byte
	FFEffectsMax                      uint32
}

var (
	uiDevCreate  = uioc(0, 1, 0)
	uiDevDestroy = uioc(0, 2, 0)
	uiDevSetup   = uioc(iocWrite, 3, unsafe.Sizeof(uinputSetup{}))
	uiSetEvBit   = uioc(iocWrite, 100, 4)
	uiSetKeyBit  = uioc(iocWrite, 101, 4)
	uiSetLEDBit  = uioc(iocWrite, 105, 4)
)

// LEDScrollLock is LED_SCROLLL, beside LEDNumLock and LEDCapsLock.
const LEDScrollLock = 0x02

const busVirtual = 0x06

// Virtual is a keyboard made through /dev/uinput, as a real one is seen:
// its keys, the kernel's auto-repeat (EV_REP: a held key repeats at the
// kernel's rate, 250 ms then every 33 ms, for every reader), and Num, Caps
// and Scroll Lock LEDs that whoever owns the keyboard's lock state (the
// console, X, a Wayland compositor) lights, and Read reports. Write and
// Read may be called from two goroutines at once (one each); Close from
// either.
type Virtual struct {
	Device
}

// CreateKeyboard makes a keyboard named name on the uinput device at path
// (/dev/uinput) with the key codes 1 to maxKey.
func CreateKeyboard(path, name string, maxKey int) (*Virtual, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	d, err := newDevice(f)
	if err != nil {
		return nil, err
	}
	v := &Virtual{Device: *d}
	fail := func(what string, err error) (*Virtual, error) {
		v.f.Close()
		return nil, fmt.Errorf("%s on %s: %w", what, path, err)
	}
	for _, ev := range []uintptr{EvKey, EvRep, EvLED} {
		if err := v.ioctlValue(uiSetEvBit, ev); err != nil {
			return fail(fmt.Sprintf("UI_SET_EVBIT %d", ev), err)
		}
	}
	for k := 1; k <= maxKey; k++ {
		if err := v.ioctlValue(uiSetKeyBit, uintptr(k)); err != nil {
			return fail(fmt.Sprintf("UI_SET_KEYBIT %d", k), err)
		}
	}
	for _, led := range []uintptr{LEDNumLock, LEDCapsLock, LEDScrollLock} {
		if err := v.ioctlValue(uiSetLEDBit, led); err != nil {
			return fail(fmt.Sprintf("UI_SET_LEDBIT %d", led), err)
		}
	}
	setup := uinputSetup{Bustype: busVirtual, Vendor: 0x4b52, Product: 0x0001, Version: 1}
	if len(name) >= len(setup.Name) {
		return fail("naming the keyboard", errors.New("name too long"))
	}
	copy(setup.Name[:], name)
	if err := v.ioctl(uiDevSetup, unsafe.Pointer(&setup)); err != nil {
		return fail("UI_DEV_SETUP", err)
	}
	if err := v.ioctlValue(uiDevCreate, 0); err != nil {
		return fail("UI_DEV_CREATE", err)
	}
	return v, nil
}

// Write sends evs and a SYN_REPORT after them, in one write.
func (v *Virtual) Write(evs ...Event) error {
	var b []byte
	for _, e := range evs {
		b = EncodeEvent(b, e)
	}
	b = EncodeEvent(b, Event{Type: EvSyn, Code: SynReport})
	_, err := v.f.Write(b)
	return err
}

// Close destroys the keyboard (the kernel releases its keys) and closes
// the file, ending a waiting Read.
func (v *Virtual) Close() error {
	err := v.ioctlValue(uiDevDestroy, 0)
	if errors.Is(err, syscall.EBADF) || errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return errors.Join(err, v.f.Close())
}
