package relaytest_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// holdSeeds are the netsim seeds each loss is tried with.
const holdSeeds = 30

// releasedEarly are seeds past holdSeeds whose holds at 90 % loss a loss
// estimate alone releases early in the session: one-way (false) after a
// run of luck in the first packets (PROTOCOL.md §7.2, the prior), with
// feedback (true) unless the handshake's lost initiations are counted.
var releasedEarly = map[bool][]uint64{false: {91, 127, 276}, true: {184}}

// TestHoldThroughHeavyLoss (DESIGN.md invariant 5; PROTOCOL.md §7.2): a key
// held for 20 s while 70, 80 or 90 % of the packets are lost (both ways;
// one-way and with feedback, recv's 1 s --timeout and send's 100 ms
// --interval) is pressed once and never released until the sender releases
// it. The timeout alone would release and press it again between the packets
// that get through, and a loss estimate without the prior of heavy loss
// would release it early in some sessions (releasedEarly, tried here too;
// BENCHMARKS.md, Holds through heavy loss). With feedback, a session whose
// handshake never got through (no handshake in the whole session) must type
// nothing (PROTOCOL.md §8.4), and has no hold to check; since the handshake
// backs off to one initiation a second, it runs on a clean link here
// (lossyAfterHandshake), the loss starting before the key goes down.
func TestHoldThroughHeavyLoss(t *testing.T) {
	for _, loss := range []float64{0.7, 0.8, 0.9} {
		for _, feedback := range []bool{false, true} {
			t.Run(fmt.Sprintf("loss=%.0f%%,feedback=%v", 100*loss, feedback), func(t *testing.T) {
				seeds := make([]uint64, 0, holdSeeds+len(releasedEarly[feedback]))
				for seed := uint64(1); seed <= holdSeeds; seed++ {
					seeds = append(seeds, seed)
				}
				if loss == 0.9 {
					seeds = append(seeds, releasedEarly[feedback]...)
				}
				unshaken := 0
				for _, seed := range seeds {
					got, released, handshakes := holdThroughLoss(t, loss, seed, feedback)
					if feedback && handshakes == 0 {
						// The handshake never got through (1 % of
						// round trips at 90 % loss both ways): a
						// unicast destination gets no key without
						// it (PROTOCOL.md §8.4), so nothing is typed
						// and there is no hold to check.
						unshaken++
						if len(got) != 0 {
							t.Errorf("seed %d: no handshake completed, yet the receiver typed %s", seed, fake.Arrivals(got))
						}
						continue
					}
					if downs := got.downs(); downs != 1 || released > 0 {
						t.Errorf("seed %d: pressed %d times, released %d times during the hold, want once and never: %s", seed, downs, released, fake.Arrivals(got))
					}
				}
				if unshaken > len(seeds)/5 {
					t.Errorf("%d of %d sessions never handshook: too few holds checked", unshaken, len(seeds))
				}
			})
		}
	}
}

type arrivals fake.Arrivals

func (as arrivals) downs() int {
	n := 0
	for _, a := range as {
		if a.Down {
			n++
		}
	}
	return n
}

// holdThroughLoss relays KeyA pressed 0.5 s into a session and released
// 20 s later over a link losing loss of the packets both ways, and
// returns what the receiver injected and how many times it released the
// key (timeout) before the sender did.
func holdThroughLoss(t *testing.T, loss float64, seed uint64, feedback bool) (got arrivals, released, handshakes int) {
	synctest.Test(t, func(t *testing.T) {
		nw, logf := lossyAfterHandshake(netsim.Config{Loss: loss, Delay: 5 * time.Millisecond, Seed: seed}, feedback)
		rec := &fake.Recorder{}
		rl := relaytest.Start(t, relaytest.Config{Net: nw, PSK: relayKey, Feedback: feedback,
			Receiver: receiver.Config{Injector: rec, Timeout: time.Second, Logf: logf}})
		src := &fake.Trace{Steps: []fake.Step{
			{Wait: 500 * time.Millisecond, Key: keys.Key(keys.KeyA), Down: true},
			{Wait: 20 * time.Second, Key: keys.Key(keys.KeyA)},
		}}
		st, err := rl.Sender.Run(context.Background(), src)
		if err != nil {
			t.Error(err)
		}
		handshakes = st.Handshakes
		if err := rl.Stop(); err != nil {
			t.Error(err)
		}
		up := src.Emitted()[1]
		got = arrivals(rec.Events())
		for _, a := range got {
			if !a.Down && a.Cause == eventqueue.Timeout && a.At.Before(up) {
				released++
			}
		}
	})
	return got, released, handshakes
}

// TestKilledSenderReleasedAfterItsAllowance (DESIGN.md invariant 5): a
// sender killed while it holds a key has it released its allowance after its
// last packet arrived, as the receiver's status shows it: exactly recv's
// --timeout on a lossless link, longer at 80 % loss but at most MaxAllowance
// timeouts (BENCHMARKS.md gives the medians make measure finds).
func TestKilledSenderReleasedAfterItsAllowance(t *testing.T) {
	const timeout = time.Second
	for _, tc := range []struct {
		loss     float64
		min, max time.Duration
	}{
		{0, timeout, timeout},
		{0.8, 2 * timeout, receiver.MaxAllowance * timeout},
	} {
		t.Run(fmt.Sprintf("loss=%.0f%%", 100*tc.loss), func(t *testing.T) {
			for seed := uint64(1); seed <= holdSeeds; seed++ {
				synctest.Test(t, func(t *testing.T) {
					nw, rconn, rec, rl, src := heldOverLoss(t, tc.loss, seed, true, timeout)
					src.AtEnd = func() {
						time.Sleep(10 * time.Second)
						// Killed: nothing more reaches the receiver once
						// what is in flight (5 ms) has arrived.
						nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
						time.Sleep(5 * time.Millisecond)
						synctest.Wait()
						_, last := rconn.get()
						st := rl.Receiver.Status()
						if len(st) != 1 || !st[0].Live || len(st[0].Held) != 1 {
							// Not Fatalf: this runs in the source's
							// goroutine, and the sender must see it end.
							t.Errorf("seed %d: the receiver's status before the timeout: %+v", seed, st)
							nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, false)
							return
						}
						a := st[0].Allowance
						if a < tc.min || a > tc.max {
							t.Errorf("seed %d: allowance %v (loss %.0f %%), want %v..%v", seed, a, 100*st[0].Loss, tc.min, tc.max)
						}
						rec.Take()
						time.Sleep(time.Until(last.Add(a - time.Nanosecond)))
						synctest.Wait()
						if got := rec.Take().String(); got != "" {
							t.Errorf("seed %d: before the allowance %v: injected %q", seed, a, got)
						}
						time.Sleep(time.Nanosecond)
						synctest.Wait()
						if got := rec.Take().String(); got != "KeyA up(timeout)" {
							t.Errorf("seed %d: at the allowance %v after the last packet: injected %q, want KeyA released", seed, a, got)
						}
						nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, false)
					}
					if _, err := rl.Sender.Run(context.Background(), src); err != nil {
						t.Error(err)
					}
					if err := rl.Stop(); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// TestHandshakeBackoffIsNoLoss (PROTOCOL.md §7.2, §8.3): a sender's
// initiations back off (100 ms doubling), so most counters before its first
// queue packet went to no one: their absence is no loss. A session whose
// sixth initiation was the first answered, every one heard, starts with no
// loss counted, and its allowance is no longer than that of one whose first
// was answered (each initiation heard fades the prior of heavy loss as a
// packet does); counting the gaps as loss would give a clean loopback
// session a 10 s allowance, and a killed sender's keys would stay down that
// long.
func TestHandshakeBackoffIsNoLoss(t *testing.T) {
	const timeout = time.Second
	run := func(answer int) receiver.SessionStatus {
		conn := &hsConn{}
		r, err := receiver.New(receiver.Config{Conn: conn, Injector: &fake.Recorder{}, PSK: hsKey, Timeout: timeout, Identity: rxID, Peer: pairedTx})
		if err != nil {
			t.Fatal(err)
		}
		var out [][]byte
		c, err := sender.NewCore(sender.CoreConfig{PSK: hsKey, Feedback: true, Identity: txID, Dests: []sender.Dest{{Addr: hsRxAddr, PeerKey: rxID.Public()}},
			Output: func(b []byte, _ int) { out = append(out, append([]byte(nil), b...)) }}, t0)
		if err != nil {
			t.Fatal(err)
		}
		from := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))
		inits := 0
		deliver := func(now time.Time) {
			for len(out) > 0 {
				b := out[0]
				out = out[1:]
				h, err := handshake.ParseHeader(b)
				if err != nil {
					t.Fatal(err)
				}
				if h.Type == handshake.TypeInitiation {
					inits++
				}
				if h.Type == handshake.TypeQueue && r.Stats().Accepted > 0 {
					continue
				}
				r.Handle(b, from, now)
				for _, a := range conn.sent {
					if inits >= answer {
						c.Ack(a.b, hsRxAddr, now)
					}
				}
				conn.sent = nil
			}
		}
		c.Start(t0)
		c.Key(keys.Key(keys.KeyA), true, t0)
		deliver(t0)
		for r.Stats().Accepted == 0 {
			now := c.Next()
			if now.Sub(t0) > 10*time.Second {
				t.Fatalf("no packet applied after %v: %+v", now.Sub(t0), r.Stats())
			}
			c.Tick(now)
			deliver(now)
		}
		st := r.Status()
		if len(st) != 1 || len(st[0].Held) != 1 {
			t.Fatalf("status after the first queue packet: %+v", st)
		}
		return st[0]
	}
	first, sixth := run(1), run(6)
	if sixth.Loss != 0 {
		t.Errorf("answered at the sixth initiation, all heard: loss %.0f %% counted, want none", 100*sixth.Loss)
	}
	if sixth.Allowance > first.Allowance {
		t.Errorf("allowance %v after six initiations, %v after one: the backoff counted as loss", sixth.Allowance, first.Allowance)
	}
}

// TestMeasureHolds measures the figures BENCHMARKS.md gives for the
// allowance (PROTOCOL.md §7.2), over many more seeds than CI runs: it runs
// only with KEYRELAY_MEASURE=1 (`make measure`, about a minute), so `go
// test ./...` stays quick. It asserts that no 20 s hold is released at 70, 80 or 90 %
// loss over 1,000 seeds, one-way or with feedback, and that a killed
// sender's key is released at least --timeout and at most MaxAllowance
// timeouts after its last packet; it logs the medians of those releases.
func TestMeasureHolds(t *testing.T) {
	if os.Getenv("KEYRELAY_MEASURE") == "" {
		t.Skip("set KEYRELAY_MEASURE=1 (make measure) to measure the allowance's figures in BENCHMARKS.md")
	}
	const holds, kills = 1000, 300
	for _, loss := range []float64{0.7, 0.8, 0.9} {
		for _, feedback := range []bool{false, true} {
			released := 0
			for seed := uint64(1); seed <= holds; seed++ {
				if _, n, _ := holdThroughLoss(t, loss, seed, feedback); n > 0 {
					released++
					t.Errorf("loss %.0f %%, feedback %v, seed %d: the hold was released %d times", 100*loss, feedback, seed, n)
				}
			}
			t.Logf("20 s holds at %.0f %% loss, feedback %v: %d of %d released", 100*loss, feedback, released, holds)
		}
	}
	for _, tc := range []struct {
		at   time.Duration // after the key-down
		loss float64
	}{
		{time.Second, 0.3}, {time.Second, 0.5}, {3 * time.Second, 0.3}, {3 * time.Second, 0.5}, {3 * time.Second, 0.8},
		{10 * time.Second, 0}, {10 * time.Second, 0.8},
	} {
		for _, feedback := range []bool{false, true} {
			var after []time.Duration
			notHeld := 0
			for seed := uint64(1); seed <= kills; seed++ {
				a, held := killedRelease(t, tc.loss, seed, feedback, tc.at)
				if !held {
					notHeld++ // the key-down had not got through yet
					continue
				}
				if a < time.Second || a > receiver.MaxAllowance*time.Second {
					t.Errorf("killed %v after the key-down, loss %.0f %%, feedback %v, seed %d: released %v after the last packet, want 1s..%v",
						tc.at, 100*tc.loss, feedback, seed, a, receiver.MaxAllowance*time.Second)
				}
				after = append(after, a)
			}
			slices.Sort(after)
			t.Logf("sender killed %v after the key-down at %.0f %% loss, feedback %v: released after %v (median of %d; %d did not hold the key yet), at most %v",
				tc.at, 100*tc.loss, feedback, after[len(after)/2], len(after), notHeld, after[len(after)-1])
		}
	}
}

// killedRelease relays KeyA pressed 0.5 s into a session over a link
// losing loss of the packets both ways, cuts the link at after the
// key-down (the sender killed), and returns whether the receiver held the
// key then and how long after the last packet arrived it released it (−1:
// never within 15 s).
func killedRelease(t *testing.T, loss float64, seed uint64, feedback bool, at time.Duration) (after time.Duration, held bool) {
	after = -1
	synctest.Test(t, func(t *testing.T) {
		nw, rconn, rec, rl, src := heldOverLoss(t, loss, seed, feedback, time.Second)
		src.AtEnd = func() {
			time.Sleep(at)
			nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
			time.Sleep(5 * time.Millisecond) // what is in flight arrives
			synctest.Wait()
			st := rl.Receiver.Status()
			held = len(st) == 1 && len(st[0].Held) == 1
			rec.Take()
			time.Sleep(15 * time.Second)
			_, last := rconn.get()
			for _, a := range rec.Take() {
				if !a.Down {
					after = a.At.Sub(last)
				}
			}
			nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, false)
		}
		if _, err := rl.Sender.Run(context.Background(), src); err != nil {
			t.Error(err)
		}
		if err := rl.Stop(); err != nil {
			t.Error(err)
		}
	})
	return after, held
}

// heldOverLoss starts a relay (in a synctest bubble) over a link losing
// loss of the packets both ways, the receiver's reads counted, and a trace
// that presses KeyA 0.5 s in and holds it: its AtEnd is the caller's.
func heldOverLoss(t *testing.T, loss float64, seed uint64, feedback bool, timeout time.Duration) (*netsim.Network, *counterConn, *fake.Recorder, *relaytest.Relay, *fake.Trace) {
	t.Helper()
	nw, logf := lossyAfterHandshake(netsim.Config{Loss: loss, Delay: 5 * time.Millisecond, Seed: seed}, feedback)
	rc, err := nw.Listen(relaytest.RecvAddr)
	if err != nil {
		t.Fatal(err)
	}
	rconn := &counterConn{PacketConn: rc}
	rec := &fake.Recorder{}
	rl := relaytest.Start(t, relaytest.Config{Net: nw, RecvConn: rconn, PSK: relayKey, Feedback: feedback,
		Receiver: receiver.Config{Injector: rec, Timeout: timeout, Logf: logf}})
	src := &fake.Trace{Steps: []fake.Step{{Wait: 500 * time.Millisecond, Key: keys.Key(keys.KeyA), Down: true}}}
	return nw, rconn, rec, rl, src
}

// lossyAfterHandshake is a network impaired as cfg says from the
// session's first queue packet on, lossless before when the relay is
// handshaken (feedback), so that the handshake completes before the key
// at 500 ms: its initiations back off to one a second, and at 80 % loss
// both ways only 4 % of round trips get through (25 s on average). The
// loss starts at once after the handshake, as a session lossy from its
// start would see it (PROTOCOL.md §7.2's prior of heavy loss applies from
// its first lost packet): a lossless stretch before it would make the
// allowance exactly --timeout when the loss begins, which is the rule for a
// session that has lost nothing, not what is measured here. The holds are
// under test here; the handshake over loss is
// TestRelayWithRestartsAndReplays's and handshake's
// TestHandshakeOverBadNetwork's. It returns the network and the
// receiver's Logf, which turns the loss on when the receiver logs the new
// session (at its first queue packet); nil without feedback.
func lossyAfterHandshake(cfg netsim.Config, feedback bool) (*netsim.Network, func(string, ...any)) {
	if !feedback {
		return netsim.NewNetwork(cfg), nil
	}
	clean := cfg
	clean.Loss = 0
	nw := netsim.NewNetwork(clean)
	var once sync.Once
	return nw, func(format string, _ ...any) {
		if strings.HasPrefix(format, "new session") {
			once.Do(func() {
				nw.SetLink(relaytest.SendAddr, relaytest.RecvAddr, cfg)
				nw.SetLink(relaytest.RecvAddr, relaytest.SendAddr, cfg)
			})
		}
	}
}
