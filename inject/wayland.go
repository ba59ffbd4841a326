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

// charKeys are the keys a character is put on in the character keymap:
// the 48 keys that write on a pc105 keyboard (Backquote, the digits, the
// letters, the punctuation keys and IntlBackslash), as evdev codes. On
// them a character is a character to every client. A client that reads
// the key as well as its keysym takes any other key for what it is:
// Chromium turns a key into its DOM code and Windows key code, and acts
// on the key (Escape, Backspace, Tab, F6 moves the focus, Control and Alt
// type nothing), so a character put there is lost or does something else
// (DESIGN.md, the wayland injector's character keys).
var charKeys = [...]uint32{
	41, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, // Backquote, Digit1..0, Minus, Equal
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, // KeyQ..KeyP, BracketLeft, BracketRight
	30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 43, // KeyA..KeyL, Semicolon, Quote, Backslash
	86, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, // IntlBackslash, KeyZ..KeyM, Comma, Period, Slash
}

// charKeyNames are charKeys' XKB key names in xkeyboard-config's evdev
// keycodes, for a keymap that names none itself (one that includes them).
var charKeyNames = [...]string{
	"TLDE", "AE01", "AE02", "AE03", "AE04", "AE05", "AE06", "AE07", "AE08", "AE09", "AE10", "AE11", "AE12",
	"AD01", "AD02", "AD03", "AD04", "AD05", "AD06", "AD07", "AD08", "AD09", "AD10", "AD11", "AD12",
	"AC01", "AC02", "AC03", "AC04", "AC05", "AC06", "AC07", "AC08", "AC09", "AC10", "AC11", "BKSL",
	"LSGT", "AB01", "AB02", "AB03", "AB04", "AB05", "AB06", "AB07", "AB08", "AB09", "AB10",
}

// charSlot is one of charKeys in the character keymap.
type charSlot struct {
	ev      uint32 // evdev code
	name    string // XKB key name in the physical keymap
	r       rune   // the character on it; 0: the physical keymap's own
	lastUse uint64 // when it was last pressed, for reuse
}

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
// is put on one of the 48 writing keys (charKeys) in the character
// keymap: the physical keymap with those keys' symbols replaced, so every
// other key (Space, Enter, Tab, the modifiers...) types as it does there.
// The character keymap is uploaded when it changed (a new character) or
// the physical keymap was in force, and kept while the characters typed
// are on it: text needs no keymap but it. A new character takes a free
// writing key, else the one least recently pressed that nothing holds.
// A physical writing key that has a character on it brings the physical
// keymap back.
//
// Not safe for concurrent use. The zero value is not ready: use
// newWlKeyboard.
type wlKeyboard struct {
	physical string
	// ralt is the modifier Right Alt sets: Mod5 (AltGr, LevelThree) on
	// most layouts, Mod1 (Alt) on US.
	ralt uint32

	current   wlKeymapKind
	base      charKeymapBase
	slots     []charSlot
	slotOf    map[rune]int    // character -> its index in slots
	onSlot    map[uint32]int  // evdev code -> its index in slots
	charsSent bool            // the character keymap as it is was uploaded
	uses      uint64          // presses of characters, for charSlot.lastUse
	held      map[uint32]bool // physical evdev codes pressed
	heldChars map[rune]uint32 // characters pressed, with their evdev code
	depressed uint32          // modifiers of the held keys
	locked    uint32          // Caps and Num Lock
}

// level3RAlt finds a keymap whose Right Alt is ISO_Level3_Shift (AltGr).
var level3RAlt = regexp.MustCompile(`key\s*<RALT>\s*\{[^}]*ISO_Level3_Shift`)

func newWlKeyboard(physical string, altGr bool) *wlKeyboard {
	k := &wlKeyboard{physical: physical, ralt: modMod1, slotOf: map[rune]int{}, onSlot: map[uint32]int{}, held: map[uint32]bool{}, heldChars: map[rune]uint32{}}
	if altGr || level3RAlt.MatchString(physical) {
		k.ralt = modMod5
	}
	k.base = newCharKeymapBase(physical)
	for _, ev := range charKeys {
		if name, ok := k.base.names[ev]; ok {
			k.onSlot[ev] = len(k.slots)
			k.slots = append(k.slots, charSlot{ev: ev, name: name})
		}
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
	if down && k.needsPhysical(uint32(ev)) {
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

// needsPhysical says whether pressing evdev code ev needs the physical
// keymap uploaded first: none is in force, or the character keymap is
// and has a character on that key (every other key is the same in both,
// unless the character keymap is the fallback's).
func (k *wlKeyboard) needsPhysical(ev uint32) bool {
	switch k.current {
	case wlNoKeymap:
		return true
	case wlChars:
		i, ok := k.onSlot[ev]
		return !k.base.own || ok && k.slots[i].r != 0
	}
	return false
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

// errCharsHeld is char's error when every writing key is held.
var errCharsHeld = errors.New("every key the character keymap has is held")

// char presses or releases a character. A release of a character not
// pressed sends nothing.
func (k *wlKeyboard) char(r rune, down bool) ([]wlOp, error) {
	if !down {
		ev, ok := k.heldChars[r]
		if !ok {
			return nil, nil
		}
		delete(k.heldChars, r)
		return []wlOp{{key: ev}}, nil
	}
	i, ok := k.slotOf[r]
	if !ok {
		if i = k.freeSlot(); i < 0 {
			return nil, errCharsHeld
		}
		if old := k.slots[i].r; old != 0 {
			delete(k.slotOf, old)
		}
		k.slots[i].r = r
		k.slotOf[r] = i
		k.charsSent = false
	}
	var ops []wlOp
	if k.current != wlChars || !k.charsSent {
		ops = k.use(ops, wlChars)
	}
	k.uses++
	k.slots[i].lastUse = k.uses
	ev := k.slots[i].ev
	if old, ok := k.heldChars[r]; ok {
		ops = append(ops, wlOp{key: old}) // pressed twice: up first, as a key repeats
	}
	k.heldChars[r] = ev
	return append(ops, wlOp{key: ev, down: true}), nil
}

// freeSlot picks the writing key for a new character: an empty one, else
// the one pressed least recently; never one held, as a character or as a
// physical key (its release must stay the key it was). -1 if all are.
func (k *wlKeyboard) freeSlot() int {
	heldEv := map[uint32]bool{}
	for _, ev := range k.heldChars {
		heldEv[ev] = true
	}
	best := -1
	for i, s := range k.slots {
		if heldEv[s.ev] || k.held[s.ev] {
			continue
		}
		if s.r == 0 {
			return i
		}
		if best < 0 || s.lastUse < k.slots[best].lastUse {
			best = i
		}
	}
	return best
}

// use uploads the keymap of kind, then the modifiers again: a new keymap
// starts the compositor's keyboard state afresh.
func (k *wlKeyboard) use(ops []wlOp, kind wlKeymapKind) []wlOp {
	km := k.physical
	if kind == wlChars {
		km = k.base.with(k.slots)
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
	for r, ev := range k.heldChars {
		ops = append(ops, wlOp{key: ev})
		delete(k.heldChars, r)
	}
	for ev := range k.held {
		ops = append(ops, wlOp{key: ev})
		delete(k.held, ev)
	}
	return k.setMods(ops, 0, k.locked)
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
