package relaytest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
)

// trustRx is a receiver whose peers file the test edits: paired says
// whether the sender (txID) is in it, and changed that it was edited
// since the receiver last asked (Config.Recheck).
type trustRx struct {
	*rx
	paired, changed bool
	asked           []time.Time
	logs            []string
}

func newTrustRx(t *testing.T) *trustRx {
	t.Helper()
	x := &trustRx{rx: &rx{conn: &hsConn{}, rec: &fake.Recorder{}}, paired: true}
	r, err := receiver.New(receiver.Config{Conn: x.conn, Injector: x.rec, PSK: hsKey, Timeout: time.Hour, Identity: rxID,
		Peer: func(k [32]byte) (string, bool) { return "tx", x.paired && k == txID.Public() },
		Recheck: func(now time.Time) bool {
			x.asked = append(x.asked, now)
			c := x.changed
			x.changed = false
			return c
		},
		Logf: func(f string, a ...any) { x.logs = append(x.logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r
	return x
}

// TestRemovedPeerStopsWithinASecond (PROTOCOL.md §8.1): a sender removed
// from the peers file (or a peers file that no longer loads: Peer refuses
// it either way) while it types and holds a key has its session ended
// within RecheckInterval of the change: the held key released (cause
// revoked), its keypairs dropped, so that nothing it sends afterwards
// types, and its new handshakes are refused. While its sender still sends,
// its own packets bring the recheck; a silent one gets it from Next's
// deadline.
func TestRemovedPeerStopsWithinASecond(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			x := newTrustRx(t)
			l := newLink(t, "10.0.0.2:40000", x.rx)
			l.start(t0)
			now := t0.Add(50 * time.Millisecond)
			l.c.Key(kShift, true, now)
			l.pump(now)
			for _, k := range word {
				now = now.Add(100 * time.Millisecond)
				l.tap(k, now)
			}
			if got := x.r.Held(); !slices.Equal(got, []keys.Key{kShift}) {
				t.Fatalf("before the removal the receiver holds %v, want Shift", got)
			}
			removed := now.Add(10 * time.Millisecond)
			x.paired, x.changed = false, true
			var revokedAt time.Time
			if silent {
				next := x.r.Next()
				if next.IsZero() || next.After(removed.Add(receiver.RecheckInterval)) {
					t.Fatalf("Next is %v, more than %v after the removal at %v", next, receiver.RecheckInterval, removed)
				}
				x.r.Expire(next)
				revokedAt = next
			} else {
				// The sender goes on: a key every 100 ms.
				for at := removed; at.Before(removed.Add(3 * time.Second)); at = at.Add(100 * time.Millisecond) {
					l.tap(kX, at)
					l.tick(at.Add(90 * time.Millisecond))
					if revokedAt.IsZero() && x.r.Stats().Revoked > 0 {
						revokedAt = at
					}
				}
			}
			if revokedAt.IsZero() || revokedAt.Sub(removed) > receiver.RecheckInterval {
				t.Fatalf("revoked at %v, %v after the removal; want within %v (asked %v)", revokedAt, revokedAt.Sub(removed), receiver.RecheckInterval, x.asked)
			}
			if got := x.r.Held(); len(got) != 0 {
				t.Errorf("after the removal the receiver holds %v", got)
			}
			// The sender, unanswered, handshakes again, and types on:
			// refused.
			for at := revokedAt.Add(5 * time.Second); at.Before(revokedAt.Add(8 * time.Second)); at = at.Add(100 * time.Millisecond) {
				l.tap(kX, at)
				l.tick(at.Add(90 * time.Millisecond))
			}
			evs := x.rec.Events()
			i := slices.IndexFunc(evs, func(a fake.Arrival) bool { return a.Key == kShift && !a.Down })
			if i < 0 || evs[i].Cause != eventqueue.Revoked {
				t.Fatalf("Shift not released for the revocation: %v", evs)
			}
			for _, ev := range evs[i+1:] {
				if ev.Down {
					t.Errorf("after the revocation the removed sender typed %v", ev.Event)
				}
			}
			st := x.r.Stats()
			if st.Unpaired == 0 || st.Revoked != 1 || st.Responses == 0 {
				t.Errorf("stats %+v: want 1 revoked session, its new handshakes refused as unpaired", st)
			}
			if !slices.ContainsFunc(x.logs, func(s string) bool { return strings.Contains(s, "no longer paired") }) {
				t.Errorf("the log does not say the session was ended: %q", x.logs)
			}

			// Paired again: its next handshake is answered, and it types.
			x.paired, x.changed = true, true
			at := revokedAt.Add(9 * time.Second)
			for i := range 30 {
				l.tap(keys.Key(keys.KeyN), at.Add(time.Duration(i)*100*time.Millisecond))
				l.tick(at.Add(time.Duration(i)*100*time.Millisecond + 90*time.Millisecond))
			}
			if d := downs(x.rec); !slices.Contains(d, keys.Key(keys.KeyN)) {
				t.Errorf("paired again, the sender types nothing: %v", d)
			}
		})
	}
}

// TestRecheckAtMostOncePerInterval: the receiver asks Config.Recheck at
// most once per RecheckInterval, however many datagrams come, and Next asks for no
// wake-up of its own while no handshaken session is live.
func TestRecheckAtMostOncePerInterval(t *testing.T) {
	x := newTrustRx(t)
	if next := x.r.Next(); !next.IsZero() {
		t.Errorf("an idle receiver wakes at %v", next)
	}
	l := newLink(t, "10.0.0.2:40000", x.rx)
	l.start(t0)
	now := t0
	for range 100 {
		now = now.Add(50 * time.Millisecond)
		l.tap(kX, now)
	}
	for i := 1; i < len(x.asked); i++ {
		if d := x.asked[i].Sub(x.asked[i-1]); d < receiver.RecheckInterval {
			t.Fatalf("asked %v apart: %v", d, x.asked)
		}
	}
	if n, want := len(x.asked), int(now.Sub(t0)/receiver.RecheckInterval); n < want-1 || n > want+1 {
		t.Errorf("asked %d times over %v of typing, want about %d, one per %v", n, now.Sub(t0), want, receiver.RecheckInterval)
	}
}
