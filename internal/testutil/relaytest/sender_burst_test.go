package relaytest_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// keyDownLatencies relays 200 taps over link (both directions), with or
// without feedback, and returns the sorted key-down delivery latencies and
// how many key-downs never arrived.
func keyDownLatencies(t *testing.T, link netsim.Config, feedback bool) (lat []time.Duration, lost int) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fake.Recorder{}
		rl := relaytest.Start(t, relaytest.Config{Net: netsim.NewNetwork(link), PSK: key, Feedback: feedback,
			Receiver: receiver.Config{Injector: rec, Timeout: time.Hour}, Sender: sender.Config{Linger: 300 * time.Millisecond}})
		src := fake.Taps{N: 200, Gap: 150 * time.Millisecond, Hold: 50 * time.Millisecond}.Trace()
		// Typing starts once the handshake is done: it costs the first
		// keys one round trip (PROTOCOL.md §8.3, measured apart by
		// TestHandshakeCostsOneRoundTrip); this test is about bursts.
		src.Steps[0].Wait = 200 * time.Millisecond
		rl.Sender.Run(context.Background(), src)
		time.Sleep(time.Second)
		rl.Stop()
		// The i-th key-down of a key sent is the i-th of it to arrive.
		emitted := map[keys.Key][]time.Time{}
		for i, at := range src.Emitted() {
			if st := src.Steps[i]; st.Down {
				emitted[st.Key] = append(emitted[st.Key], at)
			}
		}
		arrived := map[keys.Key][]time.Time{}
		for _, a := range rec.Events() {
			if a.Down && a.Cause == eventqueue.Sent {
				arrived[a.Key] = append(arrived[a.Key], a.At)
			}
		}
		for c, sent := range emitted {
			got := arrived[c]
			lost += len(sent) - len(got)
			for i := range min(len(sent), len(got)) {
				lat = append(lat, got[i].Sub(sent[i]))
			}
		}
	})
	slices.Sort(lat)
	return lat, lost
}

// TestBurstsCutLatency (PROTOCOL.md §7.1, bursts): with 10 % loss both ways
// and a 20 ms ± 5 ms one-way delay, the p99 key-down latency with feedback
// and bursts is at most the one-way delay + 25 ms; the plain queue (no
// feedback, one-way) is well above it. Virtual time: exact and repeatable.
func TestBurstsCutLatency(t *testing.T) {
	link := netsim.Config{Loss: 0.10, Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 11}
	withBursts, lostB := keyDownLatencies(t, link, true)
	plain, lostP := keyDownLatencies(t, link, false)
	p99 := func(l []time.Duration) time.Duration { return l[len(l)*99/100] }
	t.Logf("key-down latency p50/p99/max: bursts %v/%v/%v (lost %d); plain %v/%v/%v (lost %d)",
		withBursts[len(withBursts)/2], p99(withBursts), withBursts[len(withBursts)-1], lostB,
		plain[len(plain)/2], p99(plain), plain[len(plain)-1], lostP)
	if got := p99(withBursts); got > 20*time.Millisecond+25*time.Millisecond {
		t.Errorf("with bursts p99 %v, want at most 45ms (the 20ms one-way delay + 25ms)", got)
	}
	if p99(plain) <= p99(withBursts)+20*time.Millisecond {
		t.Errorf("plain p99 %v is not clearly above the bursts' %v: the comparison shows nothing", p99(plain), p99(withBursts))
	}
	if lostB != 0 || lostP != 0 {
		t.Errorf("lost key-downs: %d with bursts, %d plain", lostB, lostP)
	}
}

// TestHandshakeCostsOneRoundTrip (PROTOCOL.md §8.2, §8.3): a key typed the
// moment a session starts waits for the receiver's handshake, one round
// trip, and no more: on a 20 ms link it arrives 60 ms after it was typed
// (initiation, response, then the packet), and nothing typed during the
// handshake is lost.
func TestHandshakeCostsOneRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fake.Recorder{}
		rl := relaytest.Start(t, relaytest.Config{Net: netsim.NewNetwork(netsim.Config{Delay: 20 * time.Millisecond}), PSK: key, Feedback: true,
			Receiver: receiver.Config{Injector: rec, Timeout: time.Hour}, Sender: sender.Config{Linger: 300 * time.Millisecond}})
		src := fake.Taps{N: 3, Gap: 10 * time.Millisecond, Hold: 5 * time.Millisecond}.Trace()
		start := time.Now()
		st, _ := rl.Sender.Run(context.Background(), src)
		time.Sleep(time.Second)
		rl.Stop()
		var downs []time.Duration
		for _, a := range rec.Events() {
			if a.Down && a.Cause == eventqueue.Sent {
				downs = append(downs, a.At.Sub(start))
			}
		}
		if len(downs) != 3 {
			t.Fatalf("key-downs arrived at %v, want 3", downs)
		}
		if downs[0] != 60*time.Millisecond {
			t.Errorf("the first key arrived %v after it was typed, want 60ms: the 20ms link's round trip for the handshake, then its one way", downs[0])
		}
		if st.Handshakes != 1 {
			t.Errorf("%d handshakes completed, want 1", st.Handshakes)
		}
	})
}
