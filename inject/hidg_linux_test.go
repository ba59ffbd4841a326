package inject

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// fakeHidg is /dev/hidg0 as Hidg sees it: the reports written, in order,
// and LED reports the host sends. Its methods run on Hidg's goroutines;
// the tests read it inside a synctest bubble after synctest.Wait.
type fakeHidg struct {
	reports  []string
	deadline time.Time
	fail     error // what the next writes return
	leds     chan []byte
	closed   chan struct{}
}

func newFakeHidg() *fakeHidg {
	return &fakeHidg{leds: make(chan []byte), closed: make(chan struct{})}
}

func (f *fakeHidg) Write(b []byte) (int, error) {
	if f.deadline.IsZero() {
		return 0, errors.New("write without a deadline")
	}
	if f.fail != nil {
		return 0, f.fail
	}
	f.reports = append(f.reports, fmt.Sprintf("% x", b))
	return len(b), nil
}

func (f *fakeHidg) Read(b []byte) (int, error) {
	select {
	case l := <-f.leds:
		return copy(b, l), nil
	case <-f.closed:
		return 0, os.ErrClosed
	}
}

func (f *fakeHidg) SetWriteDeadline(t time.Time) error { f.deadline = t; return nil }
func (f *fakeHidg) Close() error                       { close(f.closed); return nil }

func press(c keys.Code) Event   { return Event{Key: keys.Key(c), Down: true} }
func release(c keys.Code) Event { return Event{Key: keys.Key(c)} }

// TestHidgWritesEachChange: each key event that changes the held set is
// one report with the whole state (internal/usb/hidkbd); an event that changes
// nothing the host sees (an eighth key in rollover) writes nothing; Close
// tells the host that nothing is held.
func TestHidgWritesEachChange(t *testing.T) {
	k1, k2, k3, k4, k5, k6, k7, k8 := keys.KeyA, keys.KeyB, keys.KeyC, keys.KeyD, keys.KeyE, keys.KeyF, keys.KeyG, keys.KeyH
	tests := []struct {
		name   string
		events []Event
		want   []string
	}{
		{"shift b", []Event{press(keys.ShiftLeft), press(keys.KeyB), release(keys.KeyB), release(keys.ShiftLeft)},
			[]string{"02 00 00 00 00 00 00 00", "02 00 05 00 00 00 00 00", "02 00 00 00 00 00 00 00", "00 00 00 00 00 00 00 00"}},
		{"eight keys held", []Event{press(k1), press(k2), press(k3), press(k4), press(k5), press(k6), press(k7), press(k8), release(k1), release(k2)},
			[]string{"00 00 04 00 00 00 00 00", "00 00 04 05 00 00 00 00", "00 00 04 05 06 00 00 00", "00 00 04 05 06 07 00 00",
				"00 00 04 05 06 07 08 00", "00 00 04 05 06 07 08 09", "00 00 01 01 01 01 01 01", "00 00 06 07 08 09 0a 0b",
				"00 00 00 00 00 00 00 00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dev := newFakeHidg()
				h := newHidg("/dev/hidg0", dev, nil)
				for _, e := range tt.events {
					if err := h.Inject(e); err != nil {
						t.Fatalf("Inject(%v): %v", e, err)
					}
				}
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dev.reports, tt.want) {
					t.Errorf("reports\n%s\nwant\n%s", strings.Join(dev.reports, "\n"), strings.Join(tt.want, "\n"))
				}
			})
		})
	}
}

// TestHidgHostNotConfigured: a host that has not configured the gadget
// (the kernel's ESHUTDOWN) or stops reading it (the write deadline) gets
// an error saying so, not fatal, and logged once, not per key; once it
// reads again the next report carries the whole state.
func TestHidgHostNotConfigured(t *testing.T) {
	for _, tt := range []struct {
		fail error
		want string
	}{
		{syscall.ESHUTDOWN, "has not configured the keyboard gadget /dev/hidg0"},
		{os.ErrDeadlineExceeded, "did not read the keyboard gadget /dev/hidg0 within 1s"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dev := newFakeHidg()
				var logged []string
				h := newHidg("/dev/hidg0", dev, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
				h.Inject(press(keys.KeyA))
				dev.fail = tt.fail
				err := h.Inject(press(keys.KeyB))
				if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrGone) {
					t.Errorf("Inject = %v, want a non-fatal error saying %q", err, tt.want)
				}
				h.Inject(press(keys.KeyC))
				dev.fail = nil
				h.Inject(release(keys.KeyC))
				h.Inject(release(keys.KeyB))
				// Said once when it starts, once when it ends: not per key.
				if len(logged) != 2 || !strings.Contains(logged[0], tt.want) || !strings.Contains(logged[1], "reads the keyboard gadget /dev/hidg0 again") {
					t.Errorf("logged %q, want the failure once and the recovery once", logged)
				}
				want := []string{"00 00 04 00 00 00 00 00", "00 00 04 05 00 00 00 00", "00 00 04 00 00 00 00 00"}
				if !slices.Equal(dev.reports, want) {
					t.Errorf("reports %q, want %q (the state rewritten after the failure)", dev.reports, want)
				}
				h.Close()
			})
		})
	}
}

// TestHidgGone: a device that no longer exists stops recv (ErrGone),
// naming it.
func TestHidgGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dev := newFakeHidg()
		h := newHidg("/dev/hidg0", dev, nil)
		dev.fail = syscall.ENODEV
		if err := h.Inject(press(keys.KeyA)); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "/dev/hidg0 went away") {
			t.Errorf("Inject = %v, want ErrGone naming the device", err)
		}
		h.Close()
	})
}

// TestHidgSetLocks (PROTOCOL.md §3.2): Caps Lock and Num Lock are tapped
// where the host's last LED report differs from the sender's state, and
// not at all where it agrees or the sender holds the lock key.
func TestHidgSetLocks(t *testing.T) {
	caps, num := "00 00 39 00 00 00 00 00", "00 00 53 00 00 00 00 00"
	zero := "00 00 00 00 00 00 00 00"
	tests := []struct {
		name string
		leds []byte // the host's LED report, nil for none yet
		held []keys.Code
		want keys.Locks
		taps []string
	}{
		{"no LED report yet: lights off", nil, nil, keys.LocksKnown | keys.LockCaps, []string{caps, zero}},
		{"caps off on the host, on at the sender", []byte{0x00}, nil, keys.LocksKnown | keys.LockCaps, []string{caps, zero}},
		{"both differ", []byte{0x02}, nil, keys.LocksKnown | keys.LockNum, []string{caps, zero, num, zero}},
		{"the same", []byte{0x03}, nil, keys.LocksKnown | keys.LockNum | keys.LockCaps, nil},
		{"scroll lock is not ours", []byte{0x04}, nil, keys.LocksKnown, nil},
		{"the sender holds Caps Lock", []byte{0x00}, []keys.Code{keys.CapsLock}, keys.LocksKnown | keys.LockCaps, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dev := newFakeHidg()
				h := newHidg("/dev/hidg0", dev, nil)
				if tt.leds != nil {
					dev.leds <- tt.leds
					synctest.Wait()
				}
				for _, c := range tt.held {
					h.Inject(press(c))
				}
				dev.reports = nil
				if err := h.SetLocks(tt.want, 1); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dev.reports, tt.taps) {
					t.Errorf("reports %q, want %q", dev.reports, tt.taps)
				}
				h.Close()
			})
		})
	}
}

// TestHidgCannotTypeCharacters: a USB keyboard has no layout to type a
// character with: it is reported once, naming none, and nothing is
// written; a key with no usage a report carries is skipped too.
func TestHidgCannotTypeCharacters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged []string
		dev := newFakeHidg()
		h := newHidg("/dev/hidg0", dev, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
		for _, r := range "éß" {
			if err := h.Inject(Event{Key: keys.Char(r), Down: true}); !errors.Is(err, ErrCannotType) {
				t.Errorf("Inject(%q) = %v, want ErrCannotType", r, err)
			}
		}
		if err := h.Inject(press(0x1FF)); !errors.Is(err, ErrCannotType) {
			t.Errorf("Inject(0x1FF) = %v, want ErrCannotType", err)
		}
		if len(dev.reports) != 0 || len(logged) != 2 || strings.Contains(logged[0], "é") {
			t.Errorf("reports %q, logged %q: want none, and two lines naming no character", dev.reports, logged)
		}
		h.Close()
		if len(dev.reports) != 0 {
			t.Errorf("Close wrote %q with nothing ever written", dev.reports)
		}
	})
}

// TestHidgOpenErrors: a missing device, or a path that is no device, gets
// an error saying what to do.
func TestHidgOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "hidg0")
	if _, err := NewHidg(missing, nil); !errors.Is(err, ErrNoHidg) || !strings.Contains(err.Error(), "no "+missing+": set up the USB keyboard gadget first (sudo keyrelay gadget setup") {
		t.Errorf("missing device: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := NewHidg(file, nil); !errors.Is(err, ErrNoHidg) || !strings.Contains(err.Error(), "not a character device") {
		t.Errorf("a regular file: %v", err)
	}
	perm := hidgOpenError("/dev/hidg0", os.ErrPermission)
	if !strings.Contains(perm.Error(), "udev rule") {
		t.Errorf("permission error: %v", perm)
	}
}

// TestCheckHidg: doctor's hidg check passes for a character device this
// user can open and otherwise names the fix: keyrelay gadget setup for a
// missing device, the gadget's /dev/hidgN for a path that is no character
// device (README "Sources and injectors").
func TestCheckHidg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hidg0")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		fail             bool
	}{
		{"missing", filepath.Join(t.TempDir(), "hidg0"), "keyrelay gadget setup", true},
		{"a plain file", file, "not a character device", true},
		{"a character device", "/dev/null", "/dev/null is a character device", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := CheckHidg(tc.path)
			if tc.fail {
				if !errors.Is(err, ErrNoHidg) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("CheckHidg = %q, %v; want ErrNoHidg saying %q", ok, err, tc.want)
				}
				return
			}
			if err != nil || !strings.Contains(ok, tc.want) {
				t.Fatalf("CheckHidg = %q, %v; want %q", ok, err, tc.want)
			}
		})
	}
}

// TestHidgTypesThroughLayout: with --layout, a character is one report
// per press and release of its layout's keys (de: @ is AltGr+Q, right
// Alt's modifier bit 0x40 then usage 0x14; é the dead acute key, usage
// 0x2e, then e, 0x08), so that the host sees AltGr before the key and a
// dead key's release before its base; the host's Caps Lock LED inverts a
// letter's Shift; a character the layout lacks writes nothing.
func TestHidgTypesThroughLayout(t *testing.T) {
	de := testLayout(t, "de")
	const none = "00 00 00 00 00 00 00 00"
	char := func(r rune) []Event { return []Event{{Key: keys.Char(r), Down: true}, {Key: keys.Char(r)}} }
	tests := []struct {
		name    string
		capsLED bool
		events  []Event
		want    []string
		cannot  bool
	}{
		{"AltGr", false, char('@'), []string{"40 00 00 00 00 00 00 00", "40 00 14 00 00 00 00 00", "40 00 00 00 00 00 00 00", none}, false},
		{"dead key", false, char('é'), []string{"00 00 2e 00 00 00 00 00", none, "00 00 08 00 00 00 00 00", none}, false},
		{"Caps Lock lit", true, char('y'), []string{"02 00 00 00 00 00 00 00", "02 00 1d 00 00 00 00 00", "02 00 00 00 00 00 00 00", none}, false},
		{"lacking", false, char('ٹ'), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dev := newFakeHidg()
				h := newHidg("/dev/hidg0", dev, nil)
				h.SetLayout(de)
				if tt.capsLED {
					dev.leds <- []byte{0x02}
					synctest.Wait()
				}
				var err error
				for _, e := range tt.events {
					if e := h.Inject(e); e != nil {
						err = e
					}
				}
				if !slices.Equal(dev.reports, tt.want) {
					t.Errorf("reports %q, want %q", dev.reports, tt.want)
				}
				if got := errors.Is(err, ErrCannotType); got != tt.cannot {
					t.Errorf("error %v; want ErrCannotType: %v", err, tt.cannot)
				}
				h.Close()
			})
		})
	}
}
