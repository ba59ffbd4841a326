package inject

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoWayland is wrapped by NewWayland's error when there is no compositor
// to type into, or it offers no virtual keyboard.
var ErrNoWayland = errors.New("wayland virtual keyboard unavailable")

// useUinputInstead says what to do where the compositor has no virtual
// keyboard protocol, and why uinput works there.
const useUinputInstead = "GNOME (Mutter) and KDE (KWin) offer no virtual keyboard to clients; wlroots compositors (sway, Hyprland, river, labwc, Wayfire) do. " +
	"Use --inject uinput instead: it types below the compositor, as a keyboard plugged into this machine does (needs /dev/uinput writable; physical keys only)"

// The real modifiers' masks in a keymap xkbcommon compiled: it gives the
// eight real modifiers the first eight indices, in this order, whatever
// the keymap says (xkbcommon's keymap.c), and evdev keymaps map the
// virtual ones onto them as below (xkeyboard-config's modifier_map).
const (
	modShift   uint32 = 1 << 0
	modLock    uint32 = 1 << 1 // Caps Lock, locked
	modControl uint32 = 1 << 2
	modMod1    uint32 = 1 << 3 // Alt
	modMod2    uint32 = 1 << 4 // Num Lock, locked
	modMod4    uint32 = 1 << 6 // Super
	modMod5    uint32 = 1 << 7 // LevelThree (AltGr) where Right Alt is ISO_Level3_Shift
)

// The character keymap's keys: XKB keycodes 9 to 255 (evdev codes 1 to
// 247; XKB's keycodes are evdev's plus 8 and stop at 255).
const (
	charFirstKeycode = 9
	charSlots        = 255 - charFirstKeycode + 1
)

// wlKeymapKind is which keymap the virtual keyboard has.
type wlKeymapKind uint8

const (
	wlNoKeymap wlKeymapKind = iota
	wlPhysical
	wlChars
)

// wlOp is one request to the virtual keyboard (zwp_virtual_keyboard_v1):
// a keymap (keymap set), a key (key pressed or released) or the modifiers
// (mods set).
type wlOp struct {
	keymap string // non-empty: upload this keymap
	key    uint32 // evdev code, with down, when keymap is empty and !mods
	down   bool
	mods   bool // send modifiers: depressed and locked
	// The modifiers to send, when mods.
	depressed, locked uint32
}

// wlKeyboard is the Wayland injector's pure core: from key events and lock
// states to the virtual keyboard's requests. zwp_virtual_keyboard_v1 makes
// the client say everything: the compositor does not compute modifiers
// from the keys (wlroots passes the keys on without updating its keyboard
// state), so a held Shift must be sent as a modifier, and Caps Lock's lock
// as a locked one; and a keymap in force for every key.
//
// Physical keys are sent as their evdev codes with the physical keymap
// (the seat's, so the user's layout decides the character). A character
// gets a key of its own in a keymap of characters, wtype's way: the
// keymap grows as characters come (up to charSlots, then it starts
// again), and is uploaded when it changed or the physical keymap was in
// force; the physical keymap is uploaded again at the next physical key.
//
// Not safe for concurrent use. The zero value is not ready: use
// newWlKeyboard.
type wlKeyboard struct {
	physical string
	// ralt is the modifier Right Alt sets: Mod5 (AltGr, LevelThree) on
	// most layouts, Mod1 (Alt) on US.
	ralt uint32

	current   wlKeymapKind
	chars     []rune // the character keymap's keys, in keycode order
	slot      map[rune]int
	charsSent bool // the keymap of chars as they are was uploaded

	held      map[uint32]bool // physical evdev codes pressed
	heldChars map[rune]uint32 // characters pressed, with their evdev code
	depressed uint32          // modifiers of the held keys
	locked    uint32          // Caps and Num Lock
}

// level3RAlt finds a keymap whose Right Alt is ISO_Level3_Shift (AltGr).
var level3RAlt = regexp.MustCompile(`key\s*<RALT>\s*\{[^}]*ISO_Level3_Shift`)

func newWlKeyboard(physical string, altGr bool) *wlKeyboard {
	k := &wlKeyboard{physical: physical, ralt: modMod1, slot: map[rune]int{}, held: map[uint32]bool{}, heldChars: map[rune]uint32{}}
	if altGr || level3RAlt.MatchString(physical) {
		k.ralt = modMod5
	}
	return k
}

// modifierOf is the modifier a held key sets, 0 for none.
func (k *wlKeyboard) modifierOf(c keys.Code) uint32 {
	switch c {
	case keys.ShiftLeft, keys.ShiftRight:
		return modShift
	case keys.ControlLeft, keys.ControlRight:
		return modControl
	case keys.AltLeft:
		return modMod1
	case keys.AltRight:
		return k.ralt
	case keys.MetaLeft, keys.MetaRight:
		return modMod4
	}
	return 0
}

// errNoEvdev is key's error when it has no evdev code to send.
var errNoEvdev = errors.New("no evdev key code")

// physicalKey presses or releases a physical key.
func (k *wlKeyboard) physicalKey(c keys.Code, down bool) ([]wlOp, error) {
	ev, ok := EvdevCode(c)
	if !ok {
		return nil, errNoEvdev
	}
	var ops []wlOp
	if down && k.current != wlPhysical {
		ops = k.use(ops, wlPhysical)
	}
	ops = append(ops, wlOp{key: uint32(ev), down: down})
	if down {
		k.held[uint32(ev)] = true
	} else {
		delete(k.held, uint32(ev))
	}
	depressed, locked := k.depressed, k.locked
	if m := k.modifierOf(c); m != 0 {
		// Both Shifts may be held: the modifier goes when the last does.
		depressed = 0
		for h := range k.held {
			if hc, ok := evdevKey(h); ok {
				depressed |= k.modifierOf(hc)
			}
		}
	}
	if down {
		switch c {
		case keys.CapsLock:
			locked ^= modLock
		case keys.NumLock:
			locked ^= modMod2
		}
	}
	return k.setMods(ops, depressed, locked), nil
}

// evdevKey is the key an evdev code of a held key came from.
func evdevKey(ev uint32) (keys.Code, bool) {
	for _, c := range []keys.Code{keys.ShiftLeft, keys.ShiftRight, keys.ControlLeft, keys.ControlRight, keys.AltLeft, keys.AltRight, keys.MetaLeft, keys.MetaRight} {
		if e, ok := EvdevCode(c); ok && uint32(e) == ev {
			return c, true
		}
	}
	return 0, false
}

// char presses or releases a character. A release of a character not
// pressed sends nothing.
func (k *wlKeyboard) char(r rune, down bool) []wlOp {
	if !down {
		ev, ok := k.heldChars[r]
		if !ok {
			return nil
		}
		delete(k.heldChars, r)
		return []wlOp{{key: ev}}
	}
	var ops []wlOp
	if _, ok := k.slot[r]; !ok {
		if len(k.chars) == charSlots {
			// Full: start again. Characters held keep their code
			// (released as such); nothing else needs the old keys.
			k.chars, k.slot = nil, map[rune]int{}
		}
		k.slot[r] = len(k.chars)
		k.chars = append(k.chars, r)
		k.charsSent = false
	}
	if k.current != wlChars || !k.charsSent {
		ops = k.use(ops, wlChars)
	}
	ev := uint32(k.slot[r] + charFirstKeycode - 8)
	if old, ok := k.heldChars[r]; ok {
		ops = append(ops, wlOp{key: old}) // pressed twice: up first, as a key repeats
	}
	k.heldChars[r] = ev
	return append(ops, wlOp{key: ev, down: true})
}

// use uploads the keymap of kind, then the modifiers again: a new keymap
// starts the compositor's keyboard state afresh.
func (k *wlKeyboard) use(ops []wlOp, kind wlKeymapKind) []wlOp {
	km := k.physical
	if kind == wlChars {
		km = charKeymap(k.chars)
		k.charsSent = true
	}
	k.current = kind
	ops = append(ops, wlOp{keymap: km})
	return append(ops, wlOp{mods: true, depressed: k.depressed, locked: k.locked})
}

// setMods appends a modifiers request when they changed.
func (k *wlKeyboard) setMods(ops []wlOp, depressed, locked uint32) []wlOp {
	if depressed == k.depressed && locked == k.locked {
		return ops
	}
	k.depressed, k.locked = depressed, locked
	return append(ops, wlOp{mods: true, depressed: depressed, locked: locked})
}

// setLocks makes Caps and Num Lock what l says (PROTOCOL.md §3.2): the
// virtual keyboard's lock state is its own, sent as locked modifiers,
// unless the sender holds the lock key (then it decides).
func (k *wlKeyboard) setLocks(l keys.Locks) []wlOp {
	locked := k.locked
	for _, lk := range []struct {
		bit  keys.Locks
		code keys.Code
		mod  uint32
	}{{keys.LockCaps, keys.CapsLock, modLock}, {keys.LockNum, keys.NumLock, modMod2}} {
		if ev, ok := EvdevCode(lk.code); ok && k.held[uint32(ev)] {
			continue
		}
		if l&lk.bit != 0 {
			locked |= lk.mod
		} else {
			locked &^= lk.mod
		}
	}
	var ops []wlOp
	if k.current == wlNoKeymap {
		ops = k.use(ops, wlPhysical)
	}
	return k.setMods(ops, k.depressed, locked)
}

// releaseAll releases every key held and every modifier.
func (k *wlKeyboard) releaseAll() []wlOp {
	var ops []wlOp
	for r := range k.heldChars {
		ops = append(ops, k.char(r, false)...)
	}
	for ev := range k.held {
		ops = append(ops, wlOp{key: ev})
		delete(k.held, ev)
	}
	return k.setMods(ops, 0, k.locked)
}

// charKeymap is an XKB keymap with one key for each of chars, on
// keycodes from charFirstKeycode, each typing its character on its one
// level. Types and compat come from the compositor's XKB data.
func charKeymap(chars []rune) string {
	var b strings.Builder
	b.WriteString("xkb_keymap {\nxkb_keycodes \"keyrelay\" {\n\tminimum = 8;\n\tmaximum = 255;\n")
	for i := range chars {
		fmt.Fprintf(&b, "\t<C%d> = %d;\n", i, i+charFirstKeycode)
	}
	b.WriteString("};\nxkb_types \"keyrelay\" { include \"complete\" };\nxkb_compatibility \"keyrelay\" { include \"complete\" };\nxkb_symbols \"keyrelay\" {\n")
	for i, r := range chars {
		// Uxxxx: xkbcommon's name for the keysym of any Unicode
		// character (Latin-1 ones are their own keysyms).
		fmt.Fprintf(&b, "\tkey <C%d> { [ U%04X ] };\n", i, r)
	}
	b.WriteString("};\n};\n")
	return b.String()
}

// xkbName is what an XKB layout or variant name may be: letters, digits,
// '_' and '-' (xkeyboard-config's names), so that it cannot end the
// include it goes into.
var xkbName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// defaultKeymap is the physical keymap when the seat gives none (no
// keyboard plugged in): evdev, pc105, and the layout XKB_DEFAULT_LAYOUT
// and XKB_DEFAULT_VARIANT name (the first of a list; xkbcommon's and
// sway's own default), else us. The compositor resolves the includes.
// altGr says whether Right Alt is AltGr in it.
func defaultKeymap(getenv func(string) string) (km string, altGr bool, err error) {
	layout, _, _ := strings.Cut(getenv("XKB_DEFAULT_LAYOUT"), ",")
	variant, _, _ := strings.Cut(getenv("XKB_DEFAULT_VARIANT"), ",")
	if layout == "" {
		layout, variant = "us", ""
	}
	if !xkbName.MatchString(layout) || (variant != "" && !xkbName.MatchString(variant)) {
		return "", false, fmt.Errorf("XKB_DEFAULT_LAYOUT %q or XKB_DEFAULT_VARIANT %q is not an XKB layout name (such as de, or nodeadkeys): fix or unset it", layout, variant)
	}
	sym := layout
	if variant != "" {
		sym += "(" + variant + ")"
	}
	km = "xkb_keymap {\n" +
		"\txkb_keycodes { include \"evdev+aliases(qwerty)\" };\n" +
		"\txkb_types { include \"complete\" };\n" +
		"\txkb_compat { include \"complete\" };\n" +
		"\txkb_symbols { include \"pc+" + sym + "+inet(evdev)\" };\n" +
		"};\n"
	// Every layout but plain US puts AltGr (level3(ralt_switch)) on Right
	// Alt.
	return km, layout != "us" || variant != "", nil
}
