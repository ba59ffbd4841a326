package evdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dir is where the kernel (devtmpfs, udev) puts the event devices.
const Dir = "/dev/input"

// Event types and codes keyrelay reads (linux/input-event-codes.h).
const (
	EvSyn = 0x00
	EvKey = 0x01
	EvLED = 0x11
	EvRep = 0x14

	SynReport  = 0
	SynDropped = 3

	LEDNumLock  = 0x00
	LEDCapsLock = 0x01

	KeyCnt = 0x300 // KEY_MAX + 1: key and button codes
	ledCnt = 0x10
	evCnt  = 0x20
)

// Event is one input event, without its timestamp.
type Event struct {
	Type  uint16
	Code  uint16
	Value int32
}

// longSize is the size of a C long, the unit of the kernel's bitmaps and of
// struct input_event's timestamp (two longs on every architecture, 64-bit
// time or not).
const longSize = int(unsafe.Sizeof(uint(0)))

// EventSize is the size of struct input_event: 24 bytes on 64-bit systems,
// 16 on 32-bit ones.
const EventSize = 2*longSize + 8

// ioctl request numbers (asm-generic/ioctl.h: the same on x86, arm, arm64).
func ioc(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | 'E'<<8 | nr }

const (
	iocWrite = 1
	iocRead  = 2
)

func eviocgversion() uintptr            { return ioc(iocRead, 0x01, 4) }
func eviocgname(n int) uintptr          { return ioc(iocRead, 0x06, uintptr(n)) }
func eviocgkey(n int) uintptr           { return ioc(iocRead, 0x18, uintptr(n)) }
func eviocgled(n int) uintptr           { return ioc(iocRead, 0x19, uintptr(n)) }
func eviocgbit(ev, n int) uintptr       { return ioc(iocRead, 0x20+uintptr(ev), uintptr(n)) }
func eviocgrab() uintptr                { return ioc(iocWrite, 0x90, 4) }
func bitmapBytes(bits int) int          { return (bits + 8*longSize - 1) / (8 * longSize) * longSize }
func errnoErr(op string, e error) error { return fmt.Errorf("%s: %w", op, e) }

// Bits is a kernel bitmap (capabilities, key or LED state): bit n is in the
// nth bit of an array of native-endian longs.
type Bits []byte

// Has reports whether bit n is set.
func (b Bits) Has(n int) bool {
	if n < 0 {
		return false
	}
	i := n / (8 * longSize) * longSize
	if i+longSize > len(b) {
		return false
	}
	bit := uint(n % (8 * longSize))
	if longSize == 8 {
		return binary.NativeEndian.Uint64(b[i:])>>bit&1 == 1
	}
	return binary.NativeEndian.Uint32(b[i:])>>bit&1 == 1
}

// Set lists the bits set, in increasing order.
func (b Bits) Set() []int {
	var out []int
	for n := range 8 * len(b) {
		if b.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// Device is an open event device. Read may run in one goroutine while the
// other methods run in another; Close ends a waiting Read at once.
type Device struct {
	f    *os.File
	rc   syscall.RawConn
	path string
	buf  []byte // Read's buffer
}

// Open opens an event device for reading. Its errors wrap the errno, so
// errors.Is(err, fs.ErrPermission) and errors.Is(err, fs.ErrNotExist) work.
func Open(path string) (*Device, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// Asked first, on the bare descriptor: a file that is not a device
	// (nor pollable) says so here rather than as a poller error.
	var version int32
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), eviocgversion(), uintptr(unsafe.Pointer(&version))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not an event device: %w", path, errno)
	}
	return newDevice(os.NewFile(uintptr(fd), path))
}

// newDevice wraps an open, non-blocking file.
func newDevice(f *os.File) (*Device, error) {
	// A file the runtime poller took has deadlines; one it did not would
	// make Read block a thread that Close cannot wake.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s cannot be read without blocking: %w", f.Name(), err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Device{f: f, rc: rc, path: f.Name()}, nil
}

// Path is the path the device was opened at.
func (d *Device) Path() string { return d.path }

func (d *Device) ioctl(req uintptr, arg unsafe.Pointer) error {
	var errno syscall.Errno
	err := d.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// ioctlValue passes an integer argument rather than a pointer (EVIOCGRAB).
func (d *Device) ioctlValue(req, arg uintptr) error {
	var errno syscall.Errno
	err := d.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, arg)
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// Name is the name the driver gives the device.
func (d *Device) Name() (string, error) {
	b := make([]byte, 256)
	if err := d.ioctl(eviocgname(len(b)), unsafe.Pointer(&b[0])); err != nil {
		return "", errnoErr("EVIOCGNAME "+d.path, err)
	}
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
}

// Capabilities are the codes of event type ev the device can send (ev 0:
// the event types).
func (d *Device) Capabilities(ev int) (Bits, error) {
	n := map[int]int{0: evCnt, EvKey: KeyCnt, EvLED: ledCnt}[ev]
	if n == 0 {
		return nil, fmt.Errorf("capabilities of event type %d are not read here", ev)
	}
	b := make(Bits, bitmapBytes(n))
	if err := d.ioctl(eviocgbit(ev, len(b)), unsafe.Pointer(&b[0])); err != nil {
		return nil, errnoErr("EVIOCGBIT "+d.path, err)
	}
	return b, nil
}

// KeyState is the keys (and buttons) down now, as the kernel sees them.
func (d *Device) KeyState() (Bits, error) {
	b := make(Bits, bitmapBytes(KeyCnt))
	if err := d.ioctl(eviocgkey(len(b)), unsafe.Pointer(&b[0])); err != nil {
		return nil, errnoErr("EVIOCGKEY "+d.path, err)
	}
	return b, nil
}

// LEDState is the LEDs lit now.
func (d *Device) LEDState() (Bits, error) {
	b := make(Bits, bitmapBytes(ledCnt))
	if err := d.ioctl(eviocgled(len(b)), unsafe.Pointer(&b[0])); err != nil {
		return nil, errnoErr("EVIOCGLED "+d.path, err)
	}
	return b, nil
}

// Grab takes the device for this file alone: its events reach no other
// reader (the console, X, Wayland) until Ungrab or Close. The kernel drops
// the grab when the file is closed, the process's death included. Another
// program's grab fails it with EBUSY.
func (d *Device) Grab() error {
	if err := d.ioctlValue(eviocgrab(), 1); err != nil {
		return errnoErr("EVIOCGRAB "+d.path, err)
	}
	return nil
}

// Ungrab gives the device back to every reader.
func (d *Device) Ungrab() error {
	if err := d.ioctlValue(eviocgrab(), 0); err != nil {
		return errnoErr("EVIOCGRAB 0 "+d.path, err)
	}
	return nil
}

// Read waits for events and reads as many as fit in evs (at least one). It
// fails once the device is gone (ENODEV), closed, or past its deadline.
// One goroutine at a time.
func (d *Device) Read(evs []Event) (int, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	if cap(d.buf) < len(evs)*EventSize {
		d.buf = make([]byte, len(evs)*EventSize)
	}
	b := d.buf[:len(evs)*EventSize]
	n, err := d.f.Read(b)
	if err != nil {
		return 0, err
	}
	return DecodeEvents(b[:n], evs), nil
}

// DecodeEvents decodes the whole struct input_event records at the start of
// b into evs (as many as both hold) and returns how many. The kernel only
// ever returns whole events; a short tail is ignored.
func DecodeEvents(b []byte, evs []Event) int {
	k := min(len(b)/EventSize, len(evs))
	for i := range k {
		e := b[i*EventSize+2*longSize:]
		evs[i] = Event{
			Type:  binary.NativeEndian.Uint16(e),
			Code:  binary.NativeEndian.Uint16(e[2:]),
			Value: int32(binary.NativeEndian.Uint32(e[4:])),
		}
	}
	return k
}

// EncodeEvent appends ev as a struct input_event with a zero timestamp (as
// a uinput device is written, and for tests).
func EncodeEvent(b []byte, ev Event) []byte {
	b = append(b, make([]byte, 2*longSize)...)
	b = binary.NativeEndian.AppendUint16(b, ev.Type)
	b = binary.NativeEndian.AppendUint16(b, ev.Code)
	return binary.NativeEndian.AppendUint32(b, uint32(ev.Value))
}

// SetReadDeadline makes a waiting and any later Read fail with
// os.ErrDeadlineExceeded at t; the zero time waits for ever.
func (d *Device) SetReadDeadline(t time.Time) error { return d.f.SetReadDeadline(t) }

// Close closes the device (dropping a grab) and ends a waiting Read.
func (d *Device) Close() error { return d.f.Close() }

// List is the event devices in dir (Dir), in number order.
func List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		n    int
		path string
	}
	var found []numbered
	for _, e := range ents {
		if n, ok := eventNumber(e.Name()); ok {
			found = append(found, numbered{n, filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(found, func(a, b numbered) int { return a.n - b.n })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.path
	}
	return out, nil
}

func eventNumber(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "event")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// Watcher reports event devices appearing in a directory, or changing
// their permissions (udev gives a new node its group and mode just after
// the kernel creates it).
type Watcher struct {
	f       *os.File
	dir     string
	buf     []byte
	pending []string
}

// Watch starts watching dir (Dir) with inotify.
func Watch(dir string) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_MOVED_TO|unix.IN_DELETE_SELF); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch on %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify:"+dir)
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("inotify on %s cannot be read without blocking: %w", dir, err)
	}
	return &Watcher{f: f, dir: dir, buf: make([]byte, 4096)}, nil
}

// ErrDirGone is Next's error when the watched directory is removed.
var ErrDirGone = errors.New("directory removed")

// Next waits for an event device to appear or change, and returns its path.
// It fails once the Watcher is closed. One goroutine at a time.
func (w *Watcher) Next() (string, error) {
	for len(w.pending) == 0 {
		n, err := w.f.Read(w.buf)
		if err != nil {
			return "", err
		}
		names, gone := parseInotify(w.buf[:n])
		if gone {
			return "", fmt.Errorf("%s: %w", w.dir, ErrDirGone)
		}
		for _, name := range names {
			if !slices.Contains(w.pending, name) {
				w.pending = append(w.pending, name)
			}
		}
	}
	name := w.pending[0]
	w.pending = w.pending[1:]
	return filepath.Join(w.dir, name), nil
}

// parseInotify reads the struct inotify_event records in b: the names of
// event devices they report, and whether the directory itself went away.
// A record cut short ends the reading.
func parseInotify(b []byte) (names []string, gone bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:])
		nameLen := int(binary.NativeEndian.Uint32(b[12:]))
		if nameLen < 0 || nameLen > len(b)-unix.SizeofInotifyEvent {
			break
		}
		name := string(b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nameLen])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[unix.SizeofInotifyEvent+nameLen:]
		if mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0 {
			return names, true
		}
		if _, ok := eventNumber(name); ok {
			names = append(names, name)
		}
	}
	return names, false
}

// Close stops watching and ends a waiting Next.
func (w *Watcher) Close() error { return w.f.Close() }
