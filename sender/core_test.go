package sender_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// Table tests of the sender's Core with explicit times (DESIGN.md, Packages:
// the core is pure): no clock, no socket, no receiver. Each packet the core
// sends is decoded and recorded with the time of the call that sent it.

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// The physical keys A and B.
var kA, kB = keys.Key(keys.KeyA), keys.Key(keys.KeyB)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// rig is a Core and what it sent.
type rig struct {
	t    testing.TB
	c    *sender.Core
	sent []wire.Queue // decoded, in order
	acks uint64       // the receiver's ack counter
}

func newRig(t testing.TB, cfg sender.CoreConfig) *rig {
	t.Helper()
	r := &rig{t: t}
	cfg.Session = 0x1234
	// In plaintext (--insecure): the core's rules, not its keys, are
	// under test here; acks come as the rig makes them.
	cfg.Insecure = true
	cfg.Output = func(b []byte, _ int) {
		var q wire.Queue
		if err := wire.ParseQueue(b, &q); err != nil {
			t.Fatalf("the core sent a packet that does not parse: %v", err)
		}
		q.Events = append([]eventqueue.Event(nil), q.Events...)
		r.sent = append(r.sent, q)
	}
	c, err := sender.NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	return r
}

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// ack is the receiver's ack, arriving at now, saying it has packet newest
// and those of the received bits (bit i: packet newest-1-i, Glenn Fiedler's
// ack_bits; the wire's missing bits are their complement, PROTOCOL.md §9),
// applied events up to stamp, and held newest for delay. It gives the
// receiver's wall clock as now.
func (r *rig) ack(now time.Time, newest, received, stamp uint64, delay time.Duration) {
	r.t.Helper()
	r.ackWall(now, newest, received, stamp, delay, uint64(now.UnixMilli()))
}

// ackWall is ack giving wall as the receiver's wall clock (0: not given).
func (r *rig) ackWall(now time.Time, newest, received, stamp uint64, delay time.Duration, wall uint64) {
	r.t.Helper()
	r.acks++
	a := wire.Ack{Header: wire.Header{Type: wire.TypeAck, Flags: wire.FlagOneWay, Session: 0x1234, Counter: r.acks},
		Newest: newest, Missing: ^received & wire.MissingMask(newest), Stamp: stamp, Delay: uint64(delay / time.Microsecond), Wall: wall}
	b, err := a.Append(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.c.Ack(b, "10.0.0.2:7575", now); err != nil {
		r.t.Fatalf("ack rejected: %v", err)
	}
}

// newestStamp is the stamp of the newest event the core has sent.
func (r *rig) newestStamp() uint64 {
	q := r.sent[len(r.sent)-1]
	if len(q.Events) == 0 {
		return 0
	}
	return q.Events[0].Stamp
}

// end calls Tick at every deadline the core names until it is Done, and
// returns the time of the last call.
func (r *rig) end() time.Time {
	var end time.Time
	for now := r.c.Next(); !r.c.Done(); now = r.c.Next() {
		r.c.Tick(now)
		end = now
	}
	return end
}

func (r *rig) peer(now time.Time) sender.PeerStatus {
	r.t.Helper()
	ps := r.c.Peers(nil, now)
	if len(ps) != 1 {
		r.t.Fatalf("%d peers, want 1", len(ps))
	}
	return ps[0]
}

// The resend period (mission: the whole queue every 100 ms) and the event
// send (on every event), one-way: no bursts.
func TestCoreResendsEveryInterval(t *testing.T) {
	r := newRig(t, sender.CoreConfig{})
	r.c.Start(t0)
	if len(r.sent) != 1 {
		t.Fatalf("Start sent %d packets, want 1 (the announce)", len(r.sent))
	}
	if got := r.c.Next(); !got.Equal(at(ms(100))) {
		t.Fatalf("Next after Start = +%v, want +100ms", got.Sub(t0))
	}
	r.c.Key(kA, true, at(ms(30)))
	if len(r.sent) != 2 || r.sent[1].Events[0].Key != kA {
		t.Fatalf("a key event sent %d packets, want one more carrying it", len(r.sent)-1)
	}
	if got := r.c.Next(); !got.Equal(at(ms(100))) {
		t.Fatalf("one-way, a key event must not start a burst: Next = +%v, want +100ms", got.Sub(t0))
	}
	r.c.Tick(at(ms(100)))
	if len(r.sent) != 3 {
		t.Fatalf("the resend at +100ms: %d packets in all, want 3", len(r.sent))
	}
	// A late tick keeps the period's phase and skips what it missed.
	r.c.Tick(at(ms(350)))
	if got := r.c.Next(); !got.Equal(at(ms(400))) {
		t.Fatalf("Next after a tick late at +350ms = +%v, want +400ms", got.Sub(t0))
	}
	for i, q := range r.sent {
		if q.Header.Counter != uint64(i+1) {
			t.Fatalf("packet %d has counter %d: counters (nonces) must count up from 1", i, q.Header.Counter)
		}
	}
	if got := r.sent[1].Clock; got != 30 {
		t.Errorf("the key's packet says clock %d ms, want 30 (ms since Start)", got)
	}
}

// The RTT estimator of RFC 6298 §2, fed by acks (hold time taken out).
func TestCoreRTTFromAcks(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true})
	r.c.Start(t0) // packet 1 at t0
	r.ack(at(ms(10)), 1, 0, 0, ms(2))
	p := r.peer(at(ms(10)))
	if p.SRTT != ms(8) || p.RTTVar != ms(4) {
		t.Fatalf("first sample 8ms: SRTT %v RTTVar %v, want 8ms and 4ms (§2.2)", p.SRTT, p.RTTVar)
	}
	r.c.Tick(at(ms(100))) // packet 2 at +100ms
	r.ack(at(ms(112)), 2, 1, 0, 0)
	p = r.peer(at(ms(112)))
	// §2.3: RTTVar = 3/4·4 + 1/4·|8−12| = 4; SRTT = 7/8·8 + 1/8·12 = 8.5.
	if p.SRTT != ms(8.5) || p.RTTVar != ms(4) {
		t.Fatalf("second sample 12ms: SRTT %v RTTVar %v, want 8.5ms and 4ms (§2.3)", p.SRTT, p.RTTVar)
	}
	// An ack for a packet already acked gives no sample.
	r.ack(at(ms(150)), 2, 1, 0, 0)
	if p2 := r.peer(at(ms(150))); p2.SRTT != p.SRTT {
		t.Fatalf("a repeated newest changed SRTT to %v", p2.SRTT)
	}
	// In plaintext (--insecure) a forged ack with a huge counter does not
	// shut the real acks out (DESIGN.md invariant 9): there is no window
	// to push, since without a key anyone can forge any ack anyway.
	a := wire.Ack{Header: wire.Header{Type: wire.TypeAck, Flags: wire.FlagOneWay, Session: 0x1234, Counter: 1 << 62}, Newest: 2}
	b, _ := a.Append(nil)
	if err := r.c.Ack(b, "10.0.0.2:7575", at(ms(160))); err != nil {
		t.Fatal(err)
	}
	r.c.Tick(at(ms(200))) // packet 3
	r.ack(at(ms(210)), 3, 3, 0, 0)
	if p3 := r.peer(at(ms(210))); p3.Newest != 3 {
		t.Fatalf("after a forged huge ack counter, the real ack of packet 3 was not taken: newest %d", p3.Newest)
	}
}

// Loss from ack bits: a packet's fate is settled once the receiver is 8
// packets past it (reordering margin), each settled packet weighing 1/32.
func TestCoreLossFromAckBits(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true})
	r.c.Start(t0)
	for i := 1; i < 20; i++ {
		r.c.Tick(at(time.Duration(i) * 100 * time.Millisecond))
	}
	// Newest 20; every packet before it received but 5.
	bits := ^uint64(0) &^ (1 << (20 - 5 - 1))
	r.ack(at(ms(1901)), 20, bits, 0, 0)
	p := r.peer(at(ms(1901)))
	if p.Settled != 12 || p.Lost != 1 {
		t.Fatalf("settled %d lost %d, want 12 and 1 (packets 1..12; 13..19 within the reorder margin)", p.Settled, p.Lost)
	}
	// Packet 5 settled 8th of 12: loss = (1/32)·(31/32)^7.
	want := 1.0 / 32
	for range 7 {
		want *= 31.0 / 32
	}
	if d := p.Loss - want; d > 1e-12 || d < -1e-12 {
		t.Fatalf("loss %v, want %v", p.Loss, want)
	}
	// The same ack bits told again settle nothing twice.
	r.ack(at(ms(1902)), 20, bits, 0, 0)
	if p := r.peer(at(ms(1902))); p.Settled != 12 {
		t.Fatalf("settled %d after a repeat, want 12", p.Settled)
	}
}

// TestClockOffsetOnlyFromAcksGivingIt (PROTOCOL.md §9): the clock offset
// comes from the acks that give the receiver's wall clock, with their own
// round trip; an ack whose wall is 0 (not given) still samples the round
// trip, and leaves the offset as it was rather than reading the Unix epoch.
func TestClockOffsetOnlyFromAcksGivingIt(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true})
	r.c.Start(t0)
	for i, step := range []struct {
		rtt    time.Duration
		ahead  time.Duration // the receiver's clock ahead of ours; 0: the ack gives none
		known  bool
		offset time.Duration
		srtt   time.Duration
	}{
		{ms(40), 0, false, 0, ms(40)}, // a first ack without it: the offset unknown
		{ms(40), 5 * time.Second, true, 5 * time.Second, ms(40)},
		{ms(80), 0, true, 5 * time.Second, ms(45)}, // not given: kept, the RTT sampled
		{ms(40), -2 * time.Second, true, -2 * time.Second, ms(44.375)},
	} {
		sent := at(time.Duration(i+1) * 100 * time.Millisecond)
		r.c.Tick(sent)
		now := sent.Add(step.rtt)
		var wall uint64
		if step.ahead != 0 {
			wall = uint64(sent.Add(step.rtt / 2).Add(step.ahead).UnixMilli())
		}
		r.ackWall(now, uint64(len(r.sent)), ^uint64(0), 0, 0, wall)
		p := r.peer(now)
		if p.ClockKnown != step.known || p.ClockOffset != step.offset || p.SRTT != step.srtt {
			t.Fatalf("ack %d (wall %d): offset %v known %v SRTT %v, want %v %v %v", i+1, wall, p.ClockOffset, p.ClockKnown, p.SRTT, step.offset, step.known, step.srtt)
		}
	}
}

// A live receiver is one heard within PeerTimeout; before any is heard, a
// sender with feedback assumes one for its first PeerTimeout (grace).
func TestCoreLiveness(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, PeerTimeout: time.Second})
	r.c.Start(t0)
	r.ack(at(ms(500)), 1, 0, 0, 0)
	if !r.peer(at(ms(1499))).Live {
		t.Error("heard 999ms ago with a 1s timeout: not live")
	}
	if r.peer(at(ms(1500))).Live {
		t.Error("heard 1s ago with a 1s timeout: still live")
	}
	if !sender.IsLive(at(0), at(ms(999)), time.Second) || sender.IsLive(time.Time{}, at(0), time.Second) {
		t.Error("IsLive: heard 999ms ago must be live, never heard must not")
	}
}

// Bursts (PROTOCOL.md §7.1): after an event, with a live receiver, the queue
// is re-sent every burst gap (a quarter of the SRTT) until the receiver has
// acked a packet carrying the event.
func TestCoreBurstUntilAcked(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true})
	r.c.Start(t0)
	r.ack(at(ms(40)), 1, 0, 0, 0) // SRTT 40ms: gap 10ms
	r.c.Key(kA, true, at(ms(50)))
	n := len(r.sent)
	if got := r.c.Next(); !got.Equal(at(ms(60))) {
		t.Fatalf("burst: Next = +%v, want +60ms (gap SRTT/4 = 10ms)", got.Sub(t0))
	}
	r.c.Tick(at(ms(60)))
	if len(r.sent) != n+1 {
		t.Fatalf("the burst step sent %d packets, want 1", len(r.sent)-n)
	}
	r.ack(at(ms(65)), uint64(n), 0, r.newestStamp(), 0) // the event's packet arrived
	r.c.Tick(at(ms(70)))
	if len(r.sent) != n+1 {
		t.Fatalf("the burst went on after the event's packet was acked")
	}
	if got := r.c.Next(); !got.Equal(at(ms(100))) {
		t.Fatalf("after the burst: Next = +%v, want the resend at +100ms", got.Sub(t0))
	}
}

// The burst gap: a quarter of the smallest live SRTT within its bounds,
// DefaultBurstGap before any RTT is known.
func TestCoreBurstGap(t *testing.T) {
	for _, tc := range []struct {
		rtt  time.Duration // 0: no ack, no RTT
		want time.Duration
	}{
		{0, sender.DefaultBurstGap},
		{ms(0.3), sender.MinBurstGap},
		{ms(8), max(ms(2), sender.MinBurstGap)},
		{ms(40), ms(10)},
		{ms(200), sender.MaxBurstGap},
	} {
		r := newRig(t, sender.CoreConfig{Feedback: true})
		r.c.Start(t0)
		now := t0
		if tc.rtt > 0 {
			now = t0.Add(tc.rtt)
			r.ack(now, 1, 0, 0, 0)
		}
		r.c.Tick(now) // any resend due first: its deadline is not the burst's
		r.c.Key(kA, true, now)
		if got := r.c.Next().Sub(now); got != tc.want {
			t.Errorf("rtt %v: burst gap %v, want %v", tc.rtt, got, tc.want)
		}
	}
}

// Lossless typing: an event that would push out one the live receiver has
// not applied waits in the backlog until the acks let it in.
func TestCoreBacklogWaitsForAcks(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, QueueLen: 2})
	r.c.Start(t0)
	r.ack(at(ms(1)), 1, 0, 0, 0)
	r.c.Key(kA, true, at(ms(10)))
	r.c.Key(kA, false, at(ms(20)))
	r.c.Key(kB, true, at(ms(30))) // would push out KeyA's down, unacked
	if r.c.Pending() != 1 {
		t.Fatalf("pending %d, want 1: the receiver has not applied the event it would push out", r.c.Pending())
	}
	n := len(r.sent)
	r.ack(at(ms(31)), uint64(n), 1, r.newestStamp(), 0)
	if r.c.Pending() != 0 || len(r.sent) != n+1 {
		t.Fatalf("after the ack: pending %d and %d packets sent, want 0 and 1", r.c.Pending(), len(r.sent)-n)
	}
	if ev := r.sent[len(r.sent)-1].Events[0]; ev.Key != kB || ev.Kind != eventqueue.Down {
		t.Fatalf("the packet after the ack leads with %v, want KeyB down", ev)
	}
}

// After PeerTimeout of silence no receiver is live: the backlog drains at
// the next resend (plain queue behaviour), and grace ends PeerTimeout
// after Start.
func TestCoreBacklogDrainsWhenNoneLive(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, QueueLen: 1, PeerTimeout: time.Second})
	r.c.Start(t0)
	r.c.Key(kA, true, at(ms(10)))
	r.c.Key(kA, false, at(ms(20))) // grace: a receiver is assumed
	if r.c.Pending() != 1 {
		t.Fatalf("during grace: pending %d, want 1", r.c.Pending())
	}
	for now := at(ms(20)); r.c.Pending() > 0 && now.Before(at(2*time.Second)); now = r.c.Next() {
		r.c.Tick(now)
		if r.c.Pending() == 0 && now.Before(at(time.Second)) {
			t.Fatalf("the backlog drained at +%v, inside the grace", now.Sub(t0))
		}
	}
	if r.c.Pending() != 0 {
		t.Fatal("the backlog did not drain after the grace")
	}
}

// The end (DESIGN.md invariant 6): Stop releases every held key, and the
// final state is resent every min(Interval, 50ms) until Linger has passed
// and the live receiver has acked it.
func TestCoreStopReleasesAndLingers(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, Linger: 300 * time.Millisecond})
	r.c.Start(t0)
	r.ack(at(ms(1)), 1, 0, 0, 0)
	r.c.Key(kA, true, at(ms(10)))
	r.c.Stop(at(ms(20)), sender.SourceEnded)
	final := r.c.Final()
	if final == 0 {
		t.Fatal("no final packet after Stop")
	}
	q := r.sent[final-1]
	if len(q.Events) == 0 || q.Events[0].Key != kA || q.Events[0].Kind != eventqueue.Up {
		t.Fatalf("the final packet leads with %v, want KeyA up", q.Events)
	}
	if got := r.c.Next(); !got.Equal(at(ms(70))) {
		t.Fatalf("lingering: Next = +%v, want +70ms", got.Sub(t0))
	}
	r.ack(at(ms(25)), final, 0, q.Events[0].Stamp, 0)
	if end := r.end(); end.Before(at(ms(320))) {
		t.Fatalf("done at +%v, before Linger", end.Sub(t0))
	}
	if r.c.Next() != (time.Time{}) {
		t.Fatal("Next is not zero once Done")
	}
}

// A receiver that never acks the final state holds the end while it is
// owed events (heard within Outage), at most Linger + Outage.
func TestCoreLingerGivesUp(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, Linger: 300 * time.Millisecond, PeerTimeout: time.Second, Outage: 1500 * time.Millisecond})
	r.c.Start(t0)
	r.ack(at(ms(1)), 1, 0, 0, 0)
	r.c.Stop(at(ms(500)), sender.SourceEnded)
	end := r.end()
	// The receiver was last heard at +1ms: owed until +1501ms (reported
	// silent from +1001ms), so the linger ends at its first tick after
	// that, before Linger+Outage (+2300ms).
	if end.Before(at(ms(1501))) || end.After(at(ms(2300))) {
		t.Fatalf("lingering ended at +%v, want between +1501ms (receiver no longer owed) and +2300ms (Linger+Outage)", end.Sub(t0))
	}
}

// Whatever the core is told, in any order, Next is after the time of a
// Tick or zero once Done: the loop around it never spins on a deadline
// that has passed (after a key or an ack, Next may be due at once: the
// loop then calls Tick). And every packet counter is new.
func TestCoreNextIsInTheFuture(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		feedback := rapid.Bool().Draw(rt, "feedback")
		r := newRig(t, sender.CoreConfig{Feedback: feedback, QueueLen: rapid.IntRange(1, 4).Draw(rt, "n"),
			Linger: time.Duration(rapid.IntRange(-1, 400).Draw(rt, "linger")) * time.Millisecond})
		now := t0
		r.c.Start(now)
		stopped := false
		for i := range rapid.IntRange(1, 200).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 300_000).Draw(rt, "dt")) * time.Microsecond)
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1:
				r.c.Key(kA+keys.Key(rapid.IntRange(0, 3).Draw(rt, "key")), rapid.Bool().Draw(rt, "down"), now)
			case 2:
				if feedback && len(r.sent) > 0 {
					r.ack(now, uint64(rapid.IntRange(1, len(r.sent)).Draw(rt, "newest")), rapid.Uint64().Draw(rt, "bits"), r.newestStamp(), 0)
				}
			case 3:
				if !stopped && rapid.IntRange(0, 9).Draw(rt, "stop") == 0 {
					r.c.Stop(now, sender.StopReason(rapid.IntRange(0, 1).Draw(rt, "why")))
					stopped = true
				}
			default:
				if next := r.c.Next(); !next.IsZero() && next.After(now) {
					now = next
				}
				r.c.Tick(now)
				if next := r.c.Next(); !r.c.Done() && !next.After(now) {
					rt.Fatalf("step %d: after Tick, Next +%v is not after now +%v", i, next.Sub(t0), now.Sub(t0))
				}
			}
			if r.c.Done() {
				if !r.c.Next().IsZero() {
					rt.Fatalf("step %d: Done, and Next is not zero", i)
				}
				break
			}
			if next := r.c.Next(); next.IsZero() {
				rt.Fatalf("step %d: not Done, and no deadline: the loop would wait forever", i)
			}
		}
		for i, q := range r.sent {
			if q.Header.Counter != uint64(i+1) {
				rt.Fatalf("packet %d has counter %d", i, q.Header.Counter)
			}
		}
	})
}

// A receiver acks an idle sender about once a second (PROTOCOL.md §9).
// Once a live receiver has been quiet for 60 % of PeerTimeout, the regular
// resend starts a burst, which the receiver acks at once: one lost idle
// ack does not bring it to the edge of not live.
func TestCoreAsksQuietReceiverForAnAck(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, PeerTimeout: 2 * time.Second})
	r.c.Start(t0)
	r.ack(at(ms(40)), 1, 0, 0, 0) // SRTT 40ms: burst gap 10ms
	for now := r.c.Next(); now.Before(at(ms(1200))); now = r.c.Next() {
		r.c.Tick(now)
		if next := r.c.Next(); next.Sub(now) != 100*time.Millisecond {
			t.Fatalf("at +%v, heard %v ago: next call in %v, want the resend in 100ms (no probe yet)", now.Sub(t0), now.Sub(at(ms(40))), next.Sub(now))
		}
	}
	r.c.Tick(at(ms(1300))) // heard 1.26s ago: quiet
	if got := r.c.Next(); !got.Equal(at(ms(1310))) {
		t.Fatalf("quiet receiver: Next = +%v, want a burst step at +1310ms", got.Sub(t0))
	}
	n := len(r.sent)
	r.c.Tick(at(ms(1310)))
	if len(r.sent) != n+1 {
		t.Fatalf("the burst step sent %d packets, want 1", len(r.sent)-n)
	}
	r.ack(at(ms(1330)), uint64(len(r.sent)), 0, 0, 0)
	r.c.Tick(at(ms(1330)))
	if got := r.c.Next(); !got.Equal(at(ms(1400))) {
		t.Fatalf("after the ack: Next = +%v, want the resend at +1400ms", got.Sub(t0))
	}
}

// Outages (PROTOCOL.md §7.1; DESIGN.md invariant 3): a receiver that was
// live and falls silent is reported silent after PeerTimeout, but key events
// wait for it until Outage has passed; only then does the backlog drain as
// the plain queue would.
func TestCoreBacklogWaitsThroughAnOutage(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, QueueLen: 1, PeerTimeout: time.Second, Outage: 3 * time.Second})
	r.c.Start(t0)
	r.ack(at(ms(1)), 1, 0, 0, 0) // then silence
	r.c.Key(kA, true, at(ms(1500)))
	r.c.Key(kA, false, at(ms(1510))) // would push out the unacked key-down
	if r.peer(at(ms(1510))).Live {
		t.Fatal("heard 1.5s ago with a 1s timeout: still live")
	}
	if r.c.Pending() != 1 {
		t.Fatalf("in the outage: pending %d, want 1 (the receiver is owed the key-down)", r.c.Pending())
	}
	for now := r.c.Next(); now.Before(at(ms(3001))); now = r.c.Next() {
		r.c.Tick(now)
		if r.c.Pending() != 1 {
			t.Fatalf("the backlog drained at +%v, inside the 3s outage bound", now.Sub(t0))
		}
	}
	r.c.Tick(at(ms(3100)))
	if r.c.Pending() != 0 {
		t.Fatal("the backlog did not drain after the outage bound")
	}
}

// An interrupted end (a signal, a failed source) waits for a silent
// receiver only PeerTimeout, not Outage: the process must exit soon.
func TestCoreInterruptedEndDoesNotWaitOutAnOutage(t *testing.T) {
	for _, tc := range []struct {
		why      sender.StopReason
		min, max time.Duration
	}{
		// Heard at +1ms, stopped at +500ms, Linger 300ms: owed until +5001ms.
		{sender.SourceEnded, ms(5001), ms(5900)},
		// Not live from +2001ms; Linger+PeerTimeout is +2800ms.
		{sender.Interrupted, ms(2001), ms(2800)},
	} {
		r := newRig(t, sender.CoreConfig{Feedback: true, Linger: 300 * time.Millisecond})
		r.c.Start(t0)
		r.ack(at(ms(1)), 1, 0, 0, 0)
		r.c.Stop(at(ms(500)), tc.why)
		end := r.end()
		if end.Before(at(tc.min)) || end.After(at(tc.max)) {
			t.Errorf("stop reason %d: ended at +%v, want +%v..+%v", tc.why, end.Sub(t0), tc.min, tc.max)
		}
	}
}

// TestCoreLogNamesNoKey: the press the queue drops (it is full of held
// keys) is counted in the log, not named, unless Debug (send --debug):
// the keys of a password typed would be in the log.
func TestCoreLogNamesNoKey(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var logs []string
		r := newRig(t, sender.CoreConfig{QueueLen: 1, Debug: debug,
			Logf: func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) }})
		r.c.Start(t0)
		r.c.Key(kA, true, at(ms(10)))
		r.c.Key(kB, true, at(ms(20))) // the queue holds KeyA down: dropped
		if st := r.c.Stats(); st.Dropped != 1 {
			t.Fatalf("debug %v: %d dropped, want 1", debug, st.Dropped)
		}
		text := strings.Join(logs, "\n")
		switch {
		case !debug && (strings.Contains(text, "KeyB") || !strings.Contains(text, "a press dropped, 1 so far")):
			t.Errorf("without debug the log names the key or no count: %q", text)
		case debug && !strings.Contains(text, "KeyB press dropped"):
			t.Errorf("with debug the log does not name the key: %q", text)
		}
	}
}

// A signal's end whose flush is given up at a late Tick (past Linger +
// PeerTimeout, as a loaded machine's timer may fire) sends the final state
// once and is Done at that Tick: Next is never a deadline already passed
// (PROTOCOL.md §7.1; the loop would spin). Here the end's key-up waits
// (a queue of one holding the unacknowledged key-down: the seed's rule),
// and the Tick comes 100 ms after the end's bound.
func TestLateGiveUpEndsAtOnce(t *testing.T) {
	r := newRig(t, sender.CoreConfig{Feedback: true, QueueLen: 1, Linger: time.Millisecond, PeerTimeout: 2 * time.Second})
	r.c.Start(t0)
	r.c.Tick(t0)
	r.ack(t0, 1, 0, 0, 0)
	r.c.Key(kA, true, t0)
	r.c.Stop(t0, sender.Interrupted)
	if r.c.Done() || r.c.Pending() != 1 {
		t.Fatalf("after the signal: done %v, %d waiting; want the key-up waiting", r.c.Done(), r.c.Pending())
	}
	late := at(ms(2101))
	r.c.Tick(late)
	if next := r.c.Next(); !r.c.Done() && !next.After(late) {
		t.Fatalf("after a late Tick at +%v: Next +%v is not after it, and not Done", late.Sub(t0), next.Sub(t0))
	}
	if st := r.c.Stats(); st.GivenUp != 1 {
		t.Errorf("given up %d events, want the end's key-up", st.GivenUp)
	}
	if last := r.sent[len(r.sent)-1]; len(last.Events) != 1 || last.Events[0].Kind != eventqueue.Up {
		t.Errorf("the last packet carries %v, want the end's key-up (the final state)", last.Events)
	}
}
