package sender_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// initiationTimes runs a Core whose receiver never answers for span, a
// key tapped at each of taps (from the start), and returns when each
// initiation went, from the start.
func initiationTimes(t *testing.T, taps []time.Duration, span time.Duration) []time.Duration {
	t.Helper()
	var got []time.Duration
	var now time.Time
	rxID, txID := newID(t), newID(t)
	c, err := sender.NewCore(sender.CoreConfig{Feedback: true, Identity: txID, Dests: []sender.Dest{{Addr: rxAddr, PeerKey: rxID.Public()}},
		Output: func(b []byte, _ int) {
			if h, err := handshake.ParseHeader(b); err == nil && h.Type == handshake.TypeInitiation {
				got = append(got, now.Sub(t0))
			}
		}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	now = t0
	c.Start(now)
	ticked := false
	for i := 0; ; {
		next := c.Next()
		if ticked && !next.IsZero() && !next.After(now) {
			t.Fatalf("after Tick at %v, Next is %v", now.Sub(t0), next.Sub(t0))
		}
		if i < len(taps) && (next.IsZero() || next.After(t0.Add(taps[i]))) {
			now = t0.Add(taps[i])
			k := keys.Key(keys.KeyA) + keys.Key(i%26)
			c.Key(k, true, now)
			c.Key(k, false, now)
			i++
			ticked = false
			continue
		}
		if next.IsZero() || !next.Before(t0.Add(span)) {
			return got
		}
		now = next
		c.Tick(now)
		ticked = true
	}
}

// every is the times from from, every gap, up to (not including) to.
func every(from, gap, to time.Duration) []time.Duration {
	var out []time.Duration
	for d := from; d < to; d += gap {
		out = append(out, d)
	}
	return out
}

// TestInitiationsHurryWhileKeysWait (PROTOCOL.md §7.1, §8.2): before a
// destination's first keypair, initiations back off from 100 ms to 1 s
// while nothing typed waits (an idle start, an absent receiver); once a
// key is typed, one goes with the key's packet and then one every 40 ms
// (twice handshake.InitiationInterval) for a second, after which the
// backoff resumes where it was: a receiver that answered none of 25 is
// taken for absent and gets a datagram a second at most.
func TestInitiationsHurryWhileKeysWait(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name string
		taps []time.Duration
		want []time.Duration
	}{
		{"idle start: the backoff", nil,
			append([]time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1500 * ms}, every(2500*ms, time.Second, 10*time.Second)...)},
		{"a key at 200 ms: every 40 ms for a second, then the backoff from 400 ms",
			[]time.Duration{200 * ms},
			slices.Concat([]time.Duration{0, 100 * ms}, every(200*ms, 40*ms, 1200*ms),
				[]time.Duration{1560 * ms, 1960 * ms, 2760 * ms}, every(3760*ms, time.Second, 10*time.Second))},
		{"keys typed on: still one window",
			every(200*ms, 300*ms, 5*time.Second),
			slices.Concat([]time.Duration{0, 100 * ms}, every(200*ms, 40*ms, 1200*ms),
				[]time.Duration{1560 * ms, 1960 * ms, 2760 * ms}, every(3760*ms, time.Second, 10*time.Second))},
		{"a key after the backoff reached a second",
			[]time.Duration{4 * time.Second},
			slices.Concat([]time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1500 * ms, 2500 * ms, 3500 * ms},
				every(4*time.Second, 40*ms, 5*time.Second), every(5960*ms, time.Second, 10*time.Second))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := initiationTimes(t, tt.taps, 10*time.Second)
			if !slices.Equal(got, tt.want) {
				t.Errorf("initiations at\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// TestHurriedRetryTakesAnEarlierResponse (PROTOCOL.md §8.2): retries
// every 40 ms, a key typed at 200 ms after the first initiation was lost.
// On a round trip of 100 ms the response to an initiation two retries
// back completes the handshake (the initiator keeps the last
// handshake.MaxNext pending), and the key reaches the receiver, which
// still holds that keypair, a round trip and a half after it was typed.
// On one of 300 ms, longer than MaxNext retries, the first responses
// come too late; they widen the retries to outlast the round trip, and
// the responses already on their way complete the handshake, instead of
// the backoff after the hurried second.
func TestHurriedRetryTakesAnEarlierResponse(t *testing.T) {
	for _, tt := range []struct {
		oneWay time.Duration
		by     time.Duration // the key-down typed by then, from the start
	}{
		{50 * time.Millisecond, 350 * time.Millisecond},
		{150 * time.Millisecond, 900 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("round trip %v", 2*tt.oneWay), func(t *testing.T) {
			typedAt := hurriedHandshake(t, tt.oneWay)
			if d := typedAt.Sub(t0); d > tt.by {
				t.Errorf("the key-down reached the receiver at +%v, want by +%v", d, tt.by)
			}
		})
	}
}

// hurriedHandshake runs a sender and a receiver over a link of oneWay
// each way, losing the first initiation, with a key typed at 200 ms, and
// returns when the receiver typed its key-down.
func hurriedHandshake(t *testing.T, oneWay time.Duration) time.Time {
	psk := make([]byte, wire.KeyLen)
	rig := newPairedRig(t, psk)
	type flight struct {
		at time.Time
		b  []byte
	}
	var toRx, toTx []flight
	var now, typedAt time.Time
	c, err := sender.NewCore(sender.CoreConfig{PSK: psk, Feedback: true, Identity: rig.txID, Dests: []sender.Dest{{Addr: rxAddr, PeerKey: rig.rxID.Public()}},
		Output: func(b []byte, _ int) { toRx = append(toRx, flight{now.Add(oneWay), append([]byte(nil), b...)}) }}, t0)
	if err != nil {
		t.Fatal(err)
	}
	now = t0
	c.Start(now)
	toRx = nil // the first initiation is lost
	now = t0.Add(200 * time.Millisecond)
	c.Key(keys.Key(keys.KeyQ), true, now)
	for now.Before(t0.Add(3 * time.Second)) {
		next := c.Next()
		for _, f := range [][]flight{toRx, toTx} {
			if len(f) > 0 && (next.IsZero() || f[0].at.Before(next)) {
				next = f[0].at
			}
		}
		now = next
		c.Tick(now)
		for len(toRx) > 0 && !toRx[0].at.After(now) {
			rig.r.Handle(toRx[0].b, rig.from, now)
			toRx = toRx[1:]
			if typedAt.IsZero() && len(rig.rec.Events()) > 0 {
				typedAt = now
			}
			for _, a := range rig.conn.out {
				toTx = append(toTx, flight{now.Add(oneWay), a})
			}
			rig.conn.out = nil
		}
		for len(toTx) > 0 && !toTx[0].at.After(now) {
			c.Ack(toTx[0].b, rxAddr, now)
			toTx = toTx[1:]
		}
	}
	if st := c.Stats(); st.Handshakes != 1 {
		t.Fatalf("%d handshakes, want 1 (stats %v)", st.Handshakes, st)
	}
	got := rig.rec.Events()
	if len(got) == 0 || got[0].Key != keys.Key(keys.KeyQ) || !got[0].Down {
		t.Fatalf("the receiver typed %v, want the key-down of Q first", got)
	}
	return typedAt
}
