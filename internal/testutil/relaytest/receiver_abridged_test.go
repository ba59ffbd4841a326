package relaytest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// TestUnbuildableAbridgedPacketIsDroppedUnacked (PROTOCOL.md §3.3, §8.8):
// an abridged packet the receiver cannot build on its previous queue is
// dropped, counted, not acked and not recorded as received, so the sender
// hears nothing of it; once its keypair has gone unacked for 1.5 s it
// sends whole queues, and typing goes on.
func TestUnbuildableAbridgedPacketIsDroppedUnacked(t *testing.T) {
	x := newRx(t)
	l := newLink(t, "10.0.0.2:40000", x)
	l.start(t0)
	at := t0.Add(100 * time.Millisecond)
	l.tap(keys.Key(keys.KeyA), at)
	l.tick(at.Add(300 * time.Millisecond))
	if got := l.c.Stats().Abridged; got == 0 {
		t.Fatalf("no abridged packet after a tap acked: %v", l.c.Stats())
	}
	x.r.LoseQueueForTest(l.c.Session())
	acks, applied := x.r.Stats().Acks, x.r.Stats().Accepted
	at = at.Add(400 * time.Millisecond)
	l.c.Key(keys.Key(keys.KeyB), true, at)
	l.pump(at)
	st := x.r.Stats()
	if st.Unbased != 1 || st.Acks != acks || st.Accepted != applied {
		t.Fatalf("abridged packet without its base: %d dropped (want 1), %d acks and %d applied since (want none): %v", st.Unbased, st.Acks-acks, st.Accepted-applied, st)
	}
	if slices.Contains(downs(x.rec), keys.Key(keys.KeyB)) {
		t.Fatalf("KeyB typed from a packet that did not build: %v", downs(x.rec))
	}
	// Unacked, the sender turns to whole queues (and a new handshake):
	// KeyB is typed within about 1.5 s.
	l.tick(at.Add(2 * time.Second))
	if !slices.Contains(downs(x.rec), keys.Key(keys.KeyB)) {
		t.Fatalf("KeyB never typed after the receiver lost its queue: %v; receiver %v", downs(x.rec), x.r.Stats())
	}
}
