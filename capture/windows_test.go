package capture

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/keys"
)

// TestDecodeHook: a low-level hook's scan code and extended flag name the
// physical key (keys.WindowsScanCode), the up flag a release, and what no
// keyboard typed is not relayed (README "Windows").
func TestDecodeHook(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   HookEvent
		code keys.Code
		down bool
		skip bool
	}{
		{"letter down", HookEvent{VK: 'A', Scan: 0x1e}, keys.KeyA, true, false},
		{"letter up", HookEvent{VK: 'A', Scan: 0x1e, Flags: llkhfUp}, keys.KeyA, false, false},
		{"right control is extended", HookEvent{VK: 0xa3, Scan: 0x1d, Flags: llkhfExtended}, keys.ControlRight, true, false},
		{"left control", HookEvent{VK: 0xa2, Scan: 0x1d}, keys.ControlLeft, true, false},
		{"AltGr", HookEvent{VK: 0xa5, Scan: 0x38, Flags: llkhfExtended}, keys.AltRight, true, false},
		{"arrow, not keypad 8", HookEvent{VK: 0x26, Scan: 0x48, Flags: llkhfExtended}, keys.ArrowUp, true, false},
		{"keypad 8", HookEvent{VK: 0x68, Scan: 0x48}, keys.Numpad8, true, false},
		{"keypad Enter", HookEvent{VK: 0x0d, Scan: 0x1c, Flags: llkhfExtended}, keys.NumpadEnter, true, false},
		{"Num Lock extended", HookEvent{VK: vkNumLock, Scan: 0x45, Flags: llkhfExtended}, keys.NumLock, true, false},
		{"Num Lock not extended", HookEvent{VK: vkNumLock, Scan: 0x45}, keys.NumLock, true, false},
		{"Pause", HookEvent{VK: vkPause, Scan: 0x45}, keys.Pause, true, false},
		{"PrintScreen", HookEvent{VK: 0x2c, Scan: 0x37, Flags: llkhfExtended}, keys.PrintScreen, true, false},
		{"no scan code: by virtual key", HookEvent{VK: 0xb3}, keys.MediaPlayPause, true, false},
		{"injected", HookEvent{VK: 'A', Scan: 0x1e, Flags: llkhfInjected}, 0, true, true},
		{"AltGr's fake Control", HookEvent{VK: 0xa2, Scan: 0x21d}, 0, true, true},
		{"fake Shift", HookEvent{VK: 0xa0, Scan: 0x2a, Flags: llkhfExtended | llkhfUp}, 0, false, true},
		{"nothing", HookEvent{}, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, down, skip := DecodeHook(tc.ev)
			if (skip != "") != tc.skip || down != tc.down || (!tc.skip && code != tc.code) {
				t.Errorf("DecodeHook(%+v) = %v, down %v, skip %q; want %v, down %v, skipped %v", tc.ev, code, down, skip, tc.code, tc.down, tc.skip)
			}
		})
	}
}

type hookStep struct {
	code    keys.Code
	down    bool
	swallow bool
}

func ev(c keys.Code, down bool) HookEvent {
	scan, ext, _ := keys.WindowsScanCode(c)
	e := HookEvent{Scan: uint32(scan)}
	if ext {
		e.Flags |= llkhfExtended
	}
	if !down {
		e.Flags |= llkhfUp
	}
	return e
}

// TestWinHookGrab: with --grab, keys are swallowed while relaying and act
// here in local use; the hotkey reaches neither side; a release is
// swallowed exactly when its press was; auto-repeat is dropped.
func TestWinHookGrab(t *testing.T) {
	type sent struct {
		code keys.Code
		down bool
	}
	ctrlL, ctrlR, a := keys.ControlLeft, keys.ControlRight, keys.KeyA
	for _, tc := range []struct {
		name  string
		steps []hookStep
		sent  []sent
	}{
		{"relayed and swallowed", []hookStep{{a, true, true}, {a, true, true}, {a, false, true}},
			[]sent{{a, true}, {a, false}}},
		{"hotkey to local use", []hookStep{
			{ctrlL, true, true}, {ctrlR, true, true}, // the hotkey: Control Left released at the receiver
			{ctrlR, false, true}, {ctrlL, false, true}, // their releases too
			{a, true, false}, {a, false, false}, // local use: acts here, not relayed
		}, []sent{{ctrlL, true}, {ctrlL, false}}},
		{"hotkey back to relaying", []hookStep{
			{ctrlL, true, true}, {ctrlR, true, true}, {ctrlR, false, true}, {ctrlL, false, true},
			{ctrlL, true, false}, {ctrlR, true, true}, // back: this press is swallowed
			{ctrlL, false, false}, // its press acted here: so does its release
			{ctrlR, false, true},
			{a, true, true}, {a, false, true},
		}, []sent{{ctrlL, true}, {ctrlL, false}, {a, true}, {a, false}}},
		{"key held across the switch", []hookStep{
			{a, true, true},
			{ctrlL, true, true}, {ctrlR, true, true}, // to local use: a released at the receiver
			{a, false, true}, // swallowed, as its press was
		}, []sent{{a, true}, {ctrlL, true}, {ctrlL, false}, {a, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sent
			hk, _ := ParseHotkey(DefaultHotkey)
			h := &winHook{grab: true, sw: &Switch{Hotkey: hk, Emit: func(k keys.Key, d bool) error {
				c, _ := k.Code()
				got = append(got, sent{c, d})
				return nil
			}}}
			for i, s := range tc.steps {
				if sw := h.event(ev(s.code, s.down)); sw != s.swallow {
					t.Errorf("step %d (%v down %v): swallowed %v, want %v", i, s.code, s.down, sw, s.swallow)
				}
			}
			if !slices.Equal(got, tc.sent) {
				t.Errorf("relayed %v, want %v", got, tc.sent)
			}
		})
	}
}

// TestWinHookRouting: with named destinations (DESIGN.md, named
// destinations) a key that acts here while relaying (Switch.Here: the
// target's local keys) reaches Windows, its auto-repeat and release too,
// and is still relayed so that the router keeps each destination balanced;
// other keys stay swallowed. In local use a destination's hotkey picks it
// (OnTarget) and takes the keyboard again: its last key is swallowed and
// reaches no receiver, its first keys, pressed in local use, act here and
// are released here.
func TestWinHookRouting(t *testing.T) {
	type sent struct {
		code keys.Code
		down bool
	}
	ctrlL, ctrlR, a, vol, two := keys.ControlLeft, keys.ControlRight, keys.KeyA, keys.AudioVolumeUp, keys.Digit2
	for _, tc := range []struct {
		name   string
		steps  []hookStep
		sent   []sent
		picked []int
	}{
		{"local key acts here and is relayed", []hookStep{
			{vol, true, false}, {vol, true, false}, {vol, false, false}, // down, repeat, up: all here
			{a, true, true}, {a, false, true},
		}, []sent{{vol, true}, {vol, false}, {a, true}, {a, false}}, nil},
		{"local key held into local use", []hookStep{
			{vol, true, false},
			{ctrlL, true, true}, {ctrlR, true, true}, // to local use: vol released at the receivers
			{vol, false, false}, // Windows had its press: its release too
			{ctrlR, false, true}, {ctrlL, false, true},
		}, []sent{{vol, true}, {ctrlL, true}, {ctrlL, false}, {vol, false}}, nil},
		{"local key in local use", []hookStep{
			{ctrlL, true, true}, {ctrlR, true, true}, {ctrlR, false, true}, {ctrlL, false, true},
			{vol, true, false}, {vol, false, false},
		}, []sent{{ctrlL, true}, {ctrlL, false}}, nil},
		{"destination hotkey in local use", []hookStep{
			{ctrlL, true, true}, {ctrlR, true, true}, {ctrlR, false, true}, {ctrlL, false, true},
			{ctrlR, true, false}, {two, true, true}, // ControlRight+Digit2: route 1, relaying again
			{two, false, true}, {ctrlR, false, false}, // releases go where their presses went
			{a, true, true}, {a, false, true},
		}, []sent{{ctrlL, true}, {ctrlL, false}, {a, true}, {a, false}}, []int{1}},
		{"destination hotkey while relaying is the router's", []hookStep{
			{ctrlR, true, true}, {two, true, true}, {two, false, true}, {ctrlR, false, true},
		}, []sent{{ctrlR, true}, {two, true}, {two, false}, {ctrlR, false}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sent
			var picked []int
			hk, _ := ParseHotkey(DefaultHotkey)
			h := &winHook{grab: true, sw: &Switch{Hotkey: hk, Emit: func(k keys.Key, d bool) error {
				c, _ := k.Code()
				got = append(got, sent{c, d})
				return nil
			}}}
			here := askHere(func(c keys.Code) bool { return c == vol }, winKeys())
			h.sw.Here, h.sw.ActHere = here.has, h.actHere
			h.sw.Targets = []Hotkey{{ctrlR, keys.Digit1}, {ctrlR, two}}
			h.sw.OnTarget = func(i int) error { picked = append(picked, i); return nil }
			for i, s := range tc.steps {
				if sw := h.event(ev(s.code, s.down)); sw != s.swallow {
					t.Errorf("step %d (%v down %v): swallowed %v, want %v", i, s.code, s.down, sw, s.swallow)
				}
			}
			if !slices.Equal(got, tc.sent) {
				t.Errorf("relayed %v, want %v", got, tc.sent)
			}
			if !slices.Equal(picked, tc.picked) {
				t.Errorf("picked %v, want %v", picked, tc.picked)
			}
		})
	}
}

// TestAskHere: the keys the hook lets through are exactly those the router
// says act here, among every key a hook reports (media keys by virtual key
// too); none when none does.
func TestAskHere(t *testing.T) {
	local := []keys.Code{keys.AudioVolumeUp, keys.MediaPlayPause, keys.F13}
	s := askHere(func(c keys.Code) bool { return slices.Contains(local, c) }, winKeys())
	for _, c := range append(local, keys.KeyA, keys.AudioVolumeDown) {
		if s.has(c) != slices.Contains(local, c) {
			t.Errorf("has(%v) = %v, want %v", c, s.has(c), !s.has(c))
		}
	}
	var none *hereKeys
	if none.has(keys.KeyA) || askHere(func(keys.Code) bool { return false }, winKeys()).has(keys.AudioVolumeUp) {
		t.Error("a key acts here though none does")
	}
}

// TestWinHookObserve: without --grab nothing is swallowed, every key is
// relayed once (auto-repeat dropped), and injected keys are not relayed.
func TestWinHookObserve(t *testing.T) {
	var got []keys.Key
	var skipped int
	h := &winHook{emit: func(k keys.Key, d bool) error {
		got = append(got, k)
		return nil
	}, skipped: func(HookEvent, string) { skipped++ }}
	evs := []HookEvent{ev(keys.KeyB, true), ev(keys.KeyB, true), ev(keys.KeyB, false),
		{Scan: 0x1e, Flags: llkhfInjected}, {Scan: 0x1e, Flags: llkhfInjected | llkhfUp}}
	for _, e := range evs {
		if h.event(e) {
			t.Errorf("%+v swallowed without --grab", e)
		}
	}
	if want := []keys.Key{keys.Key(keys.KeyB), keys.Key(keys.KeyB)}; !slices.Equal(got, want) || skipped != 2 {
		t.Errorf("relayed %v, %d skipped; want %v, 2 skipped", got, skipped, want)
	}
}

// TestWinHookProperty: for any keyboard's presses, auto-repeats and
// releases, with or without --grab and the hotkey pressed at any time:
// Windows sees a key released only if it saw it pressed, and nothing held
// once every key is up (a release is swallowed exactly when its press
// was); the receiver gets no press of a held key and no release of a key
// not held; without --grab nothing is swallowed; while relaying, a press
// is always swallowed but for a key that acts here (named destinations'
// local keys, with a destination's hotkey too).
func TestWinHookProperty(t *testing.T) {
	alphabet := []keys.Code{keys.KeyA, keys.ShiftLeft, keys.ControlLeft, keys.ControlRight, keys.ArrowUp, keys.NumpadEnter}
	rapid.Check(t, func(t *rapid.T) {
		grab := rapid.Bool().Draw(t, "grab")
		atReceiver := map[keys.Key]bool{}
		emit := func(k keys.Key, down bool) error {
			if atReceiver[k] == down {
				t.Fatalf("receiver: %v down=%v while held=%v", k, down, atReceiver[k])
			}
			atReceiver[k] = down
			return nil
		}
		hk, _ := ParseHotkey(DefaultHotkey)
		h := &winHook{grab: grab, emit: emit}
		var here *hereKeys
		if grab {
			h.sw = &Switch{Hotkey: hk, Emit: emit}
			if rapid.Bool().Draw(t, "routing") {
				// Named destinations: some keys act here, and a
				// destination's hotkey picks it in local use.
				local := rapid.SliceOfDistinct(rapid.SampledFrom(alphabet), rapid.ID).Draw(t, "local")
				here = askHere(func(c keys.Code) bool { return slices.Contains(local, c) }, winKeys())
				h.sw.Here, h.sw.ActHere = here.has, h.actHere
				h.sw.Targets = []Hotkey{{keys.ControlRight, keys.ArrowUp}}
				h.sw.OnTarget = func(int) error { return nil }
			}
		}
		held := map[keys.Code]bool{}    // on the keyboard
		windows := map[keys.Code]bool{} // as Windows saw it
		step := func(c keys.Code, down bool) {
			relaying := grab && h.sw.Relaying()
			repeat := down && held[c]
			swallowed := h.event(ev(c, down))
			if !grab && swallowed {
				t.Fatalf("%v down=%v swallowed without --grab", c, down)
			}
			if relaying && down && !swallowed && !here.has(c) {
				t.Fatalf("%v pressed while relaying reached Windows", c)
			}
			held[c] = down
			if swallowed {
				return
			}
			if !down && !windows[c] {
				t.Fatalf("Windows saw %v released, never pressed", c)
			}
			if !repeat {
				windows[c] = down
			}
		}
		n := rapid.IntRange(0, 60).Draw(t, "n")
		for range n {
			c := rapid.SampledFrom(alphabet).Draw(t, "key")
			step(c, rapid.Bool().Draw(t, "down") || !held[c])
		}
		for _, c := range alphabet {
			if held[c] {
				step(c, false)
			}
		}
		for c, down := range windows {
			if down {
				t.Fatalf("Windows still sees %v held with every key up", c)
			}
		}
		if !grab || h.sw.Relaying() {
			for k, down := range atReceiver {
				if down {
					t.Fatalf("receiver still has %v held with every key up", k)
				}
			}
		}
	})
}

// FuzzDecodeHook: any hook event decodes without panicking; a relayed key
// is a press exactly when LLKHF_UP is clear, injected events and scan codes
// beyond a byte are never relayed, and a key decoded by its scan code has
// that scan code (keys.WindowsScanCode).
func FuzzDecodeHook(f *testing.F) {
	f.Add(uint32('A'), uint32(0x1e), uint32(0))
	f.Add(uint32(0xa3), uint32(0x1d), uint32(llkhfExtended|llkhfUp))
	f.Add(uint32(vkNumLock), uint32(0x45), uint32(llkhfExtended))
	f.Add(uint32(0xa2), uint32(0x21d), uint32(0))
	f.Add(uint32(0xb3), uint32(0), uint32(llkhfInjected))
	f.Fuzz(func(t *testing.T, vk, scan, flags uint32) {
		code, down, skip := DecodeHook(HookEvent{VK: vk, Scan: scan, Flags: flags})
		if down != (flags&llkhfUp == 0) {
			t.Fatalf("down %v with flags %#x", down, flags)
		}
		if skip != "" {
			return
		}
		if flags&llkhfInjected != 0 || scan > 0xff || code == 0 {
			t.Fatalf("vk %#x scan %#x flags %#x relayed as %v", vk, scan, flags, code)
		}
		if vk == vkPause || vk == vkNumLock || scan == 0 {
			return
		}
		if s, ext, ok := keys.WindowsScanCode(code); ok && (uint32(s) != scan || ext != (flags&llkhfExtended != 0)) {
			if _, found := keys.FromWindowsScanCode(uint8(scan), flags&llkhfExtended != 0); found {
				t.Fatalf("scan %#x ext %v decoded as %v, whose scan code is %#x ext %v", scan, flags&llkhfExtended != 0, code, s, ext)
			}
		}
	})
}
