package routing

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/keys"
)

// testRoutes are three destinations with hotkeys ControlRight+Digit1..3;
// b maps MetaLeft to ControlLeft, c keeps AudioVolumeUp here.
func testRoutes() []Route {
	return []Route{
		{Name: "a", Hotkey: []keys.Code{keys.ControlRight, keys.Digit1}},
		{Name: "b", Hotkey: []keys.Code{keys.ControlRight, keys.Digit2}, Map: map[keys.Code]keys.Code{keys.MetaLeft: keys.ControlLeft}},
		{Name: "c", Hotkey: []keys.Code{keys.ControlRight, keys.Digit3}, Local: []keys.Code{keys.AudioVolumeUp}},
	}
}

// step is one source event (or a Switch, when to is set) of a table case.
type step struct {
	key  keys.Code
	down bool
	to   string // Switch to this name instead of a key
}

func dn(k keys.Code) step { return step{key: k, down: true} }
func up(k keys.Code) step { return step{key: k} }
func sw(name string) step { return step{to: name} }
func out(to int, k keys.Code, down bool) Routed {
	return Routed{To: to, Key: keys.Key(k), Down: down}
}

// TestRouterSendsToTheTargetOnly checks DESIGN.md's Named destinations on
// the router: a destination's hotkey makes it the only target and reaches no
// one; a switch releases at the old target what it holds there (DESIGN.md
// invariant 1 per destination), and a key held across it is not pressed at
// the new target until pressed again; maps and local keys apply per
// destination; mirror sends every key everywhere.
func TestRouterSendsToTheTargetOnly(t *testing.T) {
	cases := []struct {
		name   string
		mirror bool
		target int
		steps  []step
		want   []Routed
	}{
		{name: "target only", target: 0, steps: []step{dn(keys.KeyA), up(keys.KeyA)},
			want: []Routed{out(0, keys.KeyA, true), out(0, keys.KeyA, false)}},
		{name: "hotkey switches and reaches no one", target: 0,
			steps: []step{dn(keys.ControlRight), dn(keys.Digit2), up(keys.Digit2), up(keys.ControlRight), dn(keys.KeyA), up(keys.KeyA)},
			// ControlRight went to a before the chord was complete: released there.
			want: []Routed{out(0, keys.ControlRight, true), out(0, keys.ControlRight, false), out(1, keys.KeyA, true), out(1, keys.KeyA, false)}},
		{name: "held across a switch is released at the old target and not pressed at the new", target: 0,
			steps: []step{dn(keys.ShiftLeft), sw("b"), dn(keys.KeyA), up(keys.ShiftLeft), up(keys.KeyA), dn(keys.ShiftLeft), up(keys.ShiftLeft)},
			want: []Routed{out(0, keys.ShiftLeft, true), out(0, keys.ShiftLeft, false), out(1, keys.KeyA, true), out(1, keys.KeyA, false),
				out(1, keys.ShiftLeft, true), out(1, keys.ShiftLeft, false)}},
		{name: "released where pressed", target: 0, mirror: false,
			steps: []step{dn(keys.KeyA), sw("local"), up(keys.KeyA), dn(keys.KeyB)},
			want:  []Routed{out(0, keys.KeyA, true), out(0, keys.KeyA, false)}},
		{name: "map applies to its destination", target: 1, steps: []step{dn(keys.MetaLeft), up(keys.MetaLeft)},
			want: []Routed{out(1, keys.ControlLeft, true), out(1, keys.ControlLeft, false)}},
		{name: "two keys mapped to one press it once", target: 1, steps: []step{dn(keys.ControlLeft), dn(keys.MetaLeft), up(keys.MetaLeft), up(keys.ControlLeft)},
			want: []Routed{out(1, keys.ControlLeft, true), out(1, keys.ControlLeft, false)}},
		{name: "local keys stay here", target: 2, steps: []step{dn(keys.AudioVolumeUp), up(keys.AudioVolumeUp), dn(keys.KeyA)},
			want: []Routed{out(2, keys.KeyA, true)}},
		{name: "mirror sends everywhere, each its own way", mirror: true, target: 0, steps: []step{dn(keys.MetaLeft), dn(keys.AudioVolumeUp)},
			want: []Routed{out(0, keys.MetaLeft, true), out(1, keys.ControlLeft, true), out(2, keys.MetaLeft, true), out(0, keys.AudioVolumeUp, true), out(1, keys.AudioVolumeUp, true)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter(testRoutes(), tc.mirror, tc.target)
			var got []Routed
			for _, s := range tc.steps {
				if s.to != "" {
					i, ok := r.Index(s.to)
					if !ok {
						t.Fatalf("no route %q", s.to)
					}
					got = r.Switch(got, i)
					continue
				}
				got = r.Key(got, keys.Key(s.key), s.down)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("routed\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestRouterPropertyBalancedPerDestination is the Router's property test
// (DESIGN.md, Named destinations): random key events, hotkeys and switches,
// each destination's events through its own balanced queue (the seed's) to a
// receiver that gets a random subset of the packets. At every step, a
// key-down reaches only the destination that is the target then, and only in
// answer to a press at the source; each destination's events are balanced
// (no second press of a held key, no release of one not held: DESIGN.md
// invariant 2); and once the source releases everything and one packet per
// destination arrives, no receiver holds a key (invariant 1).
func TestRouterPropertyBalancedPerDestination(t *testing.T) {
	checkRouterBalanced(t, false)
}

// TestRouterPropertyBalancedWithCharacters is the same property with
// destinations a and c in characters mode (DESIGN.md, Named destinations):
// whatever mix of chords, level modifiers, dead keys and characters, every
// destination's stream stays balanced, a character being a down and its up
// together.
func TestRouterPropertyBalancedWithCharacters(t *testing.T) {
	checkRouterBalanced(t, true)
}

// testKeymap is a small layout: KeyA a A, KeyQ q Q @ (AltGr), KeyB a dead
// acute, Digit1 1 !, AltRight AltGr.
func testKeymap() *charmode.Table {
	return &charmode.Table{
		Syms: map[keys.Code][4]uint32{
			keys.KeyA: {'a', 'A'}, keys.KeyQ: {'q', 'Q', '@'}, keys.KeyB: {0xfe51}, keys.Digit1: {'1', '!'},
			keys.AltRight: {0xfe03}, keys.Enter: {0xff0d},
		},
		Alpha: map[keys.Code]bool{keys.KeyA: true, keys.KeyQ: true},
		Seqs:  map[[2]uint32]rune{{0xfe51, 'a'}: 'á', {0xfe51, 'A'}: 'Á'},
	}
}

func checkRouterBalanced(t *testing.T, chars bool) {
	pool := []keys.Code{keys.KeyA, keys.KeyB, keys.ShiftLeft, keys.MetaLeft, keys.ControlLeft, keys.ControlRight, keys.Digit1, keys.Digit2, keys.Digit3, keys.AudioVolumeUp}
	if chars {
		pool = append(pool, keys.AltRight, keys.KeyQ, keys.CapsLock, keys.Enter)
	}
	rapid.Check(t, func(rt *rapid.T) {
		mirror := rapid.Bool().Draw(rt, "mirror")
		routes := testRoutes()
		if chars {
			routes[0].Characters, routes[2].Characters = true, true
		}
		r := NewRouter(routes, mirror, rapid.IntRange(Local, 2).Draw(rt, "target"))
		if chars {
			r.SetTranslator(charmode.New(testKeymap()))
		}
		type dest struct {
			q      *eventqueue.Queue
			rx     eventqueue.Tracker
			stamp  uint64
			held   []keys.Key // as routed
			rxHeld []keys.Key
		}
		ds := make([]*dest, 3)
		for i := range ds {
			q, err := eventqueue.New(16)
			if err != nil {
				rt.Fatal(err)
			}
			ds[i] = &dest{q: q}
		}
		var srcHeld []keys.Code
		deliver := func(d *dest) {
			for _, e := range d.rx.Apply(nil, d.q.Events(), false) {
				if e.Kind == eventqueue.Down {
					if slices.Contains(d.rxHeld, e.Key) {
						rt.Fatalf("receiver pressed %v twice", e.Key)
					}
					d.rxHeld = append(d.rxHeld, e.Key)
				} else {
					d.rxHeld = slices.DeleteFunc(d.rxHeld, func(k keys.Key) bool { return k == e.Key })
				}
			}
		}
		apply := func(rs []Routed, fromPress bool, wasTarget int) {
			for _, o := range rs {
				d := ds[o.To]
				if o.Down {
					if !fromPress {
						rt.Fatalf("a switch pressed %v at %d", o.Key, o.To)
					}
					if !mirror && o.To != wasTarget {
						rt.Fatalf("%v pressed at %d while the target was %d", o.Key, o.To, wasTarget)
					}
					if slices.Contains(d.held, o.Key) {
						rt.Fatalf("%v pressed twice at %d", o.Key, o.To)
					}
					d.held = append(d.held, o.Key)
				} else {
					if !slices.Contains(d.held, o.Key) {
						rt.Fatalf("%v released at %d, which does not hold it", o.Key, o.To)
					}
					d.held = slices.DeleteFunc(d.held, func(k keys.Key) bool { return k == o.Key })
				}
				kind := eventqueue.Up
				if o.Down {
					kind = eventqueue.Down
				}
				d.stamp++
				if _, err := d.q.Add(eventqueue.Event{Key: o.Key, Kind: kind, Stamp: d.stamp}); err != nil {
					rt.Fatal(err)
				}
				if !rapid.Bool().Draw(rt, "lost") {
					deliver(d)
				}
			}
		}
		n := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range n {
			if rapid.IntRange(0, 5).Draw(rt, "switch?") == 0 {
				to := rapid.IntRange(Local, 2).Draw(rt, "to")
				apply(r.Switch(nil, to), false, r.Target())
				continue
			}
			k := rapid.SampledFrom(pool).Draw(rt, "key")
			down := !slices.Contains(srcHeld, k)
			if down {
				srcHeld = append(srcHeld, k)
			} else {
				srcHeld = slices.DeleteFunc(srcHeld, func(c keys.Code) bool { return c == k })
			}
			before := r.Target()
			here := down && r.ActsHere(k)
			rs := r.Key(nil, keys.Key(k), down)
			for _, o := range rs {
				// A key acting here reaches no destination that lists it
				// (local keys).
				if here && o.Down && o.Key == keys.Key(k) && slices.Contains(routes[o.To].Local, k) {
					rt.Fatalf("%v acts here and was pressed at %d, which keeps it local", k, o.To)
				}
			}
			apply(rs, down, before)
		}
		for _, k := range srcHeld {
			apply(r.Key(nil, keys.Key(k), false), false, r.Target())
		}
		for i, d := range ds {
			if len(d.held) > 0 {
				rt.Fatalf("destination %d still holds %v after every key was released", i, d.held)
			}
			deliver(d) // one packet after the last event arrives
			if len(d.rxHeld) > 0 {
				rt.Fatalf("receiver %d still holds %v", i, d.rxHeld)
			}
		}
	})
}

// TestRouterActsHere checks the decision send --grab's sources ask of the
// router (local keys, DESIGN.md Named destinations): a key acts on this
// machine when the target lists it among its local keys, in mirror mode when
// any destination does, and never while keys go nowhere (target Local).
func TestRouterActsHere(t *testing.T) {
	cases := []struct {
		name   string
		mirror bool
		target int
		key    keys.Code
		want   bool
	}{
		{name: "the target's local key", target: 2, key: keys.AudioVolumeUp, want: true},
		{name: "another destination's local key", target: 0, key: keys.AudioVolumeUp, want: false},
		{name: "a key the target relays", target: 2, key: keys.KeyA, want: false},
		{name: "mirror: any destination's local key", mirror: true, target: 0, key: keys.AudioVolumeUp, want: true},
		{name: "target local: nothing relays, nothing acts here", target: Local, key: keys.AudioVolumeUp, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter(testRoutes(), tc.mirror, tc.target)
			if got := r.ActsHere(tc.key); got != tc.want {
				t.Errorf("ActsHere(%v) with target %d, mirror %v = %v, want %v", tc.key, tc.target, tc.mirror, got, tc.want)
			}
		})
	}
	r := NewRouter(testRoutes(), false, 0)
	if !r.HasLocal() {
		t.Error("HasLocal = false, but c keeps AudioVolumeUp here")
	}
	if NewRouter(testRoutes()[:2], false, 0).HasLocal() {
		t.Error("HasLocal = true for routes without local keys")
	}
	if h := r.Hotkeys(); len(h) != 3 || !slices.Equal(h[1], []keys.Code{keys.ControlRight, keys.Digit2}) {
		t.Errorf("Hotkeys = %v, want the three routes' hotkeys in order", h)
	}
}

func ch(to int, r rune, down bool) Routed { return Routed{To: to, Key: keys.Char(r), Down: down} }

// TestRouterCharactersMode checks characters mode (DESIGN.md, Named
// destinations) on the router: a destination in characters mode gets a
// printable key as its character (a down and its up at once), a chord or a
// key that prints nothing as the physical keys, with the Shift or AltGr held
// then; a destination in physical mode gets the keys as ever.
func TestRouterCharactersMode(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  []Routed
	}{
		{"a letter is its character", []step{dn(keys.KeyA), up(keys.KeyA)},
			[]Routed{ch(0, 'a', true), ch(0, 'a', false), out(1, keys.KeyA, true), out(1, keys.KeyA, false)}},
		{"Shift level: Shift is withheld", []step{dn(keys.ShiftLeft), dn(keys.KeyA), up(keys.KeyA), up(keys.ShiftLeft)},
			[]Routed{out(1, keys.ShiftLeft, true), ch(0, 'A', true), ch(0, 'A', false), out(1, keys.KeyA, true), out(1, keys.KeyA, false), out(1, keys.ShiftLeft, false)}},
		{"AltGr character", []step{dn(keys.AltRight), dn(keys.KeyQ), up(keys.KeyQ), up(keys.AltRight)},
			[]Routed{out(1, keys.AltRight, true), ch(0, '@', true), ch(0, '@', false), out(1, keys.KeyQ, true), out(1, keys.KeyQ, false), out(1, keys.AltRight, false)}},
		{"dead key composes", []step{dn(keys.KeyB), up(keys.KeyB), dn(keys.KeyA), up(keys.KeyA)},
			[]Routed{out(1, keys.KeyB, true), out(1, keys.KeyB, false), ch(0, 'á', true), ch(0, 'á', false), out(1, keys.KeyA, true), out(1, keys.KeyA, false)}},
		{"a chord stays physical", []step{dn(keys.ControlLeft), dn(keys.KeyA), up(keys.KeyA), up(keys.ControlLeft)},
			[]Routed{out(0, keys.ControlLeft, true), out(1, keys.ControlLeft, true), out(0, keys.KeyA, true), out(1, keys.KeyA, true),
				out(0, keys.KeyA, false), out(1, keys.KeyA, false), out(0, keys.ControlLeft, false), out(1, keys.ControlLeft, false)}},
		{"Shift+Enter: Shift goes ahead of the physical key", []step{dn(keys.ShiftLeft), dn(keys.Enter), up(keys.Enter), up(keys.ShiftLeft)},
			[]Routed{out(1, keys.ShiftLeft, true), out(0, keys.ShiftLeft, true), out(0, keys.Enter, true), out(1, keys.Enter, true),
				out(0, keys.Enter, false), out(1, keys.Enter, false), out(1, keys.ShiftLeft, false), out(0, keys.ShiftLeft, false)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			routes := []Route{{Name: "chars", Characters: true}, {Name: "phys"}}
			r := NewRouter(routes, true, 0)
			r.SetTranslator(charmode.New(testKeymap()))
			var got []Routed
			for _, s := range tc.steps {
				got = r.Key(got, keys.Key(s.key), s.down)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestRouterTakesLocksAsRelayingResumes checks that the lock state the
// source read (PROTOCOL.md §3.2) sets the characters' Caps Lock when its
// epoch is new (relaying started or resumed), and that the same epoch
// again, which every key-down carries, leaves the Caps Lock the keys
// toggled since as it is.
func TestRouterTakesLocksAsRelayingResumes(t *testing.T) {
	const (
		e0  = keys.LocksKnown
		e1  = keys.LocksKnown | keys.LockEpoch
		cap = keys.LockCaps
	)
	type tap struct {
		locks keys.Locks // the source's lock state as the key is pressed
		key   keys.Code
	}
	cases := []struct {
		name string
		taps []tap
		want string
	}{
		{"nothing known: Caps Lock off", []tap{{0, keys.KeyA}}, "a"},
		{"on as send starts: a capital", []tap{{e0 | cap, keys.KeyA}}, "A"},
		{"on as send starts, Caps Lock pressed: off in the same epoch", []tap{{e0 | cap, keys.KeyA}, {e0 | cap, keys.CapsLock}, {e0 | cap, keys.KeyA}}, "Aa"},
		{"toggled in local use: the resumed epoch's state wins", []tap{{e0 | cap, keys.KeyA}, {e1, keys.KeyA}, {e1, keys.KeyA}}, "Aaa"},
		{"pressed off, resumed with it on", []tap{{e0 | cap, keys.CapsLock}, {e0 | cap, keys.KeyA}, {e1 | cap, keys.KeyA}}, "aA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRouter([]Route{{Name: "chars", Characters: true}}, true, 0)
			r.SetTranslator(charmode.New(testKeymap()))
			var got []rune
			for _, tp := range tc.taps {
				r.Locks(tp.locks)
				for _, down := range []bool{true, false} {
					for _, o := range r.Key(nil, keys.Key(tp.key), down) {
						if c, ok := o.Key.Char(); ok && o.Down {
							got = append(got, c)
						}
					}
				}
			}
			if string(got) != tc.want {
				t.Errorf("typed %q, want %q", string(got), tc.want)
			}
		})
	}
}

// TestRouterIndexIgnoresCase: a destination's name and "local" match in
// any case, as peers' names do (keyrelay switch B reaches destination b).
func TestRouterIndexIgnoresCase(t *testing.T) {
	r := NewRouter(testRoutes(), false, 0)
	for _, c := range []struct {
		name string
		want int
		ok   bool
	}{
		{"b", 1, true}, {"B", 1, true}, {"local", Local, true}, {"LOCAL", Local, true}, {"Local", Local, true}, {"d", 0, false},
	} {
		if got, ok := r.Index(c.name); got != c.want || ok != c.ok {
			t.Errorf("Index(%q) = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
