package receiver

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/wire"
)

// TestWhatIsNews (PROTOCOL.md §9): after a run of idle resends, which
// packets are acked at once and which wait for IdleAckInterval. Idle: the
// next counter, nothing new applied, sent at the sender's idle pace (not
// sooner than BusyGap after the previous one).
func TestWhatIsNews(t *testing.T) {
	queue := []eventqueue.Event{up(kA, 2), dn(kA, 1)}
	withB := append([]eventqueue.Event{dn(kB, 3)}, queue...)
	locked := func(counter, clock uint64) []byte {
		q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 1, Counter: counter}, Clock: clock,
			Locks: keys.LocksKnown | keys.LockCaps, Events: append(queue, eventqueue.Event{}, eventqueue.Event{})}
		b, err := q.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		after time.Duration // since the last ack, at 1,000 ms
		pkt   func(counter, clock uint64) []byte
		dc    uint64 // counter step (1: the next)
		dt    uint64 // sender clock step, ms
		acked bool
	}{
		{"idle resend", 200 * time.Millisecond, nil, 1, 100, false},
		{"idle resend, last ack a second old", IdleAckInterval, nil, 1, 100, true},
		{"new event", 200 * time.Millisecond, func(c, k uint64) []byte { return packet(t, 1, c, k, withB...) }, 1, 100, true},
		{"a packet lost before it", 200 * time.Millisecond, nil, 2, 200, true},
		{"reordered older packet", 200 * time.Millisecond, nil, 0, 100, false},
		{"a burst resend", 200 * time.Millisecond, nil, 1, 10, true},
		{"the final state lingering", 200 * time.Millisecond, nil, 1, 50, true},
		{"just below the idle pace", 200 * time.Millisecond, nil, 1, uint64(BusyGap/time.Millisecond) - 1, true},
		{"at the idle pace", 200 * time.Millisecond, nil, 1, uint64(BusyGap / time.Millisecond), false},
		{"locks change", 200 * time.Millisecond, locked, 1, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &ackConn{}
			r, err := New(Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}, Timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// Counters 1..11 every 100 ms from t0: the first acked as new,
			// then idle until the one at 1,000 ms, acked a second later.
			for i := range uint64(11) {
				r.Handle(packet(t, 1, i+1, 100*i, queue...), addr1, t0.Add(time.Duration(i)*100*time.Millisecond))
			}
			if len(conn.sent) != 2 {
				t.Fatalf("%d acks in the first second of idle resends, want 2 (the first, and a second later)", len(conn.sent))
			}
			counter, clock := uint64(11)+tc.dc, 1000+tc.dt
			if tc.dc == 0 {
				// A late packet the window has not seen: as if 9 had been
				// overtaken by 10 and 11.
				counter = 9
				r.sessions[1].window = replayWithout(9, 11)
			}
			pkt := tc.pkt
			if pkt == nil {
				pkt = func(c, k uint64) []byte { return packet(t, 1, c, k, queue...) }
			}
			r.Handle(pkt(counter, clock), addr1, t0.Add(time.Second+tc.after))
			if got := len(conn.sent) == 3; got != tc.acked {
				t.Errorf("acked at once: %v, want %v", got, tc.acked)
			}
		})
	}
}

// TestAckFields (PROTOCOL.md §9): what a session's acks say. The missing
// bits name the packets not received among the 64 before newest (after a
// gap of more than 64, all of them); the wall clock is given in the
// session's first ack and then in an ack only when the last that gave it is
// WallInterval old, 0 (not given) otherwise, so while typing one ack a
// second carries it and idle acks (one a second) all do; each session
// counts its own.
func TestAckFields(t *testing.T) {
	conn := &ackConn{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	queue := []eventqueue.Event{dn(kA, 1)}
	all := ^uint64(0)
	check := func(step string, at time.Duration, wantWall bool, wantMissing uint64) {
		t.Helper()
		var a wire.Ack
		if err := wire.ParseAck(conn.sent[len(conn.sent)-1], &a); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var wall uint64
		if wantWall {
			wall = uint64(t0.Add(at).UnixMilli())
		}
		if a.Wall != wall || a.Missing != wantMissing {
			t.Errorf("%s: ack of %d with wall %d, missing %#x; want wall %d, missing %#x", step, a.Newest, a.Wall, a.Missing, wall, wantMissing)
		}
	}
	for _, tc := range []struct {
		name    string
		at      time.Duration
		counter uint64
		clock   uint64 // the sender's, ms
		acked   bool
		wall    bool
		missing uint64
	}{
		{"the first packet: the first ack gives the wall clock", 0, 1, 0, true, true, 0},
		{"a burst resend 10 ms later", 10 * time.Millisecond, 2, 10, true, false, 0},
		{"packet 3 lost", 20 * time.Millisecond, 4, 20, true, false, 0b1},
		{"a gap of more than 64", 999 * time.Millisecond, 100, 999, true, false, all},
		{"a second after the first ack's wall clock", time.Second, 101, 1000, true, true, all &^ 0b1},
		{"10 ms later", 1010 * time.Millisecond, 102, 1010, true, false, all &^ 0b11},
		{"idle, a second after the last ack", 2010 * time.Millisecond, 103, 1110, true, true, all &^ 0b111},
		{"idle, 100 ms later: not acked", 2110 * time.Millisecond, 104, 1210, false, false, 0},
		{"idle, a second after the last ack again", 3010 * time.Millisecond, 105, 1310, true, true, all &^ 0b11111},
	} {
		n := len(conn.sent)
		r.Handle(packet(t, 1, tc.counter, tc.clock, queue...), addr1, t0.Add(tc.at))
		if got := len(conn.sent) > n; got != tc.acked {
			t.Fatalf("%s: acked %v, want %v", tc.name, got, tc.acked)
		}
		if tc.acked {
			check(tc.name, tc.at, tc.wall, tc.missing)
		}
	}
	// Another session, 10 ms after session 1's last wall clock: its own
	// first ack gives it.
	r.Handle(packet(t, 2, 1, 0, queue...), addr2, t0.Add(3020*time.Millisecond))
	check("another session's first ack", 3020*time.Millisecond, true, 0)
}

// replayWithout is a replay window that accepted 1..newest except hole.
func replayWithout(hole, newest uint64) (f replay.Filter) {
	for c := uint64(1); c <= newest; c++ {
		if c != hole {
			f.Accept(c)
		}
	}
	return f
}

// ackLog runs a receiver over netsim and records when its acks reach the
// sender's address.
type ackLog struct {
	sc      net.PacketConn
	to      net.Addr
	counter uint64
	clock   uint64
	mu      sync.Mutex
	at      []time.Time
}

// listenPair listens on nw at a receiver's address and a sender's.
func listenPair(t *testing.T, nw *netsim.Network) (recv, send net.PacketConn) {
	t.Helper()
	recv, err := nw.Listen("10.0.0.2:7575")
	if err != nil {
		t.Fatal(err)
	}
	send, err = nw.Listen("10.0.0.1:40000")
	if err != nil {
		t.Fatal(err)
	}
	return recv, send
}

func runAckLog(t *testing.T, timer ...Timer) (*ackLog, func()) {
	nw := netsim.NewNetwork(netsim.Config{})
	rc, sc := listenPair(t, nw)
	cfg := Config{Insecure: true, Conn: rc, Injector: &fake.Recorder{}}
	if len(timer) > 0 {
		cfg.Timer = timer[0]
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	l := &ackLog{sc: sc, to: rc.LocalAddr()}
	wg.Go(func() {
		buf := make([]byte, wire.MaxPacketSize)
		for {
			if _, _, err := sc.ReadFrom(buf); err != nil {
				return
			}
			l.mu.Lock()
			l.at = append(l.at, time.Now())
			l.mu.Unlock()
		}
	})
	return l, func() { cancel(); sc.Close(); wg.Wait() }
}

// send sends the next packet, dt after the previous by the sender's clock.
func (l *ackLog) send(t *testing.T, dt time.Duration, events ...eventqueue.Event) {
	l.counter++
	l.clock += uint64(dt / time.Millisecond)
	b := packet(t, 1, l.counter, l.clock, events...)
	if _, err := l.sc.WriteTo(b, l.to); err != nil {
		t.Fatal(err)
	}
}

func (l *ackLog) acks() []time.Time {
	synctest.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// TestIdleAcksOncePerSecond (PROTOCOL.md §9; BENCHMARKS.md, The sender's
// targets: at most one ack a second to an idle sender): over 10 s of a
// sender resending its queue every 100 ms with nothing new, at most one ack
// per second (11 counting the first packet's); the sender still hears within
// its 2 s --timeout. A new event is still acked at once, at most
// MinAckInterval after the ack before, and so is a burst.
func TestIdleAcksOncePerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, stop := runAckLog(t)
		defer stop()
		queue := []eventqueue.Event{up(kA, 2), dn(kA, 1)}
		start := time.Now()
		for i := range 101 {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			l.send(t, 100*time.Millisecond, queue...)
		}
		acks := l.acks()
		if len(acks) > 11 {
			t.Errorf("%d acks over 10 s of idle resends, want at most 11", len(acks))
		}
		prev := start
		for _, a := range acks {
			if a.Sub(prev) >= 2*time.Second {
				t.Errorf("no ack for %v (the sender's --timeout is 2 s)", a.Sub(prev))
			}
			prev = a
		}
		// An event 2 ms after the resend just acked: acked at once
		// (TestTypedIsAckedAtOnce), within MinAckInterval in any case.
		time.Sleep(2 * time.Millisecond)
		sent := time.Now()
		l.send(t, 2*time.Millisecond, append([]eventqueue.Event{dn(kB, 10_050)}, queue...)...)
		time.Sleep(MinAckInterval)
		if got := l.acks(); len(got) != len(acks)+1 || got[len(got)-1].Sub(sent) > MinAckInterval {
			t.Errorf("the new event: %d acks (had %d), want one within %v", len(got), len(acks), MinAckInterval)
		}
		// The burst that follows an event (every 10 ms, the same queue) is
		// acked packet by packet: each ack can end it.
		n := len(l.acks())
		for range 5 {
			time.Sleep(10 * time.Millisecond)
			l.send(t, 10*time.Millisecond, append([]eventqueue.Event{dn(kB, 10_050)}, queue...)...)
		}
		if got := len(l.acks()) - n; got != 5 {
			t.Errorf("%d acks for 5 burst resends, want 5", got)
		}
	})
}

// pokeTimer is a Timer that fires as a wake.Timer does (a value dropped
// when C is full) and that a test can fire early, as a value left in C from
// before a Reset would.
type pokeTimer struct {
	c chan time.Time
	t *time.Timer
}

func newPokeTimer() *pokeTimer {
	p := &pokeTimer{c: make(chan time.Time, 1)}
	p.t = time.AfterFunc(time.Hour, func() {
		select {
		case p.c <- time.Now():
		default:
		}
	})
	p.t.Stop()
	return p
}

func (p *pokeTimer) C() <-chan time.Time   { return p.c }
func (p *pokeTimer) Reset(d time.Duration) { p.t.Reset(d) }
func (p *pokeTimer) Stop()                 { p.t.Stop() }
func (p *pokeTimer) Close() error          { p.t.Stop(); return nil }

// TestEarlyTimerFiringIsNone (PROTOCOL.md §9): Run's timer firing before
// the deadline it was armed for, as a value left from before a Reset does,
// runs nothing early (Expire runs only what is due): an ack held back for
// MinAckInterval goes at its time, not at the early firing.
func TestEarlyTimerFiringIsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newPokeTimer()
		l, stop := runAckLog(t, tm)
		defer stop()
		l.send(t, 100*time.Millisecond, dn(kA, 1))
		first := l.acks()
		if len(first) != 1 {
			t.Fatalf("%d acks of the first packet, want 1", len(first))
		}
		// A burst's re-send half an ack interval later (news that types
		// nothing): its ack is held back until MinAckInterval after the
		// first.
		time.Sleep(MinAckInterval / 2)
		l.send(t, time.Millisecond, dn(kA, 1))
		synctest.Wait()
		tm.c <- time.Now() // fired early
		if got := l.acks(); len(got) != 1 {
			t.Fatalf("an early firing sent the held-back ack %v after the first, before MinAckInterval (%v)", got[len(got)-1].Sub(first[0]), MinAckInterval)
		}
		time.Sleep(MinAckInterval)
		if got := l.acks(); len(got) != 2 || got[1].Sub(first[0]) != MinAckInterval {
			t.Errorf("acks at %v, want the second MinAckInterval after the first (%v)", got, first[0].Add(MinAckInterval))
		}
	})
}

// TestTypedIsAckedAtOnce (PROTOCOL.md §9, "at most one ack per 1 ms"): a
// packet that types something is acked at once, even within
// MinAckInterval of the session's last ack; a packet whose news types
// nothing (a burst's re-send) within it is still held back until
// MinAckInterval after that ack. A tap's key-up comes within a
// millisecond of its key-down's ack on a LAN: held back, its ack let the
// sender's burst re-send it (every sender.MinBurstGap) and drew a second
// ack.
func TestTypedIsAckedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []eventqueue.Event // the second packet's queue
		want   time.Duration      // its ack, after it was sent
	}{
		{"the key-up of a tap", []eventqueue.Event{up(kA, 2), dn(kA, 1)}, 0},
		{"a second key down", []eventqueue.Event{dn(kB, 2), dn(kA, 1)}, 0},
		{"a burst's re-send", []eventqueue.Event{dn(kA, 1)}, MinAckInterval - 400*time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, stop := runAckLog(t)
				defer stop()
				l.send(t, 100*time.Millisecond, dn(kA, 1))
				if got := l.acks(); len(got) != 1 {
					t.Fatalf("%d acks of the key-down, want 1", len(got))
				}
				time.Sleep(400 * time.Microsecond)
				sent := time.Now()
				l.send(t, time.Millisecond, tc.events...)
				time.Sleep(MinAckInterval)
				got := l.acks()
				if len(got) != 2 {
					t.Fatalf("%d acks, want 2", len(got))
				}
				if d := got[1].Sub(sent); d != tc.want {
					t.Errorf("the second packet acked %v after it was sent, want %v", d, tc.want)
				}
			})
		})
	}
}
