package relaytest_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/wire"
)

// deliverySim runs a Core against real receiver instances in explicit
// time: every datagram takes latency each way and is lost with the
// link's probability; the receiver can be killed and a new instance (the
// same identity, a new process) started on the same address.
type deliverySim struct {
	t       testing.TB
	c       *sender.Core
	rxID    *identity.Identity
	paired  func([32]byte) (string, bool)
	psk     []byte
	rng     *rand.Rand
	lossTx  float64 // sender to receiver
	lossRx  float64 // receiver to sender
	latency time.Duration
	// jitter: each datagram takes up to this much longer, at random, so
	// later ones may overtake it (reordering); dup: the chance a datagram
	// arrives twice, each copy with its own delay.
	jitter time.Duration
	dup    float64
	now    time.Time
	// onSend, if set, sees every datagram the core sends, as it sends it.
	onSend func(b []byte)
	// unfocused, if set, makes the receivers' injectors say whether the
	// key they typed last reached an application (receiver.Aimed): none
	// while it is true.
	unfocused *bool

	rx       *receiver.Receiver   // nil while down
	rxs      []*receiver.Receiver // every instance, for their stats
	conn     *capConn
	cur      *instance
	inst     []*instance
	inflight []datagram
}

// instance is one receiver process: what it typed, and how much of it an
// ack that reached the sender covered.
type instance struct {
	rec *fake.Recorder
	// acked: the number of events it had typed when it sent the newest
	// of its acks that reached the sender.
	acked int
	// nowhere: the key events the sender sent that it typed while its
	// injector said they reached no application.
	nowhere int
}

type datagram struct {
	at    time.Time
	toRx  bool
	b     []byte
	by    *instance // the instance that sent it (toward the sender)
	typed int       // how many events it had typed then
}

const simRx = "10.0.0.1:7575"

var simFrom = net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))

func newDeliverySim(t testing.TB, seed uint64, lossTx, lossRx float64, cfg sender.CoreConfig) *deliverySim {
	t.Helper()
	rxID, txID := newID(t), newID(t)
	s := &deliverySim{t: t, rxID: rxID, psk: make([]byte, wire.KeyLen), rng: rand.New(rand.NewPCG(seed, 1)),
		lossTx: lossTx, lossRx: lossRx, latency: 5 * time.Millisecond, now: t0,
		paired: func(k [32]byte) (string, bool) { return "tx", k == txID.Public() }}
	cfg.PSK, cfg.Feedback, cfg.Identity = s.psk, true, txID
	cfg.Dests = []sender.Dest{{Addr: simRx, PeerKey: rxID.Public()}}
	cfg.Output = func(b []byte, _ int) {
		if s.onSend != nil {
			s.onSend(b)
		}
		s.fly(datagram{toRx: true, b: append([]byte(nil), b...)})
	}
	c, err := sender.NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	s.c = c
	s.start()
	return s
}

// start runs a new receiver instance.
func (s *deliverySim) start() {
	s.conn = &capConn{}
	in := &instance{rec: &fake.Recorder{}}
	var inj receiver.Injector = in.rec
	if s.unfocused != nil {
		inj = &aimedRecorder{in.rec, s.unfocused, &in.nowhere}
	}
	r, err := receiver.New(receiver.Config{Conn: s.conn, Injector: inj, PSK: s.psk, Timeout: 2 * time.Second, Identity: s.rxID, Peer: s.paired})
	if err != nil {
		s.t.Fatal(err)
	}
	s.rx, s.cur = r, in
	s.rxs = append(s.rxs, r)
	s.inst = append(s.inst, in)
}

// aimedRecorder records what it injects, and says it reached no
// application while *none is true (receiver.Aimed), counting the sender's
// events typed so.
type aimedRecorder struct {
	*fake.Recorder
	none  *bool
	count *int
}

func (a *aimedRecorder) Inject(e sink.Event) error {
	if *a.none && e.Cause == eventqueue.Sent {
		*a.count++
	}
	return a.Recorder.Inject(e)
}

func (a *aimedRecorder) LastReached() sink.Unreached {
	if *a.none {
		return sink.NoFocus
	}
	return sink.Reached
}

// kill stops the receiver instance without a word, as SIGKILL does.
func (s *deliverySim) kill() { s.rx, s.cur = nil, nil }

// collect moves what the receiver sent into flight.
func (s *deliverySim) collect() {
	for _, b := range s.conn.out {
		s.fly(datagram{b: b, by: s.cur, typed: len(s.cur.rec.Events())})
	}
	s.conn.out = nil
}

// fly puts d in flight from now: the latency, plus a random share of the
// jitter; with the duplication chance, twice.
func (s *deliverySim) fly(d datagram) {
	copies := 1
	if s.dup > 0 && s.rng.Float64() < s.dup {
		copies = 2
	}
	for range copies {
		d.at = s.now.Add(s.latency)
		if s.jitter > 0 {
			d.at = d.at.Add(time.Duration(s.rng.Int64N(int64(s.jitter))))
		}
		s.inflight = append(s.inflight, d)
	}
}

// next is the earliest deadline of the core, the receiver and the
// datagrams in flight (zero: none).
func (s *deliverySim) next() time.Time {
	n := s.c.Next()
	if s.rx != nil {
		if r := s.rx.Next(); !r.IsZero() && (n.IsZero() || r.Before(n)) {
			n = r
		}
	}
	for _, d := range s.inflight {
		if n.IsZero() || d.at.Before(n) {
			n = d.at
		}
	}
	return n
}

// runUntil advances to until (zero: until the core is done), running
// everything due on the way.
func (s *deliverySim) runUntil(until time.Time) {
	for !s.c.Done() {
		n := s.next()
		if n.IsZero() || (!until.IsZero() && n.After(until)) {
			break
		}
		s.now = n
		s.step()
	}
	if !until.IsZero() && s.now.Before(until) {
		s.now = until
	}
}

// step runs what is due at s.now.
func (s *deliverySim) step() {
	var due []datagram
	s.inflight = slices.DeleteFunc(s.inflight, func(d datagram) bool {
		if d.at.After(s.now) {
			return false
		}
		due = append(due, d)
		return true
	})
	for _, d := range due {
		switch {
		case d.toRx && s.rng.Float64() >= s.lossTx && s.rx != nil:
			s.rx.Handle(d.b, simFrom, s.now)
			s.collect()
		case !d.toRx && s.rng.Float64() >= s.lossRx:
			err := s.c.Ack(d.b, simRx, s.now)
			if h, _ := handshake.ParseHeader(d.b); err == nil && h.Type == handshake.TypeAck && d.by != nil {
				d.by.acked = max(d.by.acked, d.typed)
			}
		}
	}
	if s.rx != nil && !s.rx.Next().After(s.now) {
		s.rx.Expire(s.now)
		s.collect()
	}
	if n := s.c.Next(); !n.IsZero() && !n.After(s.now) {
		s.c.Tick(s.now)
	}
}

// typedEvent is one key event a receiver instance typed (cause Sent).
type typedEvent struct {
	key  keys.Key
	down bool
}

// sent lists what instance in typed that the sender sent (not resync
// presses or releases on a timeout).
func (in *instance) sent(upTo int) []typedEvent {
	var out []typedEvent
	for i, a := range in.rec.Events() {
		if i >= upTo {
			break
		}
		if a.Cause == eventqueue.Sent {
			out = append(out, typedEvent{a.Key, a.Down})
		}
	}
	return out
}

// check checks what the instances typed against the taps of keys and the
// core's ledger (PROTOCOL.md §8.4, §9): each instance types in the
// script's order; an event is typed again by a later instance only if no
// ack of the instance that typed it first covered it (since); an event
// the ledger counts delivered was typed (or is a key-up of a key not
// held there, which types nothing); none is counted twice; and
// undelivered is 0 only if every event was typed. It returns the number
// typed and the receiver's Delivery.
func (s *deliverySim) check(t interface {
	Fatalf(string, ...any)
}, taps []keys.Key) (int, sender.Delivery) {
	index := map[typedEvent]int{}
	for i, k := range taps {
		index[typedEvent{k, true}] = 2 * i
		index[typedEvent{k, false}] = 2*i + 1
	}
	typedBy := map[int]int{} // event → the instance that typed it first
	for n, in := range s.inst {
		prev := -1
		for _, e := range in.sent(len(in.rec.Events())) {
			i, ok := index[e]
			if !ok {
				t.Fatalf("instance %d typed %v, not in the script", n, e)
			}
			if i <= prev {
				t.Fatalf("instance %d typed event #%d after #%d: out of the script's order (DESIGN.md invariant 3)", n, i, prev)
			}
			prev = i
			if m, seen := typedBy[i]; seen {
				if m == n {
					t.Fatalf("instance %d typed event #%d twice", n, i)
				}
				if before := s.inst[m]; slices.Index(before.sent(before.acked), e) >= 0 {
					t.Fatalf("instance %d typed event #%d again, which instance %d typed and acknowledged (since, PROTOCOL.md §8.4)", n, i, m)
				}
				continue
			}
			typedBy[i] = n
		}
	}
	ds := s.c.Deliveries(nil)
	if len(ds) != 1 || !ds[0].Accounted {
		t.Fatalf("deliveries %+v, want one accounted destination", ds)
	}
	d := ds[0]
	st := s.c.Stats()
	if total := st.Queued + st.Dropped; d.Delivered+d.Undelivered != total {
		t.Fatalf("%d delivered + %d undelivered, want the %d events queued or dropped", d.Delivered, d.Undelivered, total)
	}
	// A key-up an instance does not hold the key for is applied as
	// nothing (balanced: no key-up of a key not held), though the packet
	// that carried it was acknowledged: it may count delivered untyped.
	// Its key-down was typed by an instance that died since (its keys
	// went up with it), or counts undelivered.
	noop := 0
	for i := range taps {
		if _, up := typedBy[2*i+1]; !up {
			noop++
		}
	}
	if d.Delivered > len(typedBy)+noop {
		t.Fatalf("%d events counted delivered, but only %d were typed (and %d key-ups of keys never pressed)", d.Delivered, len(typedBy), noop)
	}
	if d.Undelivered == 0 {
		// Every key-down typed, and every key-up, but that of a key an
		// instance held when it died.
		for i, k := range taps {
			by, down := typedBy[2*i]
			_, up := typedBy[2*i+1]
			if !down || !up && by == len(s.inst)-1 {
				t.Fatalf("nothing counted undelivered (send exits 0), but %v was not typed (down %v, up %v; %d of %d events typed)", k, down, up, len(typedBy), 2*len(taps))
			}
		}
	}
	if d.Undelivered > 0 && (d.First.IsZero() || d.Last.Before(d.First)) {
		t.Fatalf("undelivered from %v to %v", d.First, d.Last)
	}
	return len(typedBy), d
}

// distinctTaps are n different keys (n ≤ 50): HID usages 0x04 on, letters,
// digits and punctuation, no lock key.
func distinctTaps(n int) []keys.Key {
	out := make([]keys.Key, n)
	for i := range out {
		out[i] = keys.Key(keys.KeyA) + keys.Key(i)
	}
	return out
}

// TestDeliveryAccounting (PROTOCOL.md §8.4, §9; send's exit status 3): a
// 40-tap script at 50 ms a key event, the receiver killed 1.5 s in and a
// new instance started after a gap, over a lossless link. Within Outage
// the new instance types the rest and the ledger counts every event
// delivered; past it, the events pushed out of the queue meanwhile are
// counted undelivered, exactly those never typed, with when they were
// typed. A press a queue full of held keys dropped reached nobody.
func TestDeliveryAccounting(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gap         time.Duration // 0: no restart
		outage      time.Duration
		typed       int // events typed, over the instances
		undelivered int
	}{
		{"no restart", 0, 5 * time.Second, 80, 0},
		{"restart after 0.3s", 300 * time.Millisecond, 5 * time.Second, 80, 0},
		{"restart after 1s", time.Second, 5 * time.Second, 80, 0},
		{"restart after 3s", 3 * time.Second, 5 * time.Second, 80, 0},
		{"restart after 2.5s, past --outage 2s", 2500 * time.Millisecond, 2 * time.Second, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDeliverySim(t, 1, 0, 0, sender.CoreConfig{Outage: tc.outage, Linger: 300 * time.Millisecond})
			taps := distinctTaps(40)
			s.c.Start(t0)
			// Taps from +100ms, a key event every 50 ms; then a last tap
			// 3 s later (the new instance is up by then in every case).
			var at []time.Duration
			for i := range taps {
				at = append(at, 100*time.Millisecond+time.Duration(i)*100*time.Millisecond)
			}
			at[len(at)-1] += 3 * time.Second
			killAt, upAt := t0.Add(1500*time.Millisecond), t0.Add(1500*time.Millisecond+tc.gap)
			killed := tc.gap == 0
			for i, k := range taps {
				when := t0.Add(at[i])
				if !killed && !when.Before(killAt) {
					s.runUntil(killAt)
					s.kill()
					s.runUntil(upAt)
					s.start()
					killed = true
				}
				s.runUntil(when)
				s.c.Key(k, true, s.now)
				s.runUntil(when.Add(50 * time.Millisecond))
				s.c.Key(k, false, s.now)
			}
			s.c.Stop(s.now, sender.SourceEnded)
			s.runUntil(time.Time{})
			typed, d := s.check(t, taps)
			undelivered := tc.undelivered
			if tc.typed < 0 {
				// Past Outage: exactly the events never typed.
				undelivered = 80 - typed
				if undelivered == 0 {
					t.Fatalf("the instances typed all 80 events through a %v gap past Outage %v: the case tests nothing", tc.gap, tc.outage)
				}
				if d.First.Before(killAt) || d.Last.After(upAt) {
					t.Errorf("undelivered events typed from +%v to +%v, want within the outage (+%v to +%v)", d.First.Sub(t0), d.Last.Sub(t0), killAt.Sub(t0), upAt.Sub(t0))
				}
			} else if typed != tc.typed {
				t.Errorf("typed %d events, want %d", typed, tc.typed)
			}
			t.Logf("%d events typed over %d instances; ledger: %d delivered, %d undelivered", typed, len(s.inst), d.Delivered, d.Undelivered)
			if d.Undelivered != undelivered || d.Delivered != 80-undelivered {
				t.Errorf("ledger: %d delivered, %d undelivered; want %d and %d (%d typed)", d.Delivered, d.Undelivered, 80-undelivered, undelivered, typed)
			}
		})
	}
}

// TestDroppedPressIsUndelivered (the seed's step 5; PROTOCOL.md §9): a
// press the queue drops because it is full of other held keys is in no
// packet, so it is counted undelivered, though the receiver acks every
// packet.
func TestDroppedPressIsUndelivered(t *testing.T) {
	s := newDeliverySim(t, 1, 0, 0, sender.CoreConfig{QueueLen: 2, Linger: 300 * time.Millisecond})
	s.c.Start(t0)
	ks := distinctTaps(3)
	for _, k := range ks {
		s.runUntil(s.now.Add(50 * time.Millisecond))
		s.c.Key(k, true, s.now)
	}
	s.c.Stop(s.now, sender.SourceEnded)
	s.runUntil(time.Time{})
	if st := s.c.Stats(); st.Dropped != 1 {
		t.Fatalf("%d presses dropped, want 1 (stats %+v)", st.Dropped, st)
	}
	d := s.c.Deliveries(nil)[0]
	// Two presses and their releases at the end delivered, the third
	// press not.
	if d.Delivered != 4 || d.Undelivered != 1 {
		t.Errorf("ledger: %d delivered, %d undelivered; want 4 and 1", d.Delivered, d.Undelivered)
	}
}

// TestDeliveryUnderLossAndRestarts (PROTOCOL.md §8.4, §9): random typing
// over a link losing up to 30 % each way, the receiver killed and
// restarted up to three times with gaps up to 7 s (past Outage, 5 s, or
// not). Every event is typed in order by each instance, none that an
// instance acknowledged is typed again by the next, the ledger counts
// delivered only events typed, and it counts none undelivered (send exits
// 0) only when every event was typed.
//
// Packets are abridged once acked (PROTOCOL.md §3.3), and no receiver
// instance ever gets one it cannot build on: a new instance gets whole
// queues until it acks one.
func TestDeliveryUnderLossAndRestarts(t *testing.T) {
	abridged, packets := 0, 0
	defer func() {
		t.Logf("%d of %d packets abridged", abridged, packets)
		if !t.Failed() && abridged == 0 {
			t.Errorf("no packet was abridged in any run: the property says nothing of PROTOCOL.md §3.3")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		lossTx := float64(rapid.IntRange(0, 30).Draw(rt, "lossTx%")) / 100
		lossRx := float64(rapid.IntRange(0, 30).Draw(rt, "lossRx%")) / 100
		seed := rapid.Uint64().Draw(rt, "seed")
		queue := rapid.IntRange(2, 16).Draw(rt, "queue")
		taps := distinctTaps(rapid.IntRange(1, 50).Draw(rt, "taps"))
		type restart struct{ at, gap time.Duration }
		var restarts []restart
		at := time.Duration(0)
		for range rapid.IntRange(0, 3).Draw(rt, "restarts") {
			at += time.Duration(rapid.IntRange(0, 3000).Draw(rt, "afterMs")) * time.Millisecond
			gap := time.Duration(rapid.IntRange(0, 7000).Draw(rt, "gapMs")) * time.Millisecond
			restarts = append(restarts, restart{at, gap})
			at += gap
		}
		s := newDeliverySim(t, seed, lossTx, lossRx, sender.CoreConfig{QueueLen: queue, Linger: 300 * time.Millisecond})
		s.c.Start(t0)
		var steps []time.Time
		when := t0
		for range taps {
			when = when.Add(time.Duration(rapid.IntRange(0, 200).Draw(rt, "waitMs")) * time.Millisecond)
			steps = append(steps, when)
		}
		r := 0
		event := func(i int) time.Time { return steps[i/2] }
		for i := 0; i < 2*len(taps); i++ {
			for r < len(restarts) && !t0.Add(restarts[r].at).After(event(i)) {
				s.runUntil(t0.Add(restarts[r].at))
				s.kill()
				s.runUntil(t0.Add(restarts[r].at + restarts[r].gap))
				s.start()
				r++
			}
			s.runUntil(event(i))
			s.c.Key(taps[i/2], i%2 == 0, s.now)
		}
		s.c.Stop(s.now, sender.SourceEnded)
		// Restarts after the source ended happen while the end waits.
		for ; r < len(restarts); r++ {
			s.runUntil(t0.Add(restarts[r].at))
			s.kill()
			s.runUntil(t0.Add(restarts[r].at + restarts[r].gap))
			s.start()
		}
		s.runUntil(time.Time{})
		if !s.c.Done() {
			rt.Fatalf("the session did not end")
		}
		typed, d := s.check(rt, taps)
		for i, r := range s.rxs {
			if n := r.Stats().Unbased; n != 0 {
				rt.Fatalf("receiver instance %d dropped %d abridged packets that did not build on its queue", i, n)
			}
		}
		abridged, packets = abridged+s.c.Stats().Abridged, packets+s.c.Stats().Packets
		rt.Logf("%d of %d events typed over %d instances; ledger: %d delivered, %d undelivered; %d of %d packets abridged", typed, 2*len(taps), len(s.inst), d.Delivered, d.Undelivered, s.c.Stats().Abridged, s.c.Stats().Packets)
	})
}

// TestStopWhenSilent (PROTOCOL.md §9.1; send's exit status 3): a script
// typing a tap every 100 ms for 30 s whose receiver is killed 2 s in
// stops once the receiver has been silent for Outage: the session is
// over within Outage + Linger of the receiver's last ack, names it
// (Silenced), and the keys typed after it died count undelivered. Without
// StopWhenSilent (a person typing) it plays on to the end.
func TestStopWhenSilent(t *testing.T) {
	for _, stop := range []bool{true, false} {
		t.Run(fmt.Sprintf("StopWhenSilent=%v", stop), func(t *testing.T) {
			s := newDeliverySim(t, 1, 0, 0, sender.CoreConfig{Linger: 300 * time.Millisecond, StopWhenSilent: stop})
			s.c.Start(t0)
			killAt := t0.Add(2 * time.Second)
			killed := false
			taps := distinctTaps(40)
			for i, when := 0, t0.Add(100*time.Millisecond); when.Before(t0.Add(30*time.Second)) && !s.c.Done(); i, when = i+1, when.Add(100*time.Millisecond) {
				if !killed && !when.Before(killAt) {
					s.runUntil(killAt)
					s.kill()
					killed = true
				}
				s.runUntil(when)
				s.c.Key(taps[i%len(taps)], true, s.now)
				s.c.Key(taps[i%len(taps)], false, s.now)
			}
			if !s.c.Done() {
				s.c.Stop(s.now, sender.SourceEnded)
				s.runUntil(time.Time{})
			}
			lastHeard := s.c.Peers(nil, s.now)[0].LastHeard
			took := s.now.Sub(killAt)
			d := s.c.Deliveries(nil)[0]
			t.Logf("over %v after the kill (last ack %v before it); silenced %v; ledger %d delivered, %d undelivered", took, killAt.Sub(lastHeard), s.c.Silenced(), d.Delivered, d.Undelivered)
			if !stop {
				if s.c.Silenced() != nil || took < 27*time.Second {
					t.Errorf("without StopWhenSilent: over %v after the kill, silenced %v; want the script played to its end (28 s after the kill), none named", took, s.c.Silenced())
				}
				return
			}
			if got := s.c.Silenced(); !slices.Equal(got, []string{simRx}) {
				t.Errorf("silenced %v, want [%s]", got, simRx)
			}
			if limit := sender.DefaultOutage + 300*time.Millisecond + 100*time.Millisecond; s.now.Sub(lastHeard) > limit {
				t.Errorf("over %v after the last ack, want within Outage + Linger + an Interval (%v)", s.now.Sub(lastHeard), limit)
			}
			if d.Undelivered == 0 {
				t.Errorf("nothing counted undelivered, though the receiver died 2 s in")
			}
		})
	}
}

// TestNowhereIsCounted (PROTOCOL.md §9: keys typed into nothing): taps
// typed while the receiver's injector says no window has the keyboard
// focus are counted in its acks, and the sender's Delivery gives the
// count over the receiver's instances (a restarted one counts from 0) and
// why, over a link losing 20 % each way; taps typed while focused add
// nothing.
func TestNowhereIsCounted(t *testing.T) {
	for seed := range uint64(5) {
		s := newDeliverySim(t, seed, 0.2, 0.2, sender.CoreConfig{Linger: 300 * time.Millisecond})
		none := true
		s.unfocused = &none
		s.start() // again, now with the focus told
		s.rxs, s.inst = s.rxs[1:], s.inst[1:]
		s.c.Start(t0)
		taps := distinctTaps(30)
		for i, k := range taps {
			when := t0.Add(time.Duration(i+1) * 100 * time.Millisecond)
			switch i {
			case 10:
				// Restarted between two taps, unfocused still.
				s.runUntil(when.Add(-50 * time.Millisecond))
				s.kill()
				s.runUntil(when.Add(-20 * time.Millisecond))
				s.start()
			case 29:
				// The restarted instance (its handshake once the sender
				// noticed the silence) typed some of the taps since.
				none = false
			}
			s.runUntil(when)
			s.c.Key(k, true, s.now)
			s.runUntil(when.Add(30 * time.Millisecond))
			s.c.Key(k, false, s.now)
		}
		s.c.Stop(s.now, sender.SourceEnded)
		s.runUntil(time.Time{})
		typedIntoNothing := 0
		for _, in := range s.inst {
			typedIntoNothing += in.nowhere
		}
		d := s.c.Deliveries(nil)[0]
		if len(s.inst) != 2 || s.inst[0].nowhere == 0 || s.inst[1].nowhere == 0 {
			t.Fatalf("seed %d: %d instances typed %d events into nothing: the case tests nothing", seed, len(s.inst), typedIntoNothing)
		}
		// The first instance's last events may have been typed after its
		// last ack to reach the sender: the count may lag behind by
		// those, never exceed.
		if d.Nowhere > typedIntoNothing || d.Nowhere < typedIntoNothing-4 || d.Why != wire.WhyNoFocus {
			t.Errorf("seed %d: Delivery says %d typed into nothing (why %d); the instances typed %d so (why %d)", seed, d.Nowhere, d.Why, typedIntoNothing, wire.WhyNoFocus)
		}
		t.Logf("seed %d: %d typed into nothing (%d, then %d after the restart), Delivery says %d", seed, typedIntoNothing, s.inst[0].nowhere, s.inst[1].nowhere, d.Nowhere)
	}
}
