package inject

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/keyrelay/keyrelay/internal/linux/evdev"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// fakeUinput is a virtual keyboard as Uinput sees it: the events written,
// and the LED events the kernel hands back. Used inside synctest bubbles.
type fakeUinput struct {
	written []string
	fail    error
	leds    chan []evdev.Event
	closed  chan struct{}
}

func newFakeUinput() *fakeUinput {
	return &fakeUinput{leds: make(chan []evdev.Event), closed: make(chan struct{})}
}

func (f *fakeUinput) Write(evs ...evdev.Event) error {
	if f.fail != nil {
		return f.fail
	}
	for _, e := range evs {
		f.written = append(f.written, fmt.Sprintf("%d:%d", e.Code, e.Value))
	}
	return nil
}

func (f *fakeUinput) Read(evs []evdev.Event) (int, error) {
	select {
	case l := <-f.leds:
		return copy(evs, l), nil
	case <-f.closed:
		return 0, os.ErrClosed
	}
}

func (f *fakeUinput) Close() error { close(f.closed); return nil }

// TestUinputGone: a virtual keyboard that fails a write is gone, and
// Inject's error wraps ErrGone (recv stops, non-zero) and names the device.
func TestUinputGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kb := newFakeUinput()
		kb.fail = errors.New("write /dev/uinput: no such device")
		u := newUinput("/dev/uinput", kb, nil)
		err := u.Inject(Event{Key: keys.Key(keys.KeyA), Down: true})
		if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), `virtual keyboard "keyrelay" on /dev/uinput stopped taking keys`) {
			t.Errorf("Inject on a broken device: %v; want ErrGone naming the device", err)
		}
		u.Close()
	})
}

// TestUinputSetLocks (PROTOCOL.md §3.2): Caps Lock and Num Lock (evdev 58,
// 69) are tapped where the keyboard's LEDs, as the kernel reported them,
// differ from the sender's state; not where they agree, nor while the
// sender holds the lock key.
func TestUinputSetLocks(t *testing.T) {
	caps, num := []string{"58:1", "58:0"}, []string{"69:1", "69:0"}
	led := func(code uint16, on int32) evdev.Event { return evdev.Event{Type: evdev.EvLED, Code: code, Value: on} }
	tests := []struct {
		name string
		leds []evdev.Event
		held []keys.Code
		want keys.Locks
		taps []string
	}{
		{"no LED told yet: off", nil, nil, keys.LocksKnown | keys.LockCaps, caps},
		{"caps lit, the sender's off", []evdev.Event{led(evdev.LEDCapsLock, 1)}, nil, keys.LocksKnown, caps},
		{"caps lit then put out", []evdev.Event{led(evdev.LEDCapsLock, 1), led(evdev.LEDCapsLock, 0)}, nil, keys.LocksKnown | keys.LockCaps, caps},
		{"both differ", []evdev.Event{led(evdev.LEDNumLock, 1)}, nil, keys.LocksKnown | keys.LockCaps, slices.Concat(caps, num)},
		{"the same", []evdev.Event{led(evdev.LEDNumLock, 1), led(evdev.LEDCapsLock, 1)}, nil, keys.LocksKnown | keys.LockCaps | keys.LockNum, nil},
		{"scroll lock is not ours", []evdev.Event{led(evdev.LEDScrollLock, 1)}, nil, keys.LocksKnown, nil},
		{"the sender holds Num Lock", nil, []keys.Code{keys.NumLock}, keys.LocksKnown | keys.LockNum, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				kb := newFakeUinput()
				u := newUinput("/dev/uinput", kb, nil)
				if tt.leds != nil {
					kb.leds <- tt.leds
					synctest.Wait()
				}
				for _, c := range tt.held {
					u.Inject(Event{Key: keys.Key(c), Down: true})
				}
				kb.written = nil
				if err := u.SetLocks(tt.want, 1); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(kb.written, tt.taps) {
					t.Errorf("wrote %q, want %q", kb.written, tt.taps)
				}
				u.Close()
			})
		})
	}
}

// TestUinputTypesThroughLayout: with --layout, a character is its
// layout's evdev presses (de: @ is AltGr+Q, evdev 100 and 16; Z is
// Shift+Y, 42 and 21; under Caps Lock a letter's Shift inverts), typed
// when it goes down, nothing when it goes up; a character the layout
// lacks, or any without --layout, is ErrCannotType with nothing written.
func TestUinputTypesThroughLayout(t *testing.T) {
	de := testLayout(t, "de")
	char := func(r rune, down bool) Event { return Event{Key: keys.Char(r), Down: down} }
	tests := []struct {
		name    string
		layout  *xkblayout.Layout
		capsLED bool
		events  []Event
		want    []string
		cannot  bool
	}{
		{"AltGr", de, false, []Event{char('@', true), char('@', false)}, []string{"100:1", "16:1", "16:0", "100:0"}, false},
		{"Shift", de, false, []Event{char('Z', true), char('Z', false)}, []string{"42:1", "21:1", "21:0", "42:0"}, false},
		{"Caps Lock lit", de, true, []Event{char('z', true)}, []string{"42:1", "21:1", "21:0", "42:0"}, false},
		{"held Shift released around", de, false, []Event{press(keys.ShiftLeft), char('ß', true)}, []string{"42:1", "42:0", "12:1", "12:0", "42:1"}, false},
		{"lacking", de, false, []Event{char('ٹ', true)}, nil, true},
		{"no layout", nil, false, []Event{char('a', true)}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				kb := newFakeUinput()
				u := newUinput("/dev/uinput", kb, nil)
				u.SetLayout(tt.layout)
				if tt.capsLED {
					kb.leds <- []evdev.Event{{Type: evdev.EvLED, Code: evdev.LEDCapsLock, Value: 1}}
					synctest.Wait()
				}
				var err error
				for _, e := range tt.events {
					if e := u.Inject(e); e != nil {
						err = e
					}
				}
				if !slices.Equal(kb.written, tt.want) {
					t.Errorf("wrote %q, want %q", kb.written, tt.want)
				}
				if got := errors.Is(err, ErrCannotType); got != tt.cannot {
					t.Errorf("error %v; want ErrCannotType: %v", err, tt.cannot)
				}
				u.Close()
			})
		})
	}
}

// TestUinputCannotTypeCharacters: the kernel has no layout, so without
// --layout uinput reports characters once, naming none, types nothing in their place (it never touches
// the device for it) and returns ErrCannotType each time, for the receiver
// to count (PROTOCOL.md §3.1).
func TestUinputCannotTypeCharacters(t *testing.T) {
	var logged []string
	u := &Uinput{logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	for range 3 {
		for _, down := range []bool{true, false} {
			if err := u.Inject(Event{Key: keys.Char('é'), Down: down}); !errors.Is(err, ErrCannotType) {
				t.Fatalf("Inject('é') = %v, want ErrCannotType", err)
			}
		}
	}
	if err := u.Inject(Event{Key: keys.Char('ß'), Down: true}); !errors.Is(err, ErrCannotType) {
		t.Fatalf("Inject('ß') = %v, want ErrCannotType", err)
	}
	// One line for all characters, naming none of them (a character may be
	// a password's: inject.skipped), and the fix.
	if len(logged) != 1 || strings.Contains(logged[0], "'é'") || strings.Contains(logged[0], "'ß'") || !strings.Contains(logged[0], "recv --layout") {
		t.Errorf("logged %q, want one line naming recv --layout and no character", logged)
	}
}
