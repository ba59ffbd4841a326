// Package routing is the layer between a key source (capture) and the
// sender core: it decides which destinations get each key event (send's
// named destinations, the hotkeys and switching, key maps, local keys and
// characters mode, DESIGN.md) and runs one sender.Sender, with its own
// balanced queue, per destination.
package routing

import (
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/keys"
)

// Route is what one destination gets of the keyboard (send's named
// destinations): its name, the hotkey that makes it the only target, the
// keys it gets in place of others, and the keys never relayed to it.
type Route struct {
	Name   string
	Hotkey []keys.Code
	Map    map[keys.Code]keys.Code
	Local  []keys.Code
	// Characters: printable keys go as the characters the sender's
	// layout gives them (the Router's Translator decides), chords and
	// keys that print nothing as physical keys.
	Characters bool
}

// Routed is one key event for destination To (an index into the routes).
type Routed struct {
	To   int
	Key  keys.Key
	Down bool
}

// Local is the Router's target when keys go to no destination.
const Local = -1

// Router decides which destinations get each key event from the source:
// every destination (mirror), or the one target a hotkey or Switch chose.
// Each destination has a balanced queue of its own (a Sender each), so
// what the Router gives one is balanced on its own: every key-down it
// routes to a destination is followed by its key-up at that destination,
// sent when the key is released, or at once when the target changes away
// (DESIGN.md invariant 1 holds per destination); and a key held across a
// switch reaches the new target only when pressed again. A destination's
// hotkey reaches no destination.
//
// It is pure (no clock, no I/O) and not safe for concurrent use.
type Router struct {
	routes []Route
	mirror bool
	target int

	chars *charmode.Translator // nil: no route is in characters mode
	// epoch is the lock state's epoch bit and LocksKnown the Translator
	// was last told of (Locks); 0: none yet.
	epoch keys.Locks

	held      []keys.Key // physical keys down at the source now
	swallowed []keys.Key // keys down whose release goes nowhere
	down      []sent     // key-downs routed and not yet released, oldest first
}

// sent is a key-down given to destination to as key, for the source's
// key from.
type sent struct {
	from keys.Key
	to   int
	key  keys.Key
}

// NewRouter makes a Router over routes. Mirror sends every key to every
// destination (switching changes nothing then but Local); otherwise keys
// go to target (an index, or Local).
func NewRouter(routes []Route, mirror bool, target int) *Router {
	return &Router{routes: routes, mirror: mirror, target: target}
}

// SetTranslator gives the routes in characters mode their translator of
// the sender's layout (one for every route: it follows the source's
// modifiers, whatever the target).
func (r *Router) SetTranslator(t *charmode.Translator) { r.chars = t }

// Locks tells the router the source's lock state (PROTOCOL.md §3.2), as
// every packet carries it. A state read from the keyboard with a new epoch
// (relaying started or resumed) sets the Translator's Caps Lock and Num
// Lock; between epochs the Translator follows the lock keys it is told,
// since a source reads its locks again only as relaying resumes.
func (r *Router) Locks(l keys.Locks) {
	if r.chars == nil || !l.Known() {
		return
	}
	if e := l & (keys.LockEpoch | keys.LocksKnown); e != r.epoch {
		r.epoch = e
		r.chars.SetLocks(l&keys.LockCaps != 0, l&keys.LockNum != 0)
	}
}

// SetKeymap makes km the layout of the routes in characters mode from the
// next key on (the source's layout changed).
func (r *Router) SetKeymap(km charmode.Keymap) {
	if r.chars != nil {
		r.chars.SetKeymap(km)
	}
}

// Target is the current target: a route's index, or Local. In mirror
// mode, any index means every destination.
func (r *Router) Target() int { return r.target }

// Mirror reports whether every key goes to every destination.
func (r *Router) Mirror() bool { return r.mirror }

// Routes are the router's routes.
func (r *Router) Routes() []Route { return r.routes }

// Held lists, per destination, the keys it holds down now (as it got
// them, mapped).
func (r *Router) Held(to int) []keys.Key {
	var out []keys.Key
	for _, s := range r.down {
		if s.to == to {
			out = append(out, s.key)
		}
	}
	return out
}

// Key takes one key event from the source and appends what each
// destination gets to dst.
func (r *Router) Key(dst []Routed, k keys.Key, down bool) []Routed {
	kind, ch := charmode.Physical, rune(0)
	if code, phys := k.Code(); phys && r.chars != nil {
		// Told every event, even those that go nowhere, so that it knows
		// the modifiers held when a key goes somewhere.
		kind, ch = r.chars.Key(code, down)
		if kind == charmode.Char && !keys.ValidChar(ch) {
			kind = charmode.Physical
		}
	}
	if !down {
		r.held = slices.DeleteFunc(r.held, func(h keys.Key) bool { return h == k })
		if i := slices.Index(r.swallowed, k); i >= 0 {
			r.swallowed = slices.Delete(r.swallowed, i, i+1)
			return dst
		}
		// Released where it was pressed, whatever the target is now.
		for i := 0; i < len(r.down); {
			if s := r.down[i]; s.from == k {
				dst = r.release(dst, s)
				r.down = slices.Delete(r.down, i, i+1)
				continue
			}
			i++
		}
		return dst
	}
	if slices.Contains(r.held, k) {
		return dst // a repeat: the receivers repeat on their own
	}
	r.held = append(r.held, k)
	if to, ok := r.hotkey(k); ok {
		dst = r.Switch(dst, to)
		r.swallow()
		return dst
	}
	if slices.Contains(r.swallowed, k) {
		return dst
	}
	for to := range r.routes {
		if !r.mirror && to != r.target || r.target == Local {
			continue
		}
		code, phys := k.Code()
		if phys && slices.Contains(r.routes[to].Local, code) {
			continue
		}
		if phys && r.chars != nil && r.routes[to].Characters {
			switch kind {
			case charmode.Char:
				// A down and its up at once: the destination holds
				// nothing for it, so the key's release goes nowhere
				// and the queue stays balanced (DESIGN.md invariant 1).
				c := keys.Char(ch)
				dst = append(dst, Routed{To: to, Key: c, Down: true}, Routed{To: to, Key: c, Down: false})
				continue
			case charmode.Level, charmode.Home:
				continue
			}
			// A key that stays physical gets the Shift or AltGr held
			// with it (Shift+Tab), withheld until now.
			for _, h := range r.held {
				hc, _ := h.Code()
				if h != k && r.chars.IsLevel(hc) && !slices.Contains(r.swallowed, h) && !r.sentFrom(to, h) {
					dst = r.press(dst, to, h)
				}
			}
		}
		dst = r.press(dst, to, k)
	}
	return dst
}

// press routes the press of source key k to destination to, mapped.
func (r *Router) press(dst []Routed, to int, k keys.Key) []Routed {
	key := k
	if code, phys := k.Code(); phys {
		if m, ok := r.routes[to].Map[code]; ok {
			key = keys.Key(m)
		}
	}
	if r.heldAt(to, key) {
		// Another key mapped to the same one holds it there already:
		// a second press would be unbalanced (DESIGN.md invariant 2).
		return dst
	}
	r.down = append(r.down, sent{from: k, to: to, key: key})
	return append(dst, Routed{To: to, Key: key, Down: true})
}

// sentFrom reports whether source key k is down at destination to.
func (r *Router) sentFrom(to int, k keys.Key) bool {
	return slices.ContainsFunc(r.down, func(s sent) bool { return s.to == to && s.from == k })
}

// heldAt reports whether destination to holds key down now.
func (r *Router) heldAt(to int, key keys.Key) bool {
	for _, s := range r.down {
		if s.to == to && s.key == key {
			return true
		}
	}
	return false
}

// release appends the key-up of s at its destination.
func (r *Router) release(dst []Routed, s sent) []Routed {
	return append(dst, Routed{To: s.to, Key: s.key, Down: false})
}

// hotkey reports whether the press of k completes a destination's
// hotkey, and which.
func (r *Router) hotkey(k keys.Key) (int, bool) {
	code, phys := k.Code()
	if !phys {
		return 0, false
	}
	for i, rt := range r.routes {
		if len(rt.Hotkey) == 0 || !slices.Contains(rt.Hotkey, code) {
			continue
		}
		all := true
		for _, c := range rt.Hotkey {
			all = all && slices.Contains(r.held, keys.Key(c))
		}
		if all {
			return i, true
		}
	}
	return 0, false
}

// swallow makes every key held at the source now that no destination
// holds go nowhere until it is released and pressed again. One that a
// destination holds (a hotkey's first keys, pressed before the chord was
// complete, when the target stays the same) is released there as usual.
func (r *Router) swallow() {
	for _, h := range r.held {
		if !slices.Contains(r.swallowed, h) && !slices.ContainsFunc(r.down, func(s sent) bool { return s.from == h }) {
			r.swallowed = append(r.swallowed, h)
		}
	}
}

// Switch makes to the target (a route's index, or Local) and appends to
// dst the releases it takes: every key the old target holds is released
// there, last pressed first, and the keys held at the source now reach
// the new target only once released and pressed again. Switching to the
// target there is changes nothing.
func (r *Router) Switch(dst []Routed, to int) []Routed {
	if to == r.target {
		return dst
	}
	if !r.mirror || to == Local {
		for i := len(r.down) - 1; i >= 0; i-- {
			dst = r.release(dst, r.down[i])
		}
		r.down = r.down[:0]
		r.swallow()
	}
	r.target = to
	return dst
}

// ActsHere reports whether a press of the physical key code, made now, must
// act on this machine: the target lists it among its local keys (in mirror
// mode, any destination does). A source that owns the keyboard (send --grab)
// keeps every key it relays from this machine, so it passes such a key to
// this machine itself (local keys, DESIGN.md Named destinations: never
// relayed to a destination that lists them, they act here); the key is still
// given to Key, which relays it to no destination that lists it. Keys go
// nowhere when the target is Local, so none acts here then: the source is
// not told to relay.
func (r *Router) ActsHere(code keys.Code) bool {
	if r.target == Local {
		return false
	}
	for to, rt := range r.routes {
		if (r.mirror || to == r.target) && slices.Contains(rt.Local, code) {
			return true
		}
	}
	return false
}

// HasLocal reports whether any destination has local keys, so that a
// source that would pass them to this machine knows whether it needs the
// means (send --input evdev's virtual keyboard).
func (r *Router) HasLocal() bool {
	return slices.ContainsFunc(r.routes, func(rt Route) bool { return len(rt.Local) > 0 })
}

// Hotkeys are the destinations' hotkeys in the routes' order (nil for a
// route without one), for a source that sees them where Key cannot: in
// local use, when it relays nothing.
func (r *Router) Hotkeys() [][]keys.Code {
	out := make([][]keys.Code, len(r.routes))
	for i, rt := range r.routes {
		out[i] = rt.Hotkey
	}
	return out
}

// Index is the index of the route named name, or Local for "local". Case
// is ignored, as in peers' names: send refuses two destinations whose
// names differ only in case, so at most one matches.
func (r *Router) Index(name string) (int, bool) {
	if strings.EqualFold(name, "local") {
		return Local, true
	}
	for i, rt := range r.routes {
		if strings.EqualFold(rt.Name, name) {
			return i, true
		}
	}
	return 0, false
}
