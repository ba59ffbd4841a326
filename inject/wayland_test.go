package inject

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/keys"
)

// opString renders ops compactly: "K" a keymap (P physical, C chars), "+30"
// evdev 30 pressed, "-30" released, "m1/2" modifiers depressed/locked.
func opString(ops []wlOp, physical string) string {
	var s []string
	for _, op := range ops {
		switch {
		case op.keymap == physical:
			s = append(s, "KP")
		case op.keymap != "":
			s = append(s, "KC")
		case op.mods:
			s = append(s, fmt.Sprintf("m%d/%d", op.depressed, op.locked))
		case op.down:
			s = append(s, fmt.Sprintf("+%d", op.key))
		default:
			s = append(s, fmt.Sprintf("-%d", op.key))
		}
	}
	return strings.Join(s, " ")
}

type wlStep struct {
	key  keys.Key
	down bool
}

func wlPress(c keys.Code) wlStep   { return wlStep{keys.Key(c), true} }
func wlRelease(c keys.Code) wlStep { return wlStep{keys.Key(c), false} }

// TestWlKeyboardRequests: what the virtual keyboard is sent for key
// events, modifiers and characters (zwp_virtual_keyboard_v1 takes the
// modifiers from the client, not from the keys).
func TestWlKeyboardRequests(t *testing.T) {
	const us = `xkb_keymap { xkb_symbols { include "pc+us" }; };`
	const de = "key <RALT> { type= \"ONE_LEVEL\", symbols[Group1]= [ ISO_Level3_Shift ] };"
	for _, tc := range []struct {
		name     string
		physical string
		steps    []wlStep
		want     string
	}{
		{"a key uploads the physical keymap first", us, []wlStep{wlPress(keys.KeyA), wlRelease(keys.KeyA)}, "KP m0/0 +30 -30"},
		{"Shift is a depressed modifier", us, []wlStep{wlPress(keys.ShiftLeft), wlPress(keys.KeyA), wlRelease(keys.ShiftLeft)}, "KP m0/0 +42 m1/0 +30 -42 m0/0"},
		{"both Shifts: the modifier goes with the last", us, []wlStep{wlPress(keys.ShiftLeft), wlPress(keys.ShiftRight), wlRelease(keys.ShiftLeft), wlRelease(keys.ShiftRight)}, "KP m0/0 +42 m1/0 +54 -42 -54 m0/0"},
		{"Right Alt is Alt on US", us, []wlStep{wlPress(keys.AltRight)}, "KP m0/0 +100 m8/0"},
		{"Right Alt is AltGr (Mod5) where the keymap says ISO_Level3_Shift", de, []wlStep{wlPress(keys.AltRight)}, "KP m0/0 +100 m128/0"},
		{"Caps Lock toggles the locked Lock at each press", us, []wlStep{wlPress(keys.CapsLock), wlRelease(keys.CapsLock), wlPress(keys.CapsLock)}, "KP m0/0 +58 m0/2 -58 +58 m0/0"},
		{"a character goes on the first writing key (Backquote) of the character keymap", us, []wlStep{{keys.Char('ü'), true}, {keys.Char('ü'), false}}, "KC m0/0 +41 -41"},
		{"a key the character keymap leaves as it is needs no other keymap", us, []wlStep{{keys.Char('ü'), true}, {keys.Char('ü'), false}, wlPress(keys.Enter), wlPress(keys.Space), wlPress(keys.KeyA)}, "KC m0/0 +41 -41 +28 +57 +30"},
		{"a physical keymap without xkb_symbols to add to: any key brings it back", "a keymap", []wlStep{{keys.Char('ü'), true}, {keys.Char('ü'), false}, wlPress(keys.Enter)}, "KC m0/0 +41 -41 KP m0/0 +28"},
		{"a writing key with a character on it brings the physical keymap back", us, []wlStep{{keys.Char('ü'), true}, {keys.Char('ü'), false}, wlPress(keys.Backquote)}, "KC m0/0 +41 -41 KP m0/0 +41"},
		{"a second character grows the keymap, a known one does not", us, []wlStep{{keys.Char('ü'), true}, {keys.Char('ü'), false}, {keys.Char('€'), true}, {keys.Char('ü'), true}}, "KC m0/0 +41 -41 KC m0/0 +2 +41"},
		{"a release of a character not pressed sends nothing", us, []wlStep{{keys.Char('x'), false}}, ""},
		{"a key release does not change the keymap", us, []wlStep{wlPress(keys.KeyA), {keys.Char('ü'), true}, wlRelease(keys.KeyA)}, "KP m0/0 +30 KC m0/0 +41 -30"},
		{"a writing key held keeps its meaning: no character goes on it", us, []wlStep{wlPress(keys.Backquote), {keys.Char('ü'), true}}, "KP m0/0 +41 KC m0/0 +2"},
		{"Shift held: the character keymap gets the modifiers too", us, []wlStep{wlPress(keys.ShiftLeft), {keys.Char('ü'), true}}, "KP m0/0 +42 m1/0 KC m1/0 +41"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newWlKeyboard(tc.physical, false)
			var ops []wlOp
			for _, s := range tc.steps {
				if r, ok := s.key.Char(); ok {
					o, err := k.char(r, s.down)
					if err != nil {
						t.Fatal(err)
					}
					ops = append(ops, o...)
					continue
				}
				c, _ := s.key.Code()
				o, err := k.physicalKey(c, s.down)
				if err != nil {
					t.Fatal(err)
				}
				ops = append(ops, o...)
			}
			if got := opString(ops, tc.physical); got != tc.want {
				t.Errorf("requests %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWlKeyboardReusesLeastRecentKey: with every writing key taken, a new
// character takes the one pressed least recently, never one held; the
// character keymap is uploaded again for it, and not for characters
// already on it.
func TestWlKeyboardReusesLeastRecentKey(t *testing.T) {
	k := newWlKeyboard("us", false)
	n := len(charKeys)
	if len(k.slots) != n {
		t.Fatalf("%d writing keys, want %d", len(k.slots), n)
	}
	tap := func(r rune) string {
		t.Helper()
		down, err := k.char(r, true)
		if err != nil {
			t.Fatal(err)
		}
		up, _ := k.char(r, false)
		return opString(append(down, up...), k.physical)
	}
	for i := range n {
		tap(rune('A' + i))
	}
	// 'A' is held; 'B' (on Digit1, evdev 2) was pressed least recently
	// of the others.
	if _, err := k.char('A', true); err != nil {
		t.Fatal(err)
	}
	if got := tap('ü'); got != "KC m0/0 +2 -2" {
		t.Errorf("a new character with every key taken: %q, want it on Digit1 (2), B's key", got)
	}
	if got := tap('C'); got != "+3 -3" {
		t.Errorf("a character still on the keymap: %q, want no upload", got)
	}
	if got := tap('B'); got != "KC m0/0 +4 -4" {
		t.Errorf("B again: %q, want it back on the least recent key, D's (4)", got)
	}
}

// TestWlKeyboardCharsHeld: a character when every writing key is held is
// an error (reported as not typable), not a key taken from under a press.
func TestWlKeyboardCharsHeld(t *testing.T) {
	k := newWlKeyboard("us", false)
	for i := range len(charKeys) {
		if _, err := k.char(rune('A'+i), true); err != nil {
			t.Fatal(err)
		}
	}
	if ops, err := k.char('ü', true); !errors.Is(err, errCharsHeld) || ops != nil {
		t.Errorf("char with every key held = %v, %v; want errCharsHeld", ops, err)
	}
}

// TestWlKeyboardSetLocks: Caps and Num Lock follow the sender as locked
// modifiers (PROTOCOL.md §3.2), but a lock key the sender holds decides.
func TestWlKeyboardSetLocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		held []keys.Code
		l    keys.Locks
		want string
	}{
		{"caps and num on", nil, keys.LocksKnown | keys.LockCaps | keys.LockNum, "KP m0/0 m0/18"},
		{"nothing to change", nil, keys.LocksKnown, "KP m0/0"},
		{"caps held: left as it is", []keys.Code{keys.CapsLock}, keys.LocksKnown | keys.LockNum, "m0/18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newWlKeyboard("p", false)
			for _, c := range tc.held {
				k.physicalKey(c, true)
			}
			// Held Caps Lock locked Lock (2) at its press; the sender's
			// state then adds Num (16) only.
			if got := opString(k.setLocks(tc.l), "p"); got != tc.want {
				t.Errorf("requests %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDefaultKeymapTakesXKBDefaultLayout: the layout xkbcommon's variables
// name, else us; a name that could break out of the include is refused.
func TestDefaultKeymapTakesXKBDefaultLayout(t *testing.T) {
	for _, tc := range []struct {
		layout, variant string
		want            string
		altGr, err      bool
	}{
		{"", "", `"pc+us+inet(evdev)"`, false, false},
		{"de,us", "nodeadkeys", `"pc+de(nodeadkeys)+inet(evdev)"`, true, false},
		{`de" }; xkb_x {`, "", "", false, true},
	} {
		env := map[string]string{"XKB_DEFAULT_LAYOUT": tc.layout, "XKB_DEFAULT_VARIANT": tc.variant}
		km, altGr, err := defaultKeymap(func(k string) string { return env[k] })
		if (err != nil) != tc.err || !strings.Contains(km, tc.want) || altGr != tc.altGr {
			t.Errorf("layout %q variant %q: altGr %v, err %v, keymap\n%s", tc.layout, tc.variant, altGr, err, km)
		}
	}
}

// TestWlKeyboardReleasesAllProperty: whatever keys and characters come, in
// any order, every press the compositor is sent comes after a keymap,
// every release is of a key pressed, and releaseAll leaves nothing held
// and no modifier depressed (DESIGN.md invariants 1 and 2 at the
// compositor).
func TestWlKeyboardReleasesAllProperty(t *testing.T) {
	codes := []keys.Code{keys.KeyA, keys.ShiftLeft, keys.ShiftRight, keys.AltRight, keys.CapsLock, keys.ControlLeft}
	runes := []rune("aü€")
	rapid.Check(t, func(rt *rapid.T) {
		k := newWlKeyboard("p", rapid.Bool().Draw(rt, "altGr"))
		down := map[uint32]bool{}
		keymap := false
		check := func(ops []wlOp) {
			for _, op := range ops {
				switch {
				case op.keymap != "":
					keymap = true
				case op.mods:
				case op.down:
					if !keymap {
						rt.Fatalf("key %d pressed before any keymap", op.key)
					}
					down[op.key] = true
				default:
					if !down[op.key] {
						rt.Fatalf("key %d released, not pressed", op.key)
					}
					delete(down, op.key)
				}
			}
		}
		for range rapid.IntRange(0, 40).Draw(rt, "n") {
			isDown := rapid.Bool().Draw(rt, "down")
			if rapid.Bool().Draw(rt, "char") {
				ops, err := k.char(rapid.SampledFrom(runes).Draw(rt, "rune"), isDown)
				if err != nil {
					rt.Fatal(err)
				}
				check(ops)
				continue
			}
			c := rapid.SampledFrom(codes).Draw(rt, "code")
			if !isDown && !slices.Contains(keysHeld(k), c) {
				continue // the receiver releases only what it pressed
			}
			ops, err := k.physicalKey(c, isDown)
			if err != nil {
				rt.Fatal(err)
			}
			check(ops)
		}
		check(k.releaseAll())
		if len(down) != 0 || k.depressed != 0 {
			rt.Fatalf("after releaseAll: held %v, depressed %d", down, k.depressed)
		}
	})
}

func keysHeld(k *wlKeyboard) []keys.Code {
	var held []keys.Code
	for _, c := range []keys.Code{keys.KeyA, keys.ShiftLeft, keys.ShiftRight, keys.AltRight, keys.CapsLock, keys.ControlLeft} {
		if ev, ok := EvdevCode(c); ok && k.held[uint32(ev)] {
			held = append(held, c)
		}
	}
	return held
}
