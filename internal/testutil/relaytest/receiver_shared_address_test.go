package relaytest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// A session belongs to its machine (PROTOCOL.md §7.2, §9.1): sessions
// from one source address are told apart by the identity their packets
// authenticate, not by the address.

// newRxPairing is a receiver run with rxID that pairs the machines ids.
func newRxPairing(t *testing.T, ids ...*identity.Identity) *rx {
	t.Helper()
	x := &rx{conn: &hsConn{}, rec: &fake.Recorder{}}
	r, err := receiver.New(receiver.Config{Conn: x.conn, Injector: x.rec, PSK: hsKey, Timeout: time.Hour, Identity: rxID,
		Peer: func(k [identity.KeyLen]byte) (string, bool) {
			for i, id := range ids {
				if k == id.Public() {
					return fmt.Sprint("peer", i), true
				}
			}
			return "", false
		}})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r
	return x
}

// typedBy counts the key-downs of k the recorder got.
func typedBy(rec *fake.Recorder, k keys.Key) int {
	n := 0
	for _, d := range downs(rec) {
		if d == k {
			n++
		}
	}
	return n
}

// end stops l's source at now and runs it until it is done.
func (l *link) end(t *testing.T, now time.Time) {
	t.Helper()
	l.c.Stop(now, sender.SourceEnded)
	l.pump(now)
	l.tick(now.Add(30 * time.Second))
	if !l.c.Done() {
		t.Fatal("the session did not end")
	}
}

// TestTwoMachinesBehindOneAddress: two paired machines whose packets come
// from one address and port (a NAT, a one-socket forwarder: each hears the
// other's acks too, which it cannot open) each keep their own session,
// the second's handshake starting while the first types: both type all 20
// taps, and each sender counts all 40 of its key events delivered.
func TestTwoMachinesBehindOneAddress(t *testing.T) {
	other := mustID()
	x := newRxPairing(t, txID, other)
	const from = "192.0.2.7:40000"
	a, b := newLinkAs(t, from, x, txID, rxID), newLinkAs(t, from, x, other, rxID)
	ka, kb := keys.Key(keys.KeyA), keys.Key(keys.KeyB)
	a.start(t0)
	now := t0.Add(50 * time.Millisecond)
	for i := range 20 {
		if i == 5 {
			b.start(now)
		}
		a.tap(ka, now)
		if i >= 5 {
			b.tap(kb, now.Add(20*time.Millisecond))
		}
		now = now.Add(50 * time.Millisecond)
		a.tick(now)
		b.tick(now)
	}
	for range 5 {
		b.tap(kb, now)
		now = now.Add(50 * time.Millisecond)
		b.tick(now)
	}
	a.end(t, now)
	b.end(t, now)
	if n := typedBy(x.rec, ka); n != 20 {
		t.Errorf("the first machine typed %d of 20 taps, want all", n)
	}
	if n := typedBy(x.rec, kb); n != 20 {
		t.Errorf("the second machine typed %d of 20 taps, want all", n)
	}
	for _, l := range []*link{a, b} {
		d := l.c.Deliveries(nil)
		if len(d) != 1 || d[0].Delivered != 40 || d[0].Undelivered != 0 {
			t.Errorf("session %016x counts %+v, want 40 delivered, none undelivered", l.c.Session(), d)
		}
	}
	if st := x.r.Stats(); st.Sessions != 2 || st.Stale != 0 {
		t.Errorf("receiver stats %+v, want 2 sessions, none stale", st)
	}
}

// TestReplacedSessionIsNotAcked: a new session of the same machine from
// the same address and port is that machine's sender restarted, and ends
// the old session (its keys released). Should the old sender still be
// sending (two sends of one machine behind one forwarder socket), its
// packets type nothing and no ack answers them: an ack never covers a
// packet dropped, so that sender counts none of the keys it typed from
// then on delivered.
func TestReplacedSessionIsNotAcked(t *testing.T) {
	x := newRxPairing(t, txID)
	const from = "192.0.2.7:40000"
	a, b := newLinkAs(t, from, x, txID, rxID), newLinkAs(t, from, x, txID, rxID)
	ka, kb := keys.Key(keys.KeyA), keys.Key(keys.KeyB)
	a.start(t0)
	now := t0.Add(50 * time.Millisecond)
	for range 5 {
		a.tap(ka, now)
		now = now.Add(50 * time.Millisecond)
		a.tick(now)
	}
	b.start(now)
	b.tap(kb, now)
	acks := x.r.Stats().Acks
	// Past the receiver's idle ack interval and the sender's new
	// handshake (PROTOCOL.md §8.4): neither brings an ack.
	for range 40 {
		now = now.Add(50 * time.Millisecond)
		a.tap(ka, now)
		a.tick(now)
	}
	if got := x.r.Stats().Acks; got != acks {
		t.Errorf("the replaced session's 40 taps drew %d acks, want none", got-acks)
	}
	a.end(t, now)
	if n := typedBy(x.rec, ka); n != 5 {
		t.Errorf("the replaced session typed %d taps, want the 5 before the new one", n)
	}
	d := a.c.Deliveries(nil)
	if len(d) != 1 || d[0].Delivered != 10 || d[0].Undelivered != 80 {
		t.Errorf("the replaced session's sender counts %+v, want 10 delivered, 80 undelivered", d)
	}
}
