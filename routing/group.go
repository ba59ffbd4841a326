package routing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
)

// SwitchSource is a Source that switches between relaying and local use
// (send --grab and its hotkey); Relaying must be safe to call from another
// goroutine than Play's.
type SwitchSource interface {
	Relaying() bool
}

// event is a key event the Router gave one destination.
type event struct {
	key  keys.Key
	down bool
}

// Group runs one Sender per destination, each with its own balanced
// queue and session, and routes the source's keys to them through a
// Router: the send side of named destinations, switching, key maps and
// local keys. A destination that is not the target gets no key event, and
// its Sender keeps resending its (all-released) queue, so that it stays
// live and its receiver releases nothing it should hold.
//
// Run must be called once; Switch, SetKeymap, Target and Senders are safe
// for concurrent use with it.
type Group struct {
	senders []*sender.Sender

	mu     sync.Mutex // guards router and outs; held while routing and handing over
	router *Router
	outs   []chan event
	gone   []chan struct{} // closed as each sender's Run returns
	closed bool
	quit   <-chan struct{} // Run's context: a sender that stopped reads no more
	err    error           // the source's, once it ended
	src    sender.Source
}

// NewGroup makes a Group of one Sender per config (each with one
// destination), routed by router; routes and configs are in the same
// order.
func NewGroup(cfgs []sender.Config, router *Router) (*Group, error) {
	if len(cfgs) != len(router.Routes()) {
		return nil, fmt.Errorf("routing: %d destinations and %d routes", len(cfgs), len(router.Routes()))
	}
	var senders []*sender.Sender
	for _, cfg := range cfgs {
		s, err := sender.New(cfg)
		if err != nil {
			return nil, err
		}
		senders = append(senders, s)
	}
	return GroupOf(senders, router)
}

// GroupOf makes a Group of senders already made (a test's, on its own
// network), one per route, in the routes' order.
func GroupOf(senders []*sender.Sender, router *Router) (*Group, error) {
	if len(senders) != len(router.Routes()) {
		return nil, fmt.Errorf("routing: %d senders and %d routes", len(senders), len(router.Routes()))
	}
	g := &Group{router: router, senders: senders}
	for range senders {
		g.outs = append(g.outs, make(chan event, 64))
		g.gone = append(g.gone, make(chan struct{}))
	}
	return g, nil
}

// Senders are the group's senders, in the routes' order.
func (g *Group) Senders() []*sender.Sender { return g.senders }

// Target is the current target's name, "local", or "all" in mirror mode.
func (g *Group) Target() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.router.Target()
	sw, _ := g.src.(SwitchSource)
	switch {
	case t == Local || sw != nil && !sw.Relaying():
		return "local"
	case g.router.Mirror():
		return "all"
	}
	return g.router.Routes()[t].Name
}

// ErrNoSuchDestination is Switch's error for a name no route has.
var ErrNoSuchDestination = errors.New("no such destination")

// ModeSource is a SwitchSource that can be told to relay or to go to
// local use from another goroutine (send --grab: the keyboard is taken or
// given back, as the hotkey does), and that says when its mode changes,
// so that a switch waits for it without polling. Every method must be
// safe for concurrent use with Play.
type ModeSource interface {
	SwitchSource
	// Grabbing reports whether the source owns the keyboard (--grab):
	// only then has it a mode to switch, and SetRelaying does anything.
	Grabbing() bool
	// SetRelaying asks for a mode and returns at once; the source
	// switches in its own time, as its hotkey would.
	SetRelaying(on bool)
	// ModeChanged is closed at the next change of Relaying after the
	// call.
	ModeChanged() <-chan struct{}
}

// ModeWait is how long a switch waits for a ModeSource to follow: a
// grab is taken or given back within a round trip to the X server or a
// system call, so a source still in the old mode after a second is stuck.
const ModeWait = time.Second

// ErrModeNotFollowed is the error of a switch whose source did not reach
// the mode asked for within ModeWait.
var ErrModeNotFollowed = errors.New("the key source did not switch")

// SetMode asks ms for a mode (relaying, or local use) and waits until
// ms is in it: at once when it is already, else until ModeChanged says
// so, ctx is done or ModeWait passed.
func SetMode(ctx context.Context, ms ModeSource, relaying bool) error {
	ms.SetRelaying(relaying)
	return waitMode(ctx, ms, relaying)
}

// waitMode waits until ms is in the mode asked for (SetMode).
func waitMode(ctx context.Context, ms ModeSource, relaying bool) error {
	ctx, cancel := context.WithTimeoutCause(ctx, ModeWait, ErrModeNotFollowed)
	defer cancel()
	for {
		// The channel first, then the mode: a change in between closes
		// the channel taken, so it is not missed.
		changed := ms.ModeChanged()
		if ms.Relaying() == relaying {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if context.Cause(ctx) == ErrModeNotFollowed {
				return fmt.Errorf("%w within %v: it is still in %s (its keyboard grab may be stuck; send's status lines say more)", ErrModeNotFollowed, ModeWait, modeName(!relaying))
			}
			return ctx.Err()
		}
	}
}

// modeName names a mode as send's status does.
func modeName(relaying bool) string {
	if relaying {
		return "relaying"
	}
	return "local use"
}

// RoutingSource is a Source that owns the keyboard (send --grab) and so
// must be told what the Router decides where keys do not reach it: which
// key presses act on this machine (local keys, Router.ActsHere), since a
// key the source keeps from this machine acts nowhere unless the source
// passes it here itself; and the destinations' hotkeys (in the routes'
// order, nil where a route has none), which in local use, while it relays
// nothing, it must see itself and answer by calling pick with the route's
// index before it relays again. Group.Run calls SetRouting once, before
// Play; local is nil when no destination has local keys. local and pick
// are safe to call from Play's goroutine, but not from within emit.
type RoutingSource interface {
	sender.Source
	SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int))
}

// RetargetSource is a RoutingSource that keeps a copy of what local
// answers (the Windows hook, which must answer at once and so cannot wait
// for the Group's lock that local takes): Retarget tells it, once the
// target changed by a switch it did not make (keyrelay switch), to ask
// again. It is called with the Group's lock held, so it must not block nor
// call local; it is safe for concurrent use with Play.
type RetargetSource interface {
	RoutingSource
	Retarget()
}

// Switch makes the destination named name (or "local"; case ignored, as
// Router.Index) the target: what
// the old target holds is released there first (Router.Switch). A source
// that owns the keyboard (ModeSource with Grabbing) follows: "local" gives
// the keyboard back, as its hotkey does, and leaves the target as it was,
// so that the hotkey resumes relaying to it; a name takes the keyboard
// again.
//
// With such a source, Switch returns once the source is in the mode asked
// for (at once if it is already), or with ErrModeNotFollowed after
// ModeWait, or ctx's error.
func (g *Group) Switch(ctx context.Context, name string) error {
	ms, err := g.switchTo(name)
	if err != nil || ms == nil {
		return err
	}
	return waitMode(ctx, ms, !strings.EqualFold(name, "local"))
}

// SetKeymap makes km the sender's layout for the destinations in
// characters mode from the next key on (Router.SetKeymap), between two
// keys: the source's layout changed (setxkbmap on X). Safe to call from
// another goroutine than the source's.
func (g *Group) SetKeymap(km charmode.Keymap) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.router.SetKeymap(km)
}

// switchTo is Switch but for the wait: the source that was asked to
// follow, if any.
func (g *Group) switchTo(name string) (ModeSource, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	to, ok := g.router.Index(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNoSuchDestination, name)
	}
	ms, _ := g.src.(ModeSource)
	if ms != nil && !ms.Grabbing() {
		// Without a grab the keyboard acts here anyway: the router
		// alone switches.
		ms = nil
	}
	if ms != nil {
		ms.SetRelaying(to != Local)
		if to == Local {
			return ms, nil
		}
	}
	g.hand(g.router.Switch(nil, to))
	if rs, ok := g.src.(RetargetSource); ok {
		rs.Retarget()
	}
	return ms, nil
}

// hand gives routed events to their senders' sources, in order; g.mu is
// held, so that a switch and a key never interleave.
func (g *Group) hand(rs []Routed) {
	if g.closed {
		return
	}
	for _, r := range rs {
		select {
		case g.outs[r.To] <- event{key: r.Key, down: r.Down}:
		case <-g.gone[r.To]:
			// Its sender returned (no answer within Config.Wait): the
			// others go on.
		case <-g.quit:
			return
		}
	}
}

// Run plays src through the router into every sender until src ends or
// ctx is done; each sender then releases its keys and lingers (Sender.Run),
// and Run returns when all have, with their stats in the routes' order.
// The source's error, if any, is returned once.
//
// With Config.StopWhenSilent, once any destination's receiver heard before
// has been silent for Outage, Run stops the source for all of them and
// returns a *sender.SilentError naming every such receiver: a script mirrored to
// several machines is written for every one, the silent one has lost keys
// for good (send's exit status is 3 whatever follows), and playing on
// would only take the others further through a script it no longer
// reaches. One queue to several destinations stops the same way
// (sender.Core does the same).
func (g *Group) Run(ctx context.Context, src sender.Source) ([]sender.Stats, error) {
	g.mu.Lock()
	g.src, g.quit = src, ctx.Done()
	g.mu.Unlock()
	var wg sync.WaitGroup
	stats := make([]sender.Stats, len(g.senders))
	errs := make([]error, len(g.senders))
	playCtx, stopPlay := context.WithCancel(ctx)
	defer stopPlay()
	// The senders run under a context of their own, so that one that
	// gets no answer within Config.Wait stops the others before anything
	// plays: nothing is typed anywhere then, as with one sender.
	sendCtx, stopSenders := context.WithCancel(ctx)
	defer stopSenders()
	started := make([]chan struct{}, len(g.senders))
	for i, s := range g.senders {
		started[i] = make(chan struct{})
		wg.Go(func() {
			defer close(g.gone[i])
			stats[i], errs[i] = s.Run(sendCtx, &routedSource{g: g, in: g.outs[i], started: started[i]})
		})
	}
	for i := range g.senders {
		select {
		case <-started[i]:
			continue
		case <-g.gone[i]:
		case <-ctx.Done():
		}
		stopSenders()
		wg.Wait()
		for _, e := range errs {
			if e != nil && !errors.Is(e, context.Canceled) {
				return stats, e
			}
		}
		return stats, nil
	}
	if rs, ok := src.(RoutingSource); ok {
		var local func(keys.Code) bool
		if g.router.HasLocal() {
			local = func(c keys.Code) bool {
				g.mu.Lock()
				defer g.mu.Unlock()
				return g.router.ActsHere(c)
			}
		}
		rs.SetRouting(local, g.router.Hotkeys(), func(to int) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.hand(g.router.Switch(nil, to))
		})
	}
	// A destination silent past Outage (Config.StopWhenSilent) stops the
	// source for every destination, at the step its sender found it:
	// the rule for a group is any destination, as for one queue to
	// several (sender.Core does the same). The others then end as after a signal.
	for i, s := range g.senders {
		go func() {
			select {
			case <-s.Silent():
				stopPlay()
			case <-g.gone[i]:
				select {
				case <-s.Silent(): // said as its Run returned
					stopPlay()
				default:
				}
			}
		}()
	}
	played := make(chan error, 1)
	go func() {
		var buf []Routed
		err := src.Play(playCtx, func(k keys.Key, down bool) error {
			g.mu.Lock()
			defer g.mu.Unlock()
			if l, ok := src.(sender.LockSource); ok {
				// Read before the key, so that the first key after
				// relaying (re)starts is translated under the locks
				// the source read then.
				g.router.Locks(l.Locks())
			}
			buf = g.router.Key(buf[:0], k, down)
			g.hand(buf)
			return nil
		})
		g.mu.Lock()
		g.closed, g.err = true, err
		for _, c := range g.outs {
			close(c)
		}
		g.mu.Unlock()
		played <- err
	}()
	wg.Wait()
	stopPlay()
	err := <-played
	if silent := g.silenced(); silent != nil && (err == nil || errors.Is(err, context.Canceled)) {
		// The source was stopped for it (or ended as it was found).
		return stats, silent
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // stopped by the caller (a signal): a clean exit
	}
	// The source's error once; else a sender's own (NoAnswerError).
	for _, e := range errs {
		if err == nil && e != nil && !errors.Is(e, context.Canceled) {
			err = e
		}
	}
	return stats, err
}

// silenced is the group's SilentError once its senders have returned:
// every receiver whose silence past Outage stopped its sender, in the
// routes' order; nil if none did.
func (g *Group) silenced() *sender.SilentError {
	var e *sender.SilentError
	for _, s := range g.senders {
		addrs, outage := s.Silenced()
		if len(addrs) == 0 {
			continue
		}
		if e == nil {
			e = &sender.SilentError{Outage: outage}
		}
		e.Addrs = append(e.Addrs, addrs...)
	}
	return e
}

// routedSource is one sender's source in a Group: the events the router
// gave its destination. It ends when the group's source does, with its
// error; the lock state and the mode are the group source's.
type routedSource struct {
	g       *Group
	in      <-chan event
	started chan struct{} // closed as its sender starts to play it
}

func (r *routedSource) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	close(r.started)
	for {
		select {
		case ev, ok := <-r.in:
			if !ok {
				// The group's source ended: this one ends the same way
				// (an error makes the sender's end quick, Interrupted).
				r.g.mu.Lock()
				defer r.g.mu.Unlock()
				return r.g.err
			}
			if err := emit(ev.key, ev.down); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Locks is the group source's lock state (PROTOCOL.md §3.2).
func (r *routedSource) Locks() keys.Locks {
	if l, ok := r.g.src.(sender.LockSource); ok {
		return l.Locks()
	}
	return 0
}
