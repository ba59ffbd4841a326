package relaytest_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// taps is a script typing a tap every gap, n times.
func taps(n int, gap time.Duration) []fake.Step {
	var steps []fake.Step
	for i := range n {
		k := keys.Key(keys.KeyA) + keys.Key(i%26)
		steps = append(steps, fake.Step{Wait: gap, Key: k, Down: true}, fake.Step{Key: k})
	}
	return steps
}

// sentAt is the count of datagrams the sender sent to the receiver at d
// from now (-1 before then), for the test's goroutine to read.
func sentAt(nw *netsim.Network, d time.Duration) *atomic.Int64 {
	n := new(atomic.Int64)
	n.Store(-1)
	time.AfterFunc(d, func() { n.Store(nw.Stats(relaytest.SendAddr, relaytest.RecvAddr).Sent) })
	return n
}

// TestSilentReceiverIsPaced (PROTOCOL.md §9, pacing to a silent receiver): a
// script typing 20 taps a second, or idle, whose receiver goes away 2 s in.
// Unpaced, it would get every event and every burst while the backlog waits,
// at full speed; paced, its bursts back off once it is a round trip late,
// and once it is silent (unheard for sender.SilentAfter) it gets at most one
// datagram per sender.SilentGap (per MaxBurstGap in the last second of
// --outage while keys wait for it), plus the initiations that look for a
// restarted receiver (backing off to one a second).
func TestSilentReceiverIsPaced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		insecure bool
		steps    []fake.Step
		max      int64 // datagrams to the receiver in the 10 s after it went
	}{
		// The first second: the events and the bursts for the backlog,
		// which back off once the receiver is a round trip late (about
		// 130); then SilentGap (about 36 in 9 s), MaxBurstGap in the last
		// second of --outage, while the backlog waits for it (about 40),
		// and the initiations that look for a restarted receiver (about
		// 10).
		{"typing, handshaken", false, taps(280, 50*time.Millisecond), 250},
		{"typing, insecure", true, taps(280, 50*time.Millisecond), 250},
		// Idle: asked for an ack at 60 % of PeerTimeout (a burst, about
		// 110 packets before it backs off), silent a second after.
		{"idle, handshaken", false, append(taps(1, 0), fake.Step{Wait: 12 * time.Second, Key: keys.Key(keys.KeyB), Down: true}, fake.Step{Key: keys.Key(keys.KeyB)}), 170},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Delay: time.Millisecond})
				cfg := relaytest.Config{Net: nw, Feedback: true, Insecure: tc.insecure,
					Receiver: receiver.Config{Timeout: time.Second}}
				if !tc.insecure {
					cfg.PSK = key
				}
				rl := relaytest.Start(t, cfg)
				time.AfterFunc(2*time.Second, func() {
					nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
					nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, true)
				})
				before, second, after := sentAt(nw, 2*time.Second), sentAt(nw, 4*time.Second), sentAt(nw, 12*time.Second)
				st, _ := rl.Sender.Run(context.Background(), &fake.Trace{Steps: tc.steps})
				rl.Stop()
				if after.Load() < 0 {
					t.Fatalf("Run returned before the 10 s were over (%v)", st)
				}
				n, late := after.Load()-before.Load(), after.Load()-second.Load()
				t.Logf("%d datagrams in the 10 s after the receiver went, %d of them in the last 8 s (%d before it; %v, %d paced)", n, late, before.Load(), st, st.Paced)
				if n > tc.max {
					t.Errorf("%d datagrams to a silent receiver in 10 s, want at most %d", n, tc.max)
				}
				// From 2 s on it is silent: SilentGap and the initiations
				// (one a second), with room for the resends' phase, and
				// one second at MaxBurstGap before the backlog is given up.
				if want := int64(8*(time.Second/sender.SilentGap+2) + time.Second/sender.MaxBurstGap); late > want {
					t.Errorf("%d datagrams to a silent receiver in the last 8 s, want at most %d", late, want)
				}
			})
		})
	}
}

// TestPacingEndsWhenReceiverAnswers (PROTOCOL.md §9, pacing to a silent
// receiver): the receiver of a script typing 20 taps a second is cut off
// for 3 s (within --outage); paced meanwhile, the sender is back at full
// speed once it answers (every event a packet at once, in the second
// after), and every key-down typed meanwhile arrives, in order.
func TestPacingEndsWhenReceiverAnswers(t *testing.T) {
	for _, insecure := range []bool{false, true} {
		t.Run(map[bool]string{false: "handshaken", true: "insecure"}[insecure], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Delay: time.Millisecond})
				osk := &fake.OS{}
				cfg := relaytest.Config{Net: nw, Feedback: true, Insecure: insecure,
					Receiver: receiver.Config{Injector: osk, Timeout: time.Second}}
				if !insecure {
					cfg.PSK = key
				}
				rl := relaytest.Start(t, cfg)
				cut := func(down bool) {
					nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, down)
					nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, down)
				}
				time.AfterFunc(2*time.Second, func() { cut(true) })
				paced, back, after := sentAt(nw, 4900*time.Millisecond), sentAt(nw, 5*time.Second), sentAt(nw, 6*time.Second)
				time.AfterFunc(5*time.Second, func() { cut(false) })
				steps := taps(160, 50*time.Millisecond)
				st, err := rl.Sender.Run(context.Background(), &fake.Trace{Steps: steps})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Second)
				rl.Stop()
				if n := back.Load() - paced.Load(); n > 2 {
					t.Errorf("%d datagrams in the 100 ms before the receiver came back, want it paced (at most 2)", n)
				}
				// 20 taps a second and the backlog they wait behind: two
				// events a tap, each sent at once.
				if n := after.Load() - back.Load(); n < 40 {
					t.Errorf("%d datagrams in the second after the receiver came back, want full speed (at least 40)", n)
				}
				var want []keys.Key
				for i := 0; i < len(steps); i += 2 {
					want = append(want, steps[i].Key)
				}
				if got := osk.SentDowns(); !slices.Equal(got, want) {
					t.Errorf("typed %d key-downs, want the %d sent, in order (%v)", len(got), len(want), st)
				}
				t.Logf("%v, %d paced; %d datagrams in the second after it came back", st, st.Paced, after.Load()-back.Load())
			})
		})
	}
}

// TestSilentReceiverStillGetsAHeldKey (PROTOCOL.md §9, pacing; DESIGN.md
// invariant 5): a key held 8 s while the receiver's acks are all lost. The
// sender cannot tell that receiver from a stopped one, but the regular
// resend still goes to it every Interval, so its liveness keeps the key
// held: it is pressed once, and released once, at the end.
func TestSilentReceiverStillGetsAHeldKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Delay: time.Millisecond})
		osk := &fake.OS{}
		rl := relaytest.Start(t, relaytest.Config{Net: nw, Feedback: true, PSK: key,
			Receiver: receiver.Config{Injector: osk, Timeout: time.Second}})
		time.AfterFunc(time.Second, func() { nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, true) })
		from, to := sentAt(nw, 3*time.Second), sentAt(nw, 9*time.Second)
		a := keys.Key(keys.KeyA)
		rl.Sender.Run(context.Background(), &fake.Trace{Steps: []fake.Step{
			{Wait: 500 * time.Millisecond, Key: a, Down: true}, {Wait: 9 * time.Second, Key: a}}})
		time.Sleep(2 * time.Second)
		rl.Stop()
		if n := to.Load() - from.Load(); n < 6*9 {
			t.Errorf("%d datagrams in 6 s to a silent receiver while a key is held, want the regular resend (at least 54)", n)
		}
		if got := osk.SentDowns(); !slices.Equal(got, []keys.Key{a}) {
			t.Errorf("key-downs %v, want KeyA once (held through)", got)
		}
		if p := osk.Problems(); len(p) > 0 {
			t.Errorf("unbalanced: %v", p)
		}
	})
}
