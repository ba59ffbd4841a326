package relaytest_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

var key = []byte("feedback-test-key-0123456789abcd")

// relay runs a sender with feedback and a receiver on nw, plays src, and
// returns the sender (for Peers) after Run; mk is given it before.
func relay(t *testing.T, nw *netsim.Network, src sender.Source, mk func(*sender.Sender)) *sender.Sender {
	t.Helper()
	rl := relaytest.Start(t, relaytest.Config{Net: nw, PSK: key, Feedback: true,
		Receiver: receiver.Config{Timeout: time.Hour}, Sender: sender.Config{Linger: -1}})
	if mk != nil {
		mk(rl.Sender)
	}
	if _, err := rl.Sender.Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	rl.Stop()
	return rl.Sender
}

func script(t *testing.T, text string) *capture.Script {
	t.Helper()
	s, err := capture.ParseScript("t", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRTTEstimate: on a link of 20 ms each way, every RTT sample is 40 ms
// (the receiver's hold time is subtracted), so the RFC 6298 estimate is
// exactly 40 ms and its variation decays.
func TestRTTEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: 20 * time.Millisecond})
		s := relay(t, nw, script(t, "pace 30ms\ntype \"round trip time\"\nsleep 2s"), nil)
		ps := s.Peers()
		if len(ps) != 1 {
			t.Fatalf("peers %+v", ps)
		}
		p := ps[0]
		if p.SRTT != 40*time.Millisecond || p.RTTVar > time.Millisecond || p.Loss != 0 || p.Lost != 0 || p.Settled < 50 {
			t.Errorf("peer %+v: want SRTT 40ms, RTTVar ~0, no loss", p)
		}
		// Both ends share the bubble's clock and the path is symmetric:
		// the offset from the acks' wall clock (PROTOCOL.md §9) is 0.
		if !p.ClockKnown || p.ClockOffset != 0 {
			t.Errorf("clock offset %v (known %v), want 0", p.ClockOffset, p.ClockKnown)
		}
	})
}

// TestReorderingIsNotLoss (PROTOCOL.md §9): on a link that loses nothing but
// jitters by 10 ms (10 ± 10 ms each way, and 30 % of the datagrams held back
// a further 20 ms, netsim's model of the overtaking such jitter causes),
// fast typing (bursts send every few ms) is reported with under 1 % loss: a
// packet's fate is read from the ack bits only once a packet sent a reorder
// time after it has been acked (peers.go), not by the counter margin alone.
func TestReorderingIsNotLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: 10 * time.Millisecond, Jitter: 10 * time.Millisecond, Reorder: 0.3, Seed: 3})
		s := relay(t, nw, script(t, "pace 20ms\ntype \"the quick brown fox jumps over the lazy dog, again and again and again\"\nsleep 3s"), nil)
		p := s.Peers()[0]
		t.Logf("settled %d, lost %d, smoothed %.4f", p.Settled, p.Lost, p.Loss)
		if p.Settled < 100 || p.Loss >= 0.01 || p.Lost > p.Settled/100 {
			t.Errorf("settled %d, lost %d, smoothed %.3f: want under 1 %% on a link that loses nothing", p.Settled, p.Lost, p.Loss)
		}
	})
}

// TestLossEstimate: 25 % loss toward the receiver (a perfect way back):
// the packets the acks settle show 25 % ± 3 % lost over ~2,000 packets, and
// the smoothed estimate is in the same neighbourhood.
func TestLossEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{})
		nw.SetLink(relaytest.SendAddr, relaytest.RecvAddr, netsim.Config{Loss: 0.25, Seed: 5})
		s := relay(t, nw, script(t, "sleep 200s"), nil)
		p := s.Peers()[0]
		got := float64(p.Lost) / float64(p.Settled)
		if p.Settled < 1900 || math.Abs(got-0.25) > 0.03 || math.Abs(p.Loss-0.25) > 0.2 {
			t.Errorf("settled %d, lost %d (%.3f), smoothed %.3f; want 0.25", p.Settled, p.Lost, got, p.Loss)
		}
	})
}

// TestLiveness: a receiver whose acks stop is not live once PeerTimeout (2 s
// by default) has passed since the last, and live again within a resend or
// so of the link coming back (the sender asks a quiet receiver for an ack,
// Core.quiet). Idle, the receiver acks once a second (PROTOCOL.md §9): the
// last ack before this outage is the first packet's, at 0.
func TestLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond})
		var s *sender.Sender
		live := func() bool { return len(s.Peers()) == 1 && s.Peers()[0].Live }
		var trace []bool
		// The source looks at the sender (and cuts the link) as it plays:
		// half a second in, then 1.4 s, 1.6 s and 1.9 s later.
		wait := script(t, "sleep 500ms")
		src := fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
			if err := wait.Play(ctx, emit); err != nil {
				return err
			}
			synctest.Wait()
			trace = append(trace, live())
			nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, true)
			time.Sleep(1400 * time.Millisecond)
			synctest.Wait()
			trace = append(trace, live())
			time.Sleep(200 * time.Millisecond)
			synctest.Wait()
			trace = append(trace, live())
			nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, false)
			time.Sleep(300 * time.Millisecond)
			synctest.Wait()
			trace = append(trace, live())
			return nil
		})
		relay(t, nw, src, func(x *sender.Sender) { s = x })
		if got := trace; len(got) != 4 || !got[0] || !got[1] || got[2] || !got[3] {
			t.Errorf("live: %v, want [true true false true] (before, 1.9s and 2.1s after the last ack, 300ms after the outage)", got)
		}
	})
}
