package routing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/sender"
)

// TestGroupSwitchesUnderLoss runs a Group of three senders, each to its own
// receiver over a link losing 20 % of packets (virtual time), and checks
// DESIGN.md's Named destinations end to end in one process: a key held
// across a switch is released at the old target and never pressed at the new
// one; each receiver gets the keys typed while it was the target and no
// other; none is left holding a key, and none saw an unbalanced event
// (DESIGN.md invariants 1 and 2, per destination).
func TestGroupSwitchesUnderLoss(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Loss: 0.2, Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: seed})
				routes := []routing.Route{{Name: "a"}, {Name: "b"}, {Name: "c"}}
				oses, relays, senders := groupRig(t, nw, len(routes))
				g, err := routing.GroupOf(senders, routing.NewRouter(routes, false, 0))
				if err != nil {
					t.Fatal(err)
				}
				key := func(emit func(keys.Key, bool) error, k keys.Code, down bool) {
					time.Sleep(50 * time.Millisecond)
					if err := emit(keys.Key(k), down); err != nil {
						t.Error(err)
					}
				}
				sw := func(name string) {
					time.Sleep(50 * time.Millisecond)
					if err := g.Switch(context.Background(), name); err != nil {
						t.Error(err)
					}
				}
				src := fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
					key(emit, keys.ShiftLeft, true)
					sw("b")
					// Released at a by the switch, not at the end.
					time.Sleep(time.Second)
					if h := oses[0].Held(); len(h) > 0 {
						t.Errorf("a still holds %v a second after the switch to b", h)
					}
					key(emit, keys.KeyB, true)
					key(emit, keys.ShiftLeft, false) // held across: released at a already
					key(emit, keys.KeyB, false)
					key(emit, keys.ShiftLeft, true)
					sw("c")
					key(emit, keys.KeyC, true) // held at the end: released at c
					return nil
				})
				if _, err := g.Run(context.Background(), src); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3 * time.Second)
				for _, rl := range relays {
					rl.Stop()
				}
				want := [][]keys.Key{{keys.Key(keys.ShiftLeft)}, {keys.Key(keys.KeyB), keys.Key(keys.ShiftLeft)}, {keys.Key(keys.KeyC)}}
				for i, osk := range oses {
					if got := osk.SentDowns(); !slices.Equal(got, want[i]) {
						t.Errorf("receiver %c pressed %v, want %v", 'a'+i, got, want[i])
					}
					if h := osk.Held(); len(h) > 0 {
						t.Errorf("receiver %c still holds %v", 'a'+i, h)
					}
					if p := osk.Problems(); len(p) > 0 {
						t.Errorf("receiver %c: %v", 'a'+i, p)
					}
				}
			})
		})
	}
}

// followingSource is a source that owns the keyboard (a ModeSource with
// Grabbing), switching mode delay after it is asked to, when it follows
// at all; its Play runs the test's steps.
type followingSource struct {
	steps func(ctx context.Context)

	mu      sync.Mutex
	on      bool
	follows bool
	delay   time.Duration
	changed chan struct{}
	asked   int // requests made: a newer one replaces an older, as in capture
}

func (f *followingSource) Play(ctx context.Context, _ func(keys.Key, bool) error) error {
	f.steps(ctx)
	return nil
}

func (f *followingSource) Grabbing() bool { return true }

func (f *followingSource) Relaying() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on
}

func (f *followingSource) SetRelaying(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.follows {
		return
	}
	f.asked++
	n := f.asked
	time.AfterFunc(f.delay, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if n != f.asked {
			return // a newer request replaced it
		}
		if f.on != on && f.changed != nil {
			close(f.changed)
			f.changed = nil
		}
		f.on = on
	})
}

func (f *followingSource) ModeChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// TestGroupSwitchWaitsForTheSourceToFollow checks keyrelay switch with a
// source that owns the keyboard (DESIGN.md, Named destinations: the grab
// follows the target): Switch answers at once when the source is in the mode
// asked for already, returns the moment the source says it switched (35 ms
// of virtual time, which a 10 ms poll would have rounded up to 40), and
// reports a source that never follows after ModeWait, or the caller's
// context ending, without waiting longer.
func TestGroupSwitchWaitsForTheSourceToFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: time.Millisecond})
		var (
			senders []*sender.Sender
			routes  []routing.Route
			relays  []*relaytest.Relay
		)
		for i := range 2 {
			rc, err := nw.Listen(fmt.Sprintf("10.0.0.%d:7575", 10+i))
			if err != nil {
				t.Fatal(err)
			}
			sc, err := nw.Listen(fmt.Sprintf("10.0.0.1:%d", 40000+i))
			if err != nil {
				t.Fatal(err)
			}
			rl := relaytest.Start(t, relaytest.Config{RecvConn: rc, SendConn: sc, Insecure: true, Feedback: true,
				Receiver: receiver.Config{Timeout: 2 * time.Second},
				Sender:   sender.Config{Linger: 100 * time.Millisecond}})
			relays = append(relays, rl)
			senders, routes = append(senders, rl.Sender), append(routes, routing.Route{Name: string(rune('a' + i))})
		}
		g, err := routing.GroupOf(senders, routing.NewRouter(routes, false, 0))
		if err != nil {
			t.Fatal(err)
		}
		const delay = 35 * time.Millisecond
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		steps := []struct {
			name       string
			to         string
			follows    bool
			ctx        context.Context
			wantTook   time.Duration
			wantErr    error
			wantTarget string
		}{
			{"already relaying: at once", "b", true, context.Background(), 0, nil, "b"},
			{"to local use: when the source says", "local", true, context.Background(), delay, nil, "local"},
			{"already in local use: at once", "local", true, context.Background(), 0, nil, "local"},
			{"back to relaying: when the source says", "a", true, context.Background(), delay, nil, "a"},
			{"a source that never follows: after ModeWait", "local", false, context.Background(), routing.ModeWait, routing.ErrModeNotFollowed, "a"},
			{"the caller gives up: at once", "local", false, cancelled, 0, context.Canceled, "a"},
			{"an unknown name: at once", "d", true, context.Background(), 0, routing.ErrNoSuchDestination, "a"},
		}
		src := &followingSource{on: true, delay: delay}
		src.steps = func(context.Context) {
			for _, st := range steps {
				src.mu.Lock()
				src.follows = st.follows
				src.mu.Unlock()
				start := time.Now()
				err := g.Switch(st.ctx, st.to)
				if took := time.Since(start); took != st.wantTook {
					t.Errorf("%s: Switch(%q) took %v, want %v", st.name, st.to, took, st.wantTook)
				}
				if !errors.Is(err, st.wantErr) {
					t.Errorf("%s: Switch(%q) = %v, want %v", st.name, st.to, err, st.wantErr)
				}
				if got := g.Target(); got != st.wantTarget {
					t.Errorf("%s: target %q after Switch(%q), want %q", st.name, got, st.to, st.wantTarget)
				}
			}
		}
		if _, err := g.Run(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		for _, rl := range relays {
			rl.Stop()
		}
	})
}

// groupRig starts n paired relays on nw, each a sender to a receiver of
// its own typing into a fake OS, for a Group of n destinations.
func groupRig(t *testing.T, nw *netsim.Network, n int) ([]*fake.OS, []*relaytest.Relay, []*sender.Sender) {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var (
		oses    []*fake.OS
		relays  []*relaytest.Relay
		senders []*sender.Sender
	)
	for i := range n {
		rc, err := nw.Listen(fmt.Sprintf("10.0.0.%d:7575", 10+i))
		if err != nil {
			t.Fatal(err)
		}
		sc, err := nw.Listen(fmt.Sprintf("10.0.0.1:%d", 40000+i))
		if err != nil {
			t.Fatal(err)
		}
		osk := &fake.OS{}
		rl := relaytest.Start(t, relaytest.Config{RecvConn: rc, SendConn: sc, Identity: id, Feedback: true,
			Receiver: receiver.Config{Injector: osk, Timeout: 2 * time.Second},
			Sender:   sender.Config{Linger: 500 * time.Millisecond}})
		oses, relays, senders = append(oses, osk), append(relays, rl), append(senders, rl.Sender)
	}
	return oses, relays, senders
}

// routingSource is a fake source that owns the keyboard (a
// routing.RoutingSource): play runs with what SetRouting gave it.
type routingSource struct {
	local   func(keys.Code) bool
	hotkeys [][]keys.Code
	pick    func(int)
	play    func(s *routingSource, emit func(keys.Key, bool) error)
}

func (s *routingSource) SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int)) {
	s.local, s.hotkeys, s.pick = local, hotkeys, pick
}

func (s *routingSource) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	s.play(s, emit)
	return nil
}

// retargetSource is a routingSource that counts Retarget's calls.
type retargetSource struct {
	routingSource
	retargets atomic.Int32
}

func (s *retargetSource) Retarget() { s.retargets.Add(1) }

// TestGroupTellsACopyOfASwitch: a source that keeps a copy of which keys act
// here (routing.RetargetSource, the Windows hook) is told of a switch it did
// not make (keyrelay switch, Group.Switch), so that it asks local again and
// sees the new target's local keys (DESIGN.md, Named destinations); its own
// pick needs no telling.
func TestGroupTellsACopyOfASwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond, Seed: 1})
		_, relays, g, _ := localKeyGroup(t, nw)
		src := &retargetSource{}
		src.play = func(s *routingSource, emit func(keys.Key, bool) error) {
			s.pick(1)
			if n := src.retargets.Load(); n != 0 {
				t.Errorf("Retarget called %d times after the source's own pick, want 0", n)
			}
			if err := g.Switch(context.Background(), "a"); err != nil {
				t.Error(err)
			}
			if n := src.retargets.Load(); n != 1 {
				t.Errorf("Retarget called %d times after a switch to a, want 1", n)
			}
			if !s.local(keys.AudioVolumeUp) {
				t.Error("after the switch to a, AudioVolumeUp (a's local key) should act here")
			}
		}
		if _, err := g.Run(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		for _, rl := range relays {
			rl.Stop()
		}
	})
}

// TestGroupTellsASourceThatOwnsTheKeyboard checks what a Group tells a
// source that owns the keyboard (send --grab; DESIGN.md, Named
// destinations): whether a key acts here follows the current target's local
// keys; the destinations' hotkeys come in the routes' order; and pick, what
// the source calls for a destination's hotkey seen in local use, makes that
// destination the only target.
func TestGroupTellsASourceThatOwnsTheKeyboard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond, Seed: 1})
		oses, relays, g, routes := localKeyGroup(t, nw)
		tap := func(emit func(keys.Key, bool) error, k keys.Code) {
			for _, down := range []bool{true, false} {
				time.Sleep(50 * time.Millisecond)
				if err := emit(keys.Key(k), down); err != nil {
					t.Error(err)
				}
			}
		}
		src := &routingSource{play: func(s *routingSource, emit func(keys.Key, bool) error) {
			if s.local == nil || s.pick == nil {
				t.Error("SetRouting was not called before Play, or without local keys or pick")
				return
			}
			if len(s.hotkeys) != 2 || s.hotkeys[0] != nil || !slices.Equal(s.hotkeys[1], routes[1].Hotkey) {
				t.Errorf("hotkeys %v, want none for a and b's", s.hotkeys)
			}
			if !s.local(keys.AudioVolumeUp) || s.local(keys.KeyA) {
				t.Error("with a the target, AudioVolumeUp should act here and KeyA not")
			}
			tap(emit, keys.AudioVolumeUp)
			tap(emit, keys.KeyA)
			s.pick(1)
			if g.Target() != "b" {
				t.Errorf("target %q after pick(1), want b", g.Target())
			}
			if s.local(keys.AudioVolumeUp) {
				t.Error("with b the target, AudioVolumeUp (a's local key only) should not act here")
			}
			tap(emit, keys.AudioVolumeUp)
			tap(emit, keys.KeyB)
		}}
		if _, err := g.Run(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		for _, rl := range relays {
			rl.Stop()
		}
		want := [][]keys.Key{{keys.Key(keys.KeyA)}, {keys.Key(keys.AudioVolumeUp), keys.Key(keys.KeyB)}}
		for i, osk := range oses {
			if got := osk.SentDowns(); !slices.Equal(got, want[i]) {
				t.Errorf("receiver %c pressed %v, want %v", 'a'+i, got, want[i])
			}
		}
	})
}

// localKeyGroup is the Group both routing tests start from, switching
// between a, whose local key is AudioVolumeUp, and b, whose hotkey is
// ControlRight+Digit2, with a the target, over groupRig's relays.
func localKeyGroup(t *testing.T, nw *netsim.Network) ([]*fake.OS, []*relaytest.Relay, *routing.Group, []routing.Route) {
	t.Helper()
	routes := []routing.Route{
		{Name: "a", Local: []keys.Code{keys.AudioVolumeUp}},
		{Name: "b", Hotkey: []keys.Code{keys.ControlRight, keys.Digit2}},
	}
	oses, relays, senders := groupRig(t, nw, len(routes))
	g, err := routing.GroupOf(senders, routing.NewRouter(routes, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	return oses, relays, g, routes
}
