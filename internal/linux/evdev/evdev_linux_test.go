package evdev

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDecodeEvents: struct input_event records (two longs of timestamp,
// type, code, value) decode to what was encoded; a short tail and a full
// evs are where decoding stops (capture's evdev source reads true downs
// and ups from these records).
func TestDecodeEvents(t *testing.T) {
	want := []Event{{EvKey, 30, 1}, {EvSyn, SynReport, 0}, {EvKey, 30, 2}, {EvKey, 30, 0}, {EvLED, LEDCapsLock, 1}, {EvKey, 0x2ff, -1}}
	var b []byte
	for _, e := range want {
		b = EncodeEvent(b, e)
	}
	if len(b) != len(want)*EventSize {
		t.Fatalf("encoded %d bytes, want %d", len(b), len(want)*EventSize)
	}
	got := make([]Event, 10)
	if n := DecodeEvents(b, got); n != len(want) || !slices.Equal(got[:n], want) {
		t.Errorf("DecodeEvents = %v, want %v", got[:n], want)
	}
	if n := DecodeEvents(b[:len(b)-1], got); n != len(want)-1 {
		t.Errorf("with a short tail DecodeEvents = %d events, want %d", n, len(want)-1)
	}
	if n := DecodeEvents(b, got[:2]); n != 2 || !slices.Equal(got[:2], want[:2]) {
		t.Errorf("into 2 events DecodeEvents = %v", got[:n])
	}
	// The timestamp is skipped, whatever it holds.
	b2 := slices.Clone(b[:EventSize])
	for i := range 2 * longSize {
		b2[i] = 0xff
	}
	if n := DecodeEvents(b2, got); n != 1 || got[0] != want[0] {
		t.Errorf("with a timestamp DecodeEvents = %v", got[:n])
	}
}

// FuzzDecodeEvents: any bytes decode without panicking into len/EventSize
// events, and re-encoding them gives back the bytes but the timestamps.
func FuzzDecodeEvents(f *testing.F) {
	f.Add(EncodeEvent(EncodeEvent(nil, Event{EvKey, 30, 1}), Event{EvSyn, 0, 0}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		evs := make([]Event, len(b)/EventSize+1)
		n := DecodeEvents(b, evs)
		if n != len(b)/EventSize {
			t.Fatalf("%d events from %d bytes", n, len(b))
		}
		var again []byte
		for _, e := range evs[:n] {
			again = EncodeEvent(again, e)
		}
		for i := range n {
			rec := b[i*EventSize : (i+1)*EventSize]
			if string(rec[2*longSize:]) != string(again[i*EventSize+2*longSize:(i+1)*EventSize]) {
				t.Fatalf("event %d: %x re-encoded as %x", i, rec, again[i*EventSize:(i+1)*EventSize])
			}
		}
	})
}

// inotifyRecord builds one struct inotify_event as the kernel writes it,
// the name padded with NULs to len bytes.
func inotifyRecord(mask uint32, name string, pad int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent)
	binary.NativeEndian.PutUint32(b[4:], mask)
	n := len(name) + pad
	if name != "" && pad == 0 {
		n++
	}
	binary.NativeEndian.PutUint32(b[12:], uint32(n))
	b = append(b, name...)
	return append(b, make([]byte, n-len(name))...)
}

func TestParseInotify(t *testing.T) {
	var b []byte
	b = append(b, inotifyRecord(unix.IN_CREATE, "event5", 10)...)
	b = append(b, inotifyRecord(unix.IN_CREATE, "mouse0", 0)...) // not an event device
	b = append(b, inotifyRecord(unix.IN_ATTRIB, "event12", 0)...)
	b = append(b, inotifyRecord(unix.IN_CREATE, "by-id", 3)...)
	names, gone := parseInotify(b)
	if gone || !slices.Equal(names, []string{"event5", "event12"}) {
		t.Errorf("parseInotify = %q, %v; want event5, event12", names, gone)
	}
	// A record cut short is not read.
	if names, _ := parseInotify(b[:len(b)-4]); !slices.Equal(names, []string{"event5", "event12"}) {
		t.Errorf("cut short: %q", names)
	}
	if names, _ := parseInotify(inotifyRecord(unix.IN_CREATE, "event1", 0)[:unix.SizeofInotifyEvent+2]); len(names) != 0 {
		t.Errorf("a name longer than the buffer read as %q", names)
	}
	if _, gone := parseInotify(append(inotifyRecord(unix.IN_CREATE, "event1", 0), inotifyRecord(unix.IN_IGNORED, "", 0)...)); !gone {
		t.Error("IN_IGNORED (the directory is gone) not reported")
	}
}

func FuzzParseInotify(f *testing.F) {
	f.Add(inotifyRecord(unix.IN_CREATE, "event5", 10))
	f.Add(append(inotifyRecord(unix.IN_ATTRIB, "event0", 0), inotifyRecord(unix.IN_DELETE_SELF, "", 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		names, _ := parseInotify(b)
		for _, n := range names {
			if _, ok := eventNumber(n); !ok || !strings.Contains(string(b), n) {
				t.Fatalf("name %q is not an event device's from the input", n)
			}
		}
	})
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"event10", "event2", "mouse0", "eventX", "event0"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := List(dir)
	want := []string{filepath.Join(dir, "event0"), filepath.Join(dir, "event2"), filepath.Join(dir, "event10")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v; want %q", got, err, want)
	}
	if _, err := List(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of a missing directory: %v, want ErrNotExist", err)
	}
}

// TestWatch: a device node created or given new permissions (udev's
// chmod after the kernel creates it) is reported; other names are not; the
// directory going away ends the watch; Close ends a waiting Next.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	w, err := Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, n := range []string{"mouse3", "event7"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := w.Next(); err != nil || p != filepath.Join(dir, "event7") {
		t.Fatalf("Next = %q, %v; want event7", p, err)
	}
	if err := os.Chmod(filepath.Join(dir, "event7"), 0o660); err != nil {
		t.Fatal(err)
	}
	if p, err := w.Next(); err != nil || p != filepath.Join(dir, "event7") {
		t.Fatalf("after chmod Next = %q, %v; want event7", p, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); !errors.Is(err, ErrDirGone) {
		t.Fatalf("after removing the directory Next: %v, want ErrDirGone", err)
	}

	w2, err := Watch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := w2.Next(); done <- err }()
	w2.Close()
	if err := <-done; err == nil {
		t.Fatal("Next after Close returned no error")
	}
}

// TestReadAndClose: Read decodes what the file gives and a waiting Read
// ends when the device is closed (the source closes devices to stop, and
// ungrabbing must not break that: reads wait in the runtime poller). A
// pipe stands in for the device, which these machines lack (the VM
// harness reads real ones).
func TestReadAndClose(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d, err := newDevice(r)
	if err != nil {
		t.Fatal(err)
	}
	in := []Event{{EvKey, 30, 1}, {EvSyn, SynReport, 0}}
	var b []byte
	for _, e := range in {
		b = EncodeEvent(b, e)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	evs := make([]Event, 8)
	if n, err := d.Read(evs); err != nil || !slices.Equal(evs[:n], in) {
		t.Fatalf("Read = %v, %v; want %v", evs[:n], err, in)
	}
	done := make(chan error)
	go func() { _, err := d.Read(evs); done <- err }()
	d.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a waiting Read after Close: %v, want os.ErrClosed", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "event0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing device: %v, want ErrNotExist", err)
	}
	p := filepath.Join(t.TempDir(), "event0")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "not an event device") {
		t.Errorf("Open of a plain file: %v, want 'not an event device'", err)
	}
}

func TestBits(t *testing.T) {
	b := make(Bits, bitmapBytes(KeyCnt))
	set := []int{0, 30, 63, 64, 0x2ff}
	for _, n := range set {
		b[n/8] |= 1 << (n % 8) // little-endian longs: bit n is in byte n/8
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the bitmap layout below is little-endian's")
	}
	if got := b.Set(); !slices.Equal(got, set) {
		t.Errorf("Set = %v, want %v", got, set)
	}
	if b.Has(-1) || b.Has(KeyCnt+64) || b.Has(31) {
		t.Error("Has is true outside the bits set")
	}
}
