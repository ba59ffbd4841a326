package inject

import (
	"errors"
	"slices"
	"testing"

	"github.com/keyrelay/keyrelay/internal/darwin"
	"github.com/keyrelay/keyrelay/keys"
)

// TestMacOSPostsKeysAndCharacters: what the macOS injector posts for a
// session's events: modifiers as FlagsChanged with their flags, a key
// under them carrying the flags and Caps Lock as the system has it,
// characters as Unicode strings without flags, and a key without a macOS
// keycode skipped with ErrCannotType.
func TestMacOSPostsKeysAndCharacters(t *testing.T) {
	var posted []darwin.Post
	sysFlags := darwin.FlagAlphaShift | darwin.FlagNonCoalesced
	m := newMacOS(func(p darwin.Post) error { posted = append(posted, p); return nil },
		func() darwin.Flags { return sysFlags }, func(string, ...any) {})
	shift := darwin.FlagShift | darwin.DevLeftShift
	for _, tc := range []struct {
		ev   Event
		want []darwin.Post
		err  error
	}{
		{Event{Key: keys.Key(keys.ShiftLeft), Down: true}, []darwin.Post{{Keycode: 0x38, Down: true, Type: darwin.FlagsChanged, Flags: shift | darwin.FlagAlphaShift}}, nil},
		{Event{Key: keys.Key(keys.KeyQ), Down: true}, []darwin.Post{{Keycode: 0x0C, Down: true, Type: darwin.KeyDown, Flags: shift | darwin.FlagAlphaShift}}, nil},
		{Event{Key: keys.Key(keys.KeyQ)}, []darwin.Post{{Keycode: 0x0C, Type: darwin.KeyUp, Flags: shift | darwin.FlagAlphaShift}}, nil},
		{Event{Key: keys.Key(keys.ShiftLeft)}, []darwin.Post{{Keycode: 0x38, Type: darwin.FlagsChanged, Flags: darwin.FlagAlphaShift}}, nil},
		{Event{Key: keys.Char('ß'), Down: true}, []darwin.Post{{Type: darwin.KeyDown, Down: true, Text: []uint16{'ß'}}}, nil},
		{Event{Key: keys.Char('ß')}, []darwin.Post{{Type: darwin.KeyUp, Text: []uint16{'ß'}}}, nil},
		{Event{Key: keys.Key(keys.Power), Down: true}, nil, ErrCannotType},
	} {
		posted = nil
		err := m.Inject(tc.ev)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("Inject(%v down=%v) = %v, want %v", tc.ev.Key, tc.ev.Down, err, tc.err)
		}
		if !slices.EqualFunc(posted, tc.want, func(a, b darwin.Post) bool {
			return a.Keycode == b.Keycode && a.Down == b.Down && a.Type == b.Type && a.Flags == b.Flags && slices.Equal(a.Text, b.Text)
		}) {
			t.Errorf("Inject(%v down=%v) posted %+v, want %+v", tc.ev.Key, tc.ev.Down, posted, tc.want)
		}
	}
}

// TestMacOSPressesEveryKeyWithAKeycode: every key the table gives a macOS
// virtual keycode is posted as that keycode (keys.MacOSKeycode), down and
// up, and nothing is skipped.
func TestMacOSPressesEveryKeyWithAKeycode(t *testing.T) {
	var posted []darwin.Post
	m := newMacOS(func(p darwin.Post) error { posted = append(posted, p); return nil },
		func() darwin.Flags { return 0 }, func(string, ...any) {})
	n := 0
	for _, info := range keys.All() {
		vk, ok := keys.MacOSKeycode(info.Code)
		if !ok {
			continue
		}
		n++
		posted = nil
		for _, down := range []bool{true, false} {
			if err := m.Inject(Event{Key: keys.Key(info.Code), Down: down}); err != nil {
				t.Fatalf("Inject(%v) = %v", info.Code, err)
			}
		}
		if len(posted) != 2 || posted[0].Keycode != vk || posted[1].Keycode != vk || !posted[0].Down || posted[1].Down {
			t.Errorf("%v: posted %+v, want keycode %#x down then up", info.Code, posted, vk)
		}
	}
	if n < 100 {
		t.Errorf("only %d keys with a macOS keycode", n)
	}
}

type fakeCaps struct {
	on   bool
	sets []bool
}

func (f *fakeCaps) On() (bool, error) { return f.on, nil }
func (f *fakeCaps) Set(on bool) error { f.on = on; f.sets = append(f.sets, on); return nil }
func (f *fakeCaps) Close() error      { return nil }

// TestMacOSSetsCapsLock: Caps Lock follows the sender's known lock state
// (PROTOCOL.md §3.2), set only when it differs; Num Lock is left; without
// a way to set it, that is said once and nothing fails.
func TestMacOSSetsCapsLock(t *testing.T) {
	caps := &fakeCaps{}
	m := newMacOS(nil, nil, func(string, ...any) {})
	m.caps = caps
	for _, l := range []keys.Locks{
		keys.LocksKnown | keys.LockCaps,
		keys.LocksKnown | keys.LockCaps | keys.LockNum | keys.LockEpoch,
		keys.LocksKnown | keys.LockNum,
		keys.LocksKnown,
	} {
		if err := m.SetLocks(l, 1); err != nil {
			t.Fatalf("SetLocks(%v) = %v", l, err)
		}
	}
	if !slices.Equal(caps.sets, []bool{true, false}) {
		t.Errorf("Caps Lock set %v, want on then off (only on a change)", caps.sets)
	}
	var notes []string
	m = newMacOS(nil, nil, func(f string, a ...any) { notes = append(notes, f) })
	m.capsWhy = errors.New("no IOHIDSystem service")
	for range 3 {
		if err := m.SetLocks(keys.LocksKnown|keys.LockCaps, 1); err != nil {
			t.Fatalf("SetLocks without IOKit = %v, want nil (said once)", err)
		}
	}
	if len(notes) != 1 {
		t.Errorf("said %d times, want once: %q", len(notes), notes)
	}
}
