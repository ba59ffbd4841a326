package relaytest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// TestLosslessTyping (DESIGN.md invariant 3; PROTOCOL.md §7.1): with
// feedback, typing bursts much longer than the queue, through 0–30 % loss
// both ways, duplication, reordering and outages of up to 4.5 s after the
// receiver was heard (within sender.DefaultOutage, and longer than the
// sender's PeerTimeout and the receiver's timeout), lose no key-down, even
// when the source ends during the outage (the end waits for the receiver):
// every one arrives, in order, unless the backlog overflowed (then the test
// says so and checks only the order).
func TestLosslessTyping(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		loss := float64(rapid.IntRange(0, 30).Draw(rt, "loss%")) / 100
		// The outage starts once the receiver has been heard (a receiver
		// never heard is assumed for a grace: PeerTimeout, or Outage while
		// its handshake is unanswered), outageAt after its first ack.
		outageAt := time.Duration(rapid.IntRange(100, 2000).Draw(rt, "outageAtMs")) * time.Millisecond
		outage := time.Duration(rapid.IntRange(0, 4500).Draw(rt, "outageMs")) * time.Millisecond
		seed := rapid.Uint64().Draw(rt, "seed")
		dup := float64(rapid.IntRange(0, 20).Draw(rt, "dup%")) / 100
		reorder := float64(rapid.IntRange(0, 30).Draw(rt, "reorder%")) / 100
		// Taps: a key-down after a wait, its key-up at once.
		var steps []fake.Step
		var sent []keys.Key
		for range rapid.IntRange(1, 120).Draw(rt, "taps") {
			wait := time.Duration(rapid.IntRange(0, 40).Draw(rt, "waitMs")) * time.Millisecond
			k := keys.Key(keys.KeyA) + keys.Key(rapid.IntRange(0, 25).Draw(rt, "key"))
			steps = append(steps, fake.Step{Wait: wait, Key: k, Down: true}, fake.Step{Key: k})
			sent = append(sent, k)
		}
		var got []keys.Key
		var st sender.Stats
		synctest.Test(t, func(t *testing.T) {
			nw := netsim.NewNetwork(netsim.Config{Loss: loss, Delay: 10 * time.Millisecond, Jitter: 3 * time.Millisecond,
				Duplicate: dup, Reorder: reorder, Seed: seed})
			osk := &fake.OS{}
			rl := relaytest.Start(t, relaytest.Config{Net: nw, PSK: key, Feedback: true,
				Receiver: receiver.Config{Injector: osk, Timeout: 2 * time.Second},
				Sender:   sender.Config{QueueLen: 4, Linger: 500 * time.Millisecond}})
			// The link goes outageAt after the receiver was first heard
			// (an ack: with the handshake, PROTOCOL.md §8.3, a round trip
			// after the first packet, or more under loss), and comes back
			// outage after it went (chained, so the two never fire in the
			// wrong order). Virtual time: the wait for the first ack is
			// checked every millisecond, until Run returns.
			ran := make(chan struct{})
			go func() {
				for len(rl.Sender.Peers()) == 0 {
					select {
					case <-ran:
						return
					case <-time.After(time.Millisecond):
					}
				}
				time.AfterFunc(outageAt, func() {
					nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
					nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, true)
					time.AfterFunc(outage, func() {
						nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, false)
						nw.Partition(relaytest.RecvAddr, relaytest.SendAddr, false)
					})
				})
			}()
			st, _ = rl.Sender.Run(context.Background(), &fake.Trace{Steps: steps})
			close(ran)
			time.Sleep(6 * time.Second)
			rl.Stop()
			got = osk.SentDowns()
		})
		switch {
		case st.Handshakes == 0:
			// No handshake within the end's wait (Outage): its
			// initiations back off to one a second, about eight tries,
			// all lost one way or the other (under 0.2 % at 24 % loss
			// both ways). No key went anywhere (fail closed), and send
			// says undelivered.
			rt.Logf("no handshake completed")
		case st.Overflow > 0:
			rt.Logf("backlog overflowed %d times", st.Overflow)
		case !slices.Equal(got, sent):
			rt.Fatalf("key-downs arrived %v\nsent %v\n(stats %v, held %d)", show(got), show(sent), st, st.Held)
		}
		if st.Handshakes == 0 && len(got) != 0 {
			rt.Fatalf("no handshake, yet %v arrived", show(got))
		}
	})
}

func show(cs []keys.Key) string { return fmt.Sprint(cs) }
