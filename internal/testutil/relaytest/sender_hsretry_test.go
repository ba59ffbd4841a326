package relaytest_test

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

// restartRun types a tap every 100 ms from +100 ms to +12 s into a
// receiver that is killed at +2 s and back (a new instance) at +2.3 s,
// over a link losing loss each way, and returns when the initiations
// went and how long after each instance came up it typed its first key
// event.
func restartRun(t *testing.T, seed uint64, loss float64) (inits []time.Duration, firstKey, afterRestart time.Duration) {
	t.Helper()
	s := newDeliverySim(t, seed, loss, loss, sender.CoreConfig{})
	s.onSend = func(b []byte) {
		if h, err := handshake.ParseHeader(b); err == nil && h.Type == handshake.TypeInitiation {
			inits = append(inits, s.now.Sub(t0))
		}
	}
	s.c.Start(t0)
	killAt, upAt := t0.Add(2*time.Second), t0.Add(2300*time.Millisecond)
	killed, up := false, false
	firstKey, afterRestart = -1, -1
	taps := distinctTaps(40)
	for i, when := 0, t0.Add(100*time.Millisecond); when.Before(t0.Add(12 * time.Second)); i, when = i+1, when.Add(100*time.Millisecond) {
		if !killed && !when.Before(killAt) {
			s.runUntil(killAt)
			s.kill()
			killed = true
		}
		if !up && !when.Before(upAt) {
			s.runUntil(upAt)
			s.start()
			up = true
		}
		s.runUntil(when)
		s.c.Key(taps[i%len(taps)], true, s.now)
		s.runUntil(when.Add(30 * time.Millisecond))
		s.c.Key(taps[i%len(taps)], false, s.now)
		if firstKey < 0 && len(s.inst[0].sent(len(s.inst[0].rec.Events()))) > 0 {
			firstKey = s.now.Sub(t0.Add(100 * time.Millisecond))
		}
		if afterRestart < 0 && len(s.inst) == 2 && len(s.inst[1].sent(len(s.inst[1].rec.Events()))) > 0 {
			afterRestart = s.now.Sub(upAt)
		}
	}
	return inits, firstKey, afterRestart
}

// TestRehandshakeHurriesAsTheFirst (PROTOCOL.md §7.1, §8.2, §8.4): keys
// waiting for the handshake a restarted receiver must answer hurry it as
// keys waiting for the first one do: once the receiver has been silent
// for restartAfter (1.5 s) with keys unacknowledged, an initiation goes
// every 40 ms for a second, where the backoff (100 ms doubling to 1 s)
// sent 4. Over a lossless link the first of them is answered; at 43, 60
// and 75 % loss each way the keys typed after the restart reach the new instance
// about as soon after it came up as the first keys reached the first.
func TestRehandshakeHurriesAsTheFirst(t *testing.T) {
	inits, _, after := restartRun(t, 1, 0)
	// The last ack came at about +2 s (the last tap before the kill);
	// silence from then for restartAfter, and the receiver is back.
	var re []time.Duration
	for _, at := range inits {
		if at > 2*time.Second {
			re = append(re, at)
		}
	}
	if len(re) == 0 || after < 0 {
		t.Fatalf("no initiation after the kill (%v), or the new instance typed nothing (%v)", inits, after)
	}
	if re[0] > 3700*time.Millisecond || after > 2*time.Second {
		t.Errorf("first initiation after the kill at +%v, first key at the new instance %v after it came up; want by +3.7s (restartAfter and a tap) and within 2s", re[0], after)
	}

	// A receiver that stays away: count the retries in the second from
	// the first that looks for it.
	s := newDeliverySim(t, 1, 0, 0, sender.CoreConfig{})
	var away []time.Duration
	s.onSend = func(b []byte) {
		if h, err := handshake.ParseHeader(b); err == nil && h.Type == handshake.TypeInitiation && s.now.After(t0.Add(2*time.Second)) {
			away = append(away, s.now.Sub(t0))
		}
	}
	s.c.Start(t0)
	for i, when := 0, t0.Add(100*time.Millisecond); when.Before(t0.Add(8 * time.Second)); i, when = i+1, when.Add(100*time.Millisecond) {
		if i == 19 {
			s.kill()
		}
		s.runUntil(when)
		s.c.Key(keys.Key(keys.KeyA)+keys.Key(i%20), true, s.now)
		s.c.Key(keys.Key(keys.KeyA)+keys.Key(i%20), false, s.now)
	}
	s.runUntil(t0.Add(8 * time.Second))
	if len(away) == 0 {
		t.Fatal("no initiation looked for the killed receiver")
	}
	inWindow := 0
	for _, at := range away {
		if at < away[0]+time.Second {
			inWindow++
		}
	}
	t.Logf("initiations after the kill: %v", away)
	if inWindow != 25 {
		t.Errorf("%d initiations in the second from +%v, want 25 (one every 40 ms, as before the first keypair)", inWindow, away[0])
	}

	// Loss: how long the keys stall after each instance comes up. An
	// instance that typed nothing by the end of the run (+12 s; the first
	// one: by the kill at +2 s) counts as a stall of 10 s.
	const never = 10 * time.Second
	for _, loss := range []float64{0.43, 0.6, 0.75} {
		var first, restarted []time.Duration
		stuck := 0
		for seed := range uint64(30) {
			_, f, a := restartRun(t, seed, loss)
			if f < 0 {
				f = never
			}
			if a < 0 {
				a = never
				stuck++
			}
			first, restarted = append(first, f), append(restarted, a)
		}
		slices.Sort(first)
		slices.Sort(restarted)
		med := func(d []time.Duration) time.Duration { return d[len(d)/2] }
		t.Logf("%.0f %% loss each way, 30 seeds: the first key typed %v (median) after the start; after the restart %v (median), %d of 30 typed nothing in the 9.7 s after it", 100*loss, med(first), med(restarted), stuck)
		// The restarted receiver is looked for only after restartAfter of
		// silence: 1.2 s after it came up, plus what the first handshake
		// takes.
		if med(restarted) > med(first)+2*time.Second {
			t.Errorf("%.0f %% loss: after a restart the keys stalled %v (median), the first keys %v: the re-handshake is not hurried as the first is", 100*loss, med(restarted), med(first))
		}
	}
}
