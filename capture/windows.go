package capture

import (
	"errors"
	"fmt"
	"slices"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoWindows is wrapped by the Windows source's errors when it cannot
// capture.
var ErrNoWindows = errors.New("Windows key capture unavailable")

// What a WH_KEYBOARD_LL hook is handed for a key (KBDLLHOOKSTRUCT.flags).
const (
	llkhfExtended = 0x01 // the key's scan code came with an 0xE0 prefix
	llkhfInjected = 0x10 // SendInput typed it, not a keyboard
	llkhfUp       = 0x80 // a release
)

// Virtual-key codes the decoding needs (WinUser.h).
const (
	vkPause   = 0x13
	vkNumLock = 0x90
)

// HookEvent is what a low-level keyboard hook receives for one key event:
// KBDLLHOOKSTRUCT's vkCode, scanCode and flags.
type HookEvent struct {
	VK, Scan, Flags uint32
}

// DecodeHook turns a hook event into the physical key it is and whether it
// is a press. skip says why an event is not a key of the keyboard's: one
// that SendInput typed (keyrelay's own recv on this machine, or any other
// program: relaying it would echo it back), or a key Windows makes up on
// its own (the Control it sends before AltGr, with a scan code beyond a
// byte; the Shift it lifts around an extended navigation key, E0 2A).
func DecodeHook(e HookEvent) (code keys.Code, down bool, skip string) {
	down = e.Flags&llkhfUp == 0
	ext := e.Flags&llkhfExtended != 0
	switch {
	case e.Flags&llkhfInjected != 0:
		return 0, down, "typed by a program (SendInput), not by the keyboard"
	case e.Scan > 0xff:
		return 0, down, fmt.Sprintf("scan code %#x is one Windows makes up (the Control before AltGr), not a key", e.Scan)
	case ext && (e.Scan == 0x2a || e.Scan == 0x36):
		return 0, down, "a Shift the keyboard fakes around an extended key (E0 2A), not a key"
	}
	// Pause and Num Lock share scan code 0x45: the virtual key tells them
	// apart whatever the extended flag says.
	switch e.VK {
	case vkPause:
		return keys.Pause, down, ""
	case vkNumLock:
		return keys.NumLock, down, ""
	}
	if e.Scan != 0 {
		if c, ok := keys.FromWindowsScanCode(uint8(e.Scan), ext); ok {
			return c, down, ""
		}
	}
	// Some keys (media keys of some keyboards) come with no scan code:
	// their virtual key is all there is.
	if e.VK != 0 && e.VK < 0xff {
		for _, k := range keys.All() {
			if uint32(k.Win32VK) == e.VK {
				return k.Code, down, ""
			}
		}
	}
	return 0, down, fmt.Sprintf("scan code %#02x (extended %v, virtual key %#02x) has no key of its own", e.Scan, ext, e.VK)
}

// winHook is the Windows source's pure core: it takes the hook's events in
// order and says of each whether the hook swallows it (keeps it from
// Windows). Without grab nothing is swallowed and every key is relayed.
// With grab it goes through a Switch: while relaying keys are swallowed, in
// local use they act here, and the press that completes the hotkey is
// swallowed either way, with its release. A key the Switch passes here
// while relaying (Switch.Here: a destination's local key; actHere) is let
// through to Windows as well as relayed, so that the router still sees it
// and keeps it from the destinations that list it (DESIGN.md, named
// destinations). A release is swallowed exactly when its press was, so
// Windows never sees a key held that is up, nor the reverse. Windows's
// auto-repeat (presses of a held key) is not relayed; it is swallowed while
// relaying and when its press was, and let through for a key whose press
// was let through.
//
// winHook is not safe for concurrent use: the hook calls it from the one
// thread that installed it.
type winHook struct {
	grab bool
	sw   *Switch // with grab
	// emit relays a key (without grab; with grab, sw.Emit does).
	emit func(keys.Key, bool) error
	// skipped reports an event that is not relayed, and why.
	skipped func(HookEvent, string)

	held      []keys.Code
	swallowed []keys.Code // keys whose press was swallowed
	passed    []keys.Code // keys whose press was let through while relaying (actHere)
	through   bool        // actHere was called for the press event is taking
	err       error       // the first error of emit: the source ends
}

// actHere is the Switch's ActHere with grab: the press the Switch is
// taking acts here, so the hook lets it through. A release needs nothing:
// its press went through, so it does too; and a key still held when the
// Switch releases it here (a switch to local use) is Windows's already,
// which sees its physical release.
func (h *winHook) actHere(_ keys.Code, down bool) error {
	if down {
		h.through = true
	}
	return nil
}

// event takes one hook event and says whether to swallow it.
func (h *winHook) event(e HookEvent) bool {
	code, down, skip := DecodeHook(e)
	if skip != "" {
		if h.skipped != nil {
			h.skipped(e, skip)
		}
		return false
	}
	if down && slices.Contains(h.held, code) {
		// Auto-repeat: swallowed while relaying, and where the press was.
		// (A key pressed in local use and held into relaying repeats no
		// more here; its release still reaches Windows.)
		if slices.Contains(h.passed, code) {
			return false
		}
		return slices.Contains(h.swallowed, code) || (h.grab && h.err == nil && h.sw.Relaying())
	}
	if down {
		h.held = append(h.held, code)
	} else {
		h.held = slices.DeleteFunc(h.held, func(c keys.Code) bool { return c == code })
	}
	if h.err != nil {
		return false // ended: the keyboard is Windows's again
	}
	if !h.grab {
		h.err = h.emit(keys.Key(code), down)
		return false
	}
	was := h.sw.Relaying()
	h.through = false
	h.err = h.sw.Key(code, down)
	if !down {
		h.passed = slices.DeleteFunc(h.passed, func(c keys.Code) bool { return c == code })
		i := slices.Index(h.swallowed, code)
		if i < 0 {
			return false
		}
		h.swallowed = slices.Delete(h.swallowed, i, i+1)
		return true
	}
	if h.through {
		h.passed = append(h.passed, code)
		return false
	}
	if was || h.sw.Relaying() {
		h.swallowed = append(h.swallowed, code)
		return true
	}
	return false
}

// hereKeys is the set of keys that act on this machine while relaying, as
// the router said when the Windows source last asked (SetRouting's local,
// which takes the router's lock and so cannot be called from the hook):
// the hook reads it without waiting.
type hereKeys []keys.Code

// has reports whether c acts here.
func (s *hereKeys) has(c keys.Code) bool { return s != nil && slices.Contains(*s, c) }

// winKeys are the keys a Windows hook can report (a scan code or a
// virtual key of their own): the ones whose routing the source asks about.
func winKeys() []keys.Code {
	var out []keys.Code
	for _, k := range keys.All() {
		if _, _, ok := keys.WindowsScanCode(k.Code); ok || k.Win32VK != 0 {
			out = append(out, k.Code)
		}
	}
	return out
}

// askHere asks local about each of codes (winKeys).
func askHere(local func(keys.Code) bool, codes []keys.Code) *hereKeys {
	var s hereKeys
	for _, c := range codes {
		if local(c) {
			s = append(s, c)
		}
	}
	return &s
}
