package receiver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/netsim"
)

// held is the session's one packet in these tests: KeyA held.
func held(t *testing.T, counter uint64, clock time.Duration) []byte {
	return packet(t, 1, counter, uint64(clock/time.Millisecond), dn(kA, 1))
}

// expireUntil calls Expire at each deadline Next names before until, as
// Run would.
func expireUntil(r *Receiver, until time.Time) {
	for at := r.Next(); !at.IsZero() && at.Before(until); at = r.Next() {
		r.Expire(at)
	}
}

// statusAllowance is the allowance Status shows for session 1.
func statusAllowance(t *testing.T, r *Receiver) time.Duration {
	t.Helper()
	for _, s := range r.Status() {
		if s.ID == 1 {
			return s.Allowance
		}
	}
	t.Fatal("session 1 not in Status")
	return 0
}

// TestAllowanceFollowsLoss (DESIGN.md invariant 5; PROTOCOL.md §7.2): a
// session's allowance, the silence after which its keys are released, is
// exactly the timeout while no packet is lost (reordered ones are not lost),
// grows with the share of counters that never arrive, and is at most
// MaxAllowance timeouts. Next names it, Expire keeps it to the nanosecond,
// and Status shows it.
func TestAllowanceFollowsLoss(t *testing.T) {
	const T = time.Second
	for _, tc := range []struct {
		name     string
		counters []uint64 // in the order they arrive, one every 100 ms
		min, max time.Duration
	}{
		{"no loss", sequence(200, 1), T, T},
		{"reordered, none lost", swapPairs(sequence(200, 1)), T, T},
		{"one packet in 20 lost", sequence(200, 20.0/19), T + T/16, 2 * T},
		{"80 % lost", sequence(200, 5), 5 * T, 7 * T},
		{"90 % lost", sequence(200, 10), MaxAllowance * T, MaxAllowance * T},
		{"99 % lost", sequence(200, 100), MaxAllowance * T, MaxAllowance * T},
		{"1,000 packets lost in a row, then none for 10 s", append(sequence(10, 1), sequence(100, 1, 1000)...), T, T},
		// A session's first packets: the estimate starts from a prior of
		// heavy loss once it loses any. Both are runs of luck at 90 %
		// loss: without the prior the estimate after them (2.75 s after
		// 8 counters, 4.19 s after 24) is shorter than the gap that
		// follows them in a 20 s hold (34 and 44 counters).
		{"first packets, none lost", sequence(3, 1), T, T},
		{"4 of the first 8 arrive", []uint64{1, 5, 6, 8}, 5 * T, MaxAllowance * T},
		{"7 of the first 24 arrive", []uint64{2, 10, 17, 18, 21, 23, 24}, 5 * T, MaxAllowance * T},
		{"1 of the first 20 lost", append(sequence(10, 1), sequence(9, 1, 12)...), T, 2 * T},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rec := newReceiver(t)
			r.since = t0
			var now time.Time
			for i, c := range tc.counters {
				now = t0.Add(time.Duration(i) * 100 * time.Millisecond)
				expireUntil(r, now)
				r.Handle(held(t, c, now.Sub(t0)), addr1, now)
			}
			s := r.sessions[1]
			a := r.allowance(s)
			if a < tc.min || a > tc.max {
				t.Errorf("allowance %v, want %v..%v", a, tc.min, tc.max)
			}
			if got := statusAllowance(t, r); got != a {
				t.Errorf("Status shows an allowance of %v, the session has %v", got, a)
			}
			if got := rec.Take().String(); got != "KeyA down" {
				t.Fatalf("while packets came: injected %q, want KeyA pressed once and never released", got)
			}
			last := s.lastHeard // the newest packet's arrival
			if next := r.Next(); !next.Equal(last.Add(a)) {
				t.Errorf("Next is %v after the newest packet, want the allowance %v", next.Sub(last), a)
			}
			r.Expire(last.Add(a - time.Nanosecond))
			if got := rec.Take().String(); got != "" {
				t.Errorf("a nanosecond before the allowance: injected %q", got)
			}
			r.Expire(last.Add(a))
			if got := rec.Take().String(); got != "KeyA up(timeout)" {
				t.Errorf("at the allowance: injected %q, want KeyA released", got)
			}
		})
	}
}

// sequence is n counters starting after from (1 if not given), each every
// counters past the one before (a fraction spreads the gaps).
func sequence(n int, every float64, from ...uint64) []uint64 {
	start := uint64(1)
	if len(from) > 0 {
		start = from[0]
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = start + uint64(float64(i)*every)
	}
	return out
}

// swapPairs swaps every other pair of counters: 1 2 4 3 5 6 8 7 ...
func swapPairs(cs []uint64) []uint64 {
	for i := 2; i+1 < len(cs); i += 4 {
		cs[i], cs[i+1] = cs[i+1], cs[i]
	}
	return cs
}

// TestAllowanceCountsWhatThisReceiverMissed: a session's first packet with
// counter c says c−1 packets were lost only if this receiver was listening
// when its sender started (its clock says when); a receiver that started
// later (restarted under a running sender) never heard them for another
// reason, and keeps the timeout.
func TestAllowanceCountsWhatThisReceiverMissed(t *testing.T) {
	const T = time.Second
	for _, tc := range []struct {
		name  string
		since time.Time // Run started listening (zero: Handle called alone)
		clock time.Duration
		want  time.Duration
	}{
		{"listening before the sender started", t0.Add(-time.Hour), 3 * time.Second, MaxAllowance * T},
		{"started after the sender", t0.Add(-time.Second), 3 * time.Second, T},
		{"Handle alone", time.Time{}, 3 * time.Second, T},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReceiver(t)
			r.since = tc.since
			r.Handle(held(t, 30, tc.clock), addr1, t0) // 29 counters before it
			if got := r.allowance(r.sessions[1]); got != tc.want {
				t.Errorf("allowance %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAllowanceBounded (DESIGN.md invariant 5), for any pattern of loss,
// reordering and timeout: the allowance is between the timeout and
// MaxAllowance timeouts, Status shows it as it is, a session ends (and its
// held key is released) exactly when it has been silent that long, and
// when every packet arrives in the end (reordered or not) it is the
// timeout.
func TestAllowanceBounded(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		timeout := time.Duration(rapid.IntRange(10, 3000).Draw(rt, "timeoutMs")) * time.Millisecond
		loss := rapid.IntRange(0, 100).Draw(rt, "loss%")
		// Sent every 100 ms; each packet lost, or delivered up to 4
		// sending slots late (reordered).
		type arrival struct {
			slot    int
			counter uint64
		}
		var arrivals []arrival
		for c := range rapid.IntRange(1, 300).Draw(rt, "packets") {
			if rapid.IntRange(0, 99).Draw(rt, "fate") < loss {
				continue
			}
			arrivals = append(arrivals, arrival{c + rapid.IntRange(0, 4).Draw(rt, "late"), uint64(c + 1)})
		}
		slices.SortStableFunc(arrivals, func(a, b arrival) int { return a.slot - b.slot })

		rec := &fake.Recorder{}
		r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: rec, Timeout: timeout})
		if err != nil {
			rt.Fatal(err)
		}
		r.since = t0
		// expire calls Expire at each deadline before until, as Run
		// would, and checks that the session ends at its allowance.
		expire := func(until time.Time) {
			for at := r.Next(); !at.IsZero() && at.Before(until); at = r.Next() {
				s := r.sessions[1]
				live, silence, al := s.live, at.Sub(s.lastHeard), r.allowance(s)
				r.Expire(at)
				if live && !s.live && silence != al {
					rt.Fatalf("ended after %v of silence, its allowance %v", silence, al)
				}
				if live && silence >= al && (s.live || len(r.Held()) > 0) {
					rt.Fatalf("silent for %v, its allowance %v: still live, holding %v", silence, al, r.Held())
				}
			}
		}
		var now time.Time
		for _, a := range arrivals {
			now = t0.Add(time.Duration(a.slot) * 100 * time.Millisecond)
			expire(now)
			r.Handle(held(t, a.counter, time.Duration(a.counter-1)*100*time.Millisecond), addr1, now)
			s := r.sessions[1]
			al := r.allowance(s)
			if al < timeout || al > MaxAllowance*timeout {
				rt.Fatalf("counter %d: allowance %v, timeout %v", a.counter, al, timeout)
			}
			if st := statusAllowance(t, r); st != al {
				rt.Fatalf("counter %d: Status shows %v, the session has %v", a.counter, st, al)
			}
		}
		if len(arrivals) == 0 {
			return
		}
		if al := r.allowance(r.sessions[1]); loss == 0 && al != timeout {
			rt.Fatalf("every packet arrived, yet the allowance is %v, not the timeout %v", al, timeout)
		}
		expire(now.Add(MaxAllowance*timeout + time.Nanosecond))
		if len(r.Held()) > 0 {
			rt.Fatalf("%v after the last packet: still holding %v", MaxAllowance*timeout, r.Held())
		}
	})
}

// TestHeavyLossSaidOncePerMagnitude: a sender holding a key through 80 %
// loss (netsim) for a minute: the key is never released; the log says
// when the allowance grows to a new magnitude and when it falls back, not
// at every packet; once the loss ends the allowance is the timeout again,
// and a sender that then falls silent has its key released after exactly
// the timeout.
func TestHeavyLossSaidOncePerMagnitude(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{Loss: 0.8, Seed: 1})
		rc, sc := listenPair(t, nw)
		rec := &fake.Recorder{}
		var mu sync.Mutex
		var said []string
		r, err := New(Config{Insecure: true, Conn: rc, Injector: rec, Timeout: time.Second, NoAcks: true,
			Logf: func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				if l := fmt.Sprintf(f, a...); strings.Contains(l, "loses") {
					said = append(said, l)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		start := time.Now()
		counter := uint64(0)
		send := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				counter++
				sc.WriteTo(held(t, counter, time.Since(start)), rc.LocalAddr())
			}
		}
		send(time.Minute)
		synctest.Wait()
		if got := rec.Take().String(); got != "KeyA down" {
			t.Errorf("a minute at 80 %% loss: injected %q, want KeyA pressed once and never released", got)
		}
		mu.Lock()
		lossy := len(said)
		mu.Unlock()
		if lossy == 0 || lossy > 6 {
			t.Errorf("a minute at 80 %% loss: said %d times:\n%s", lossy, strings.Join(said, "\n"))
		}
		nw.SetLink("10.0.0.1:40000", "10.0.0.2:7575", netsim.Config{})
		send(5 * time.Second)
		synctest.Wait()
		if a := statusAllowance(t, r); a != time.Second {
			t.Errorf("after 5 s without loss: allowance %v, want the timeout", a)
		}
		mu.Lock()
		if len(said) == lossy || len(said) > lossy+2 || !strings.Contains(said[len(said)-1], "its keys are released after 1s of silence") {
			t.Errorf("the loss ended: said\n%s", strings.Join(said[lossy:], "\n"))
		}
		mu.Unlock()
		last := time.Now().Add(-100 * time.Millisecond) // the last packet's
		time.Sleep(time.Second - 100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if got := rec.Take().String(); got != "" {
			t.Errorf("%v after the last packet: injected %q", time.Since(last), got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := rec.Take().String(); got != "KeyA up(timeout)" {
			t.Errorf("%v after the last packet: injected %q, want KeyA released", time.Since(last), got)
		}
		cancel()
		<-done
		t.Logf("said:\n%s", strings.Join(said, "\n"))
	})
}
