package relaytest_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// TestRekeyDuringLossyTypingLosesNothing (PROTOCOL.md §8.3, handshake's
// RekeyAfterTime): typing for three and a half RekeyAfterTime over a link
// losing 30 % of the packets both ways, the sender rekeys at least three
// times while sealing under the old keypair, and every key-down arrives,
// once, in order (lossless typing, the sender's backlog).
func TestRekeyDuringLossyTypingLosesNothing(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		var got, sent []keys.Key
		var st sender.Stats
		synctest.Test(t, func(t *testing.T) {
			nw := netsim.NewNetwork(netsim.Config{Loss: 0.3, Delay: 10 * time.Millisecond, Jitter: 3 * time.Millisecond, Seed: seed})
			osk := &fake.OS{}
			rl := relaytest.Start(t, relaytest.Config{Net: nw, PSK: key, Feedback: true,
				Receiver: receiver.Config{Injector: osk, Timeout: 2 * time.Second},
				Sender:   sender.Config{QueueLen: 4, Linger: 500 * time.Millisecond}})
			// A tap every 700 ms (a burst of 3 every 20 ms now and then),
			// from 1 s on, for 3.5 RekeyAfterTime.
			var steps []fake.Step
			wait := time.Second
			for i := 0; time.Duration(i)*700*time.Millisecond < handshake.RekeyAfterTime*7/2; i++ {
				k := keys.Key(keys.KeyA) + keys.Key(i%26)
				steps = append(steps, fake.Step{Wait: wait, Key: k, Down: true}, fake.Step{Key: k})
				sent = append(sent, k)
				wait = 700 * time.Millisecond
				if i%10 == 0 {
					wait = 20 * time.Millisecond
				}
			}
			st, _ = rl.Sender.Run(context.Background(), &fake.Trace{Steps: steps})
			time.Sleep(6 * time.Second)
			rl.Stop()
			got = osk.SentDowns()
		})
		t.Logf("seed %d: %d key-downs sent, %d arrived, %d handshakes, %d initiations", seed, len(sent), len(got), st.Handshakes, st.Initiations)
		if st.Handshakes < 4 {
			t.Errorf("seed %d: %d handshakes over 3.5 RekeyAfterTime, want at least 4 (the first and three rekeys)", seed, st.Handshakes)
		}
		if st.Overflow > 0 {
			t.Errorf("seed %d: the backlog overflowed %d times", seed, st.Overflow)
		}
		if !slices.Equal(got, sent) {
			t.Errorf("seed %d: %d key-downs arrived, %d sent; first difference at %d (stats %v)", seed, len(got), len(sent), firstDiff(got, sent), st)
		}
	}
}

func firstDiff(a, b []keys.Key) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
