package capture

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/darwin"
	"github.com/keyrelay/keyrelay/keys"
)

// Flags of real keyboard events (internal/darwin's tests tell them).
const (
	macPlain  = darwin.FlagNonCoalesced
	macCtrlL  = darwin.FlagNonCoalesced | darwin.FlagControl | darwin.DevLeftControl
	macCtrlLR = macCtrlL | darwin.DevRightControl
	macCtrlR  = darwin.FlagNonCoalesced | darwin.FlagControl | darwin.DevRightControl
	macCaps   = darwin.FlagNonCoalesced | darwin.FlagAlphaShift
)

type macStep struct {
	ev   darwin.Event
	drop bool     // macOS should not have it
	sent []string // what is relayed
}

func runMacTap(t *testing.T, m *MacOS, steps []macStep) *macTap {
	t.Helper()
	var sent []string
	tap := m.newTap(func(k keys.Key, down bool) error {
		sent = append(sent, fmt.Sprintf("%v %s", k, map[bool]string{true: "down", false: "up"}[down]))
		return nil
	})
	for i, s := range steps {
		sent = nil
		if drop := tap.event(s.ev); drop != s.drop {
			t.Errorf("step %d %+v: drop = %v, want %v", i, s.ev, drop, s.drop)
		}
		if !slices.Equal(sent, s.sent) {
			t.Errorf("step %d %+v: relayed %q, want %q", i, s.ev, sent, s.sent)
		}
	}
	return tap
}

// TestMacOSTapListens: without --grab every key is relayed and also left
// to macOS.
func TestMacOSTapListens(t *testing.T) {
	m := &MacOS{}
	runMacTap(t, m, []macStep{
		{darwin.Event{Type: darwin.KeyDown, Keycode: 0x00, Flags: macPlain}, false, []string{"KeyA down"}},
		{darwin.Event{Type: darwin.KeyDown, Keycode: 0x00, Flags: macPlain, Autorepeat: true}, false, nil},
		{darwin.Event{Type: darwin.KeyUp, Keycode: 0x00, Flags: macPlain}, false, []string{"KeyA up"}},
		{darwin.Event{Type: darwin.KeyDown, Keycode: 0x7F, Flags: macPlain}, false, nil},
	})
	if !m.Relaying() || m.Grabbing() {
		t.Errorf("Relaying %v, Grabbing %v: want true, false", m.Relaying(), m.Grabbing())
	}
}

// TestMacOSTapGrabsAndSwitches: with --grab keys are relayed and dropped;
// the hotkey (both Controls) switches to local use, where keys reach macOS
// and are not relayed, and back. A key pressed in local use has its release
// go to macOS even after the switch back, and the hotkey's own keys reach
// neither side (capture.Switch).
func TestMacOSTapGrabsAndSwitches(t *testing.T) {
	m := &MacOS{Grab: true, Label: "peer"}
	down := func(vk uint16, f darwin.Flags) darwin.Event {
		return darwin.Event{Type: darwin.KeyDown, Keycode: vk, Flags: f}
	}
	up := func(vk uint16, f darwin.Flags) darwin.Event {
		return darwin.Event{Type: darwin.KeyUp, Keycode: vk, Flags: f}
	}
	flags := func(vk uint16, f darwin.Flags) darwin.Event {
		return darwin.Event{Type: darwin.FlagsChanged, Keycode: vk, Flags: f}
	}
	tap := runMacTap(t, m, []macStep{
		// Relaying: a is relayed and kept from macOS.
		{down(0x00, macPlain), true, []string{"KeyA down"}},
		{up(0x00, macPlain), true, []string{"KeyA up"}},
		// Control left, then right: the hotkey; s held across.
		{down(0x01, macPlain), true, []string{"KeyS down"}},
		{flags(0x3B, macCtrlL), true, []string{"ControlLeft down"}},
		{flags(0x3E, macCtrlLR), true, []string{"ControlLeft up", "KeyS up"}}, // last pressed first
		// Local use: releases of keys pressed while relaying are dropped.
		{up(0x01, macCtrlLR), true, nil},
		{flags(0x3B, macCtrlR), true, nil},
		{flags(0x3E, macPlain), true, nil},
		// Local keys reach macOS only; b is held across the switch back.
		{down(0x00, macPlain), false, nil},
		{down(0x00, macPlain), false, nil},
		{up(0x00, macPlain), false, nil},
		{down(0x0B, macPlain), false, nil},
		{flags(0x39, macCaps), false, nil},
		{flags(0x3B, macCtrlL|darwin.FlagAlphaShift), false, nil},
		{flags(0x3E, macCtrlLR|darwin.FlagAlphaShift), true, nil},
		// Relaying again: b's and Control left's releases go to macOS,
		// which had their presses; the hotkey's are swallowed.
		{up(0x0B, macCtrlLR|darwin.FlagAlphaShift), false, nil},
		{flags(0x3B, macCtrlR|darwin.FlagAlphaShift), false, nil},
		{flags(0x3E, macCaps), true, nil},
		{down(0x00, macCaps), true, []string{"KeyA down"}},
		{flags(0x39, macPlain), true, []string{"CapsLock down", "CapsLock up"}},
	})
	if !m.Relaying() {
		t.Error("not relaying at the end")
	}
	// Caps Lock was on as relaying resumed (PROTOCOL.md §3.2), epoch
	// flipped from 0.
	if want := keys.LocksKnown | keys.LockCaps | keys.LockNum | keys.LockEpoch; m.Locks() != want {
		t.Errorf("Locks = %v (%#x), want %#x", m.Locks(), m.Locks(), want)
	}
	var sent []string
	tap.emit = func(k keys.Key, down bool) error { sent = append(sent, k.String()); return nil }
	tap.sw.Emit = tap.emit
	if err := tap.stop(); err != nil || !slices.Equal(sent, []string{"KeyA"}) {
		t.Errorf("stop: %v, released %v; want KeyA released", err, sent)
	}
}

// TestMacOSTapKeepsTheFirstError: a relay error stops the source with it.
func TestMacOSTapKeepsTheFirstError(t *testing.T) {
	m := &MacOS{}
	boom := errors.New("sender gone")
	tap := m.newTap(func(keys.Key, bool) error { return boom })
	tap.event(darwin.Event{Type: darwin.KeyDown, Keycode: 0x00, Flags: macPlain})
	tap.event(darwin.Event{Type: darwin.KeyUp, Keycode: 0x00, Flags: macPlain})
	if !errors.Is(tap.err, boom) {
		t.Errorf("err = %v, want %v", tap.err, boom)
	}
}

func TestMacOSUnknownKeycodeIsSaidOnce(t *testing.T) {
	var out strings.Builder
	m := &MacOS{Status: &out}
	tap := m.newTap(func(keys.Key, bool) error { return nil })
	for range 3 {
		tap.event(darwin.Event{Type: darwin.KeyDown, Keycode: 0x7F, Flags: macPlain})
	}
	if n := strings.Count(out.String(), "0x7f"); n != 1 {
		t.Errorf("status says keycode 0x7f %d times, want once:\n%s", n, out.String())
	}
}

func TestMacOSHotkeyNeedsMacKeys(t *testing.T) {
	ok, _ := ParseHotkey("ControlLeft+ControlRight")
	if err := CheckMacOSHotkey(ok); err != nil {
		t.Errorf("CheckMacOSHotkey(%v) = %v", ok, err)
	}
	bad, _ := ParseHotkey("ControlLeft+Power")
	if err := CheckMacOSHotkey(bad); !errors.Is(err, ErrHotkey) {
		t.Errorf("CheckMacOSHotkey(%v) = %v, want ErrHotkey (Power has no macOS keycode)", bad, err)
	}
}

// TestMacOSDebugRecordsEvents: with Debug each tapped event is written in
// the recording format internal/darwin's tests read back.
func TestMacOSDebugRecordsEvents(t *testing.T) {
	var out strings.Builder
	m := &MacOS{Status: &out, Debug: true}
	tap := m.newTap(func(keys.Key, bool) error { return nil })
	events := []darwin.Event{
		{Type: darwin.FlagsChanged, Keycode: 0x38, Flags: darwin.FlagNonCoalesced | darwin.FlagShift | darwin.DevLeftShift},
		{Type: darwin.KeyDown, Keycode: 0x00, Flags: macPlain, Autorepeat: true},
	}
	for _, ev := range events {
		tap.event(ev)
	}
	var got []darwin.Event
	for _, l := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "keyrelay send: tapped "); ok {
			ev, err := darwin.ParseEvent(rest)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
		}
	}
	if !slices.Equal(got, events) {
		t.Errorf("recorded %+v, want %+v\n%s", got, events, out.String())
	}
}

// TestMacOSTapRouting: with named destinations (DESIGN.md, named
// destinations), events in the recording format send --input macos
// --debug prints (internal/darwin's recordings; written from the
// documented flags, not captured on a Mac). While relaying, a key that acts
// here (Switch.Here: the target's local keys, here AudioVolumeUp, 0x48) is
// handed to macOS, its repeat and release too, and still relayed so that
// the router keeps each destination balanced; other keys are dropped. In
// local use a destination's hotkey (ControlRight+Digit2) picks it
// (OnTarget) and takes the keyboard again: its last key is dropped and
// reaches no receiver, its first key, pressed in local use, goes to macOS
// with its release.
func TestMacOSTapRouting(t *testing.T) {
	type step struct {
		line string // a recorded event
		drop bool
		sent []string
	}
	toLocal := []step{ // both Controls: the default hotkey, to local use
		{"flags 0x3B 0x40101", true, []string{"ControlLeft down"}},
		{"flags 0x3E 0x42101", true, []string{"ControlLeft up"}},
		{"flags 0x3B 0x42100", true, nil},
		{"flags 0x3E 0x100", true, nil},
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		picked []int
	}{
		{"local key acts here and is relayed", []step{
			{"keydown 0x48 0x100", false, []string{"AudioVolumeUp down"}},
			{"keydown 0x48 0x100 repeat", false, nil},
			{"keyup 0x48 0x100", false, []string{"AudioVolumeUp up"}},
			{"keydown 0x00 0x100", true, []string{"KeyA down"}},
			{"keyup 0x00 0x100", true, []string{"KeyA up"}},
		}, nil},
		{"local key held into local use", []step{
			{"keydown 0x48 0x100", false, []string{"AudioVolumeUp down"}},
			{"flags 0x3B 0x40101", true, []string{"ControlLeft down"}},
			{"flags 0x3E 0x42101", true, []string{"ControlLeft up", "AudioVolumeUp up"}},
			{"keyup 0x48 0x42101", false, nil}, // macOS had its press
		}, nil},
		{"local key in local use is macOS's only", append(slices.Clone(toLocal),
			step{"keydown 0x48 0x100", false, nil},
			step{"keyup 0x48 0x100", false, nil},
		), nil},
		{"destination hotkey in local use", append(slices.Clone(toLocal),
			step{"flags 0x3E 0x42100", false, nil},  // local use: macOS has it
			step{"keydown 0x13 0x42100", true, nil}, // completes ControlRight+Digit2: route 1
			step{"keyup 0x13 0x42100", true, nil},
			step{"flags 0x3E 0x100", false, nil}, // its press went to macOS
			step{"keydown 0x00 0x100", true, []string{"KeyA down"}},
		), []int{1}},
		{"destination hotkey while relaying is the router's", []step{
			{"flags 0x3E 0x42100", true, []string{"ControlRight down"}},
			{"keydown 0x13 0x42100", true, []string{"Digit2 down"}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var picked []int
			m := &MacOS{Grab: true}
			m.SetRouting(func(c keys.Code) bool { return c == keys.AudioVolumeUp },
				[][]keys.Code{{keys.ControlRight, keys.Digit1}, {keys.ControlRight, keys.Digit2}},
				func(i int) { picked = append(picked, i) })
			var steps []macStep
			for _, s := range tc.steps {
				ev, err := darwin.ParseEvent(s.line)
				if err != nil {
					t.Fatal(err)
				}
				steps = append(steps, macStep{ev, s.drop, s.sent})
			}
			runMacTap(t, m, steps)
			if !slices.Equal(picked, tc.picked) {
				t.Errorf("picked %v, want %v", picked, tc.picked)
			}
		})
	}
}
