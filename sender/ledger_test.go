package sender

import (
	"github.com/keyrelay/keyrelay/keys"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// TestLedgerCountsWhatAPacketCarried (PROTOCOL.md §9, acks; §9.1; §8.4,
// since): one event, stamp 100, first carried by packet 10, and pushed
// out (or not) by the event of stamp 101 from packet 14 on. An ack under
// a keypair marks it delivered only if the queue the receiver applied
// last (the ack's stamp) held it, whatever packets the ack bits say
// arrived (a packet that arrived after a newer one was applied is stale,
// and was not applied: §7.2), and only if the event is newer than the
// keypair's since; one pushed out and past the horizon is settled
// undelivered.
func TestLedgerCountsWhatAPacketCarried(t *testing.T) {
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		gone      uint64 // the first packet without it; 0: still queued
		since     uint64
		ack       wire.Ack
		delivered bool
	}{
		{"queued, a later queue applied", 0, 0, wire.Ack{Newest: 12, Stamp: 105}, true},
		{"queued, the queue it tops applied", 0, 0, wire.Ack{Newest: 10, Stamp: 100}, true},
		{"a queue before it applied", 0, 0, wire.Ack{Newest: 12, Stamp: 99}, false},
		{"pushed out, only a queue without it applied", 14, 0, wire.Ack{Newest: 20, Missing: wire.MissingMask(20) &^ (1<<5 - 1), Stamp: 101}, false},
		{"pushed out, the bits report a packet that carried it, applied a queue without it", 14, 0, wire.Ack{Newest: 20, Missing: wire.MissingMask(20) &^ (1 << 7), Stamp: 101}, false},
		{"pushed out, a queue that held it applied", 14, 0, wire.Ack{Newest: 13, Stamp: 100}, true},
		{"no newer than the keypair's since", 0, 100, wire.Ack{Newest: 12, Stamp: 100}, false},
		{"newer than the keypair's since", 0, 99, wire.Ack{Newest: 12, Stamp: 100}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := ledger{tracked: 1, tally: make([]tally, 1)}
			lg.added(100, at, 10, 0)
			if tc.gone != 0 {
				lg.added(101, at.Add(time.Second), tc.gone, 100)
			}
			lg.acked(0, tc.since, &tc.ack)
			i, kept := lg.find(100)
			got := !kept || lg.recs[i].pending == 0
			if got != tc.delivered {
				t.Errorf("delivered %v, want %v (ack %+v, since %d, pushed out at %d)", got, tc.delivered, tc.ack, tc.since, tc.gone)
			}
		})
	}
	// Settling: pushed out at packet 14, a record before the horizon is
	// counted undelivered once and forgotten.
	lg := ledger{tracked: 1, tally: make([]tally, 1)}
	lg.added(100, at, 10, 0)
	lg.added(101, at.Add(time.Second), 14, 100)
	lg.compact(14)
	if lg.tally[0].undelivered != 0 {
		t.Fatalf("settled at horizon 14 a record pushed out at 14: %+v", lg.tally[0])
	}
	lg.compact(15)
	if tl := lg.tally[0]; tl.undelivered != 1 || !tl.first.Equal(at) || !tl.last.Equal(at) || len(lg.recs) != 1 {
		t.Fatalf("after the horizon passed: %+v, %d records, want 1 undelivered typed at %v and the queued record kept", tl, len(lg.recs), at)
	}
}

// TestLedgerStaysBounded: a receiver that never answers while a key is
// held (its press stays queued, the oldest record) and 20,000 events are
// typed after it: the ledger keeps the queue and the records pushed out
// within the last sentRing packets (twice that at most, between scans),
// not the session, and counts every settled event undelivered.
func TestLedgerStaysBounded(t *testing.T) {
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	c, err := NewCore(CoreConfig{Insecure: true, Feedback: true, Dests: []Dest{{Addr: "10.0.0.1:7575"}}, Output: func([]byte, int) {}}, at)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(at)
	now := at.Add(3 * time.Second) // past the grace: the plain queue's rules
	c.Key(keys.Key(keys.ShiftLeft), true, now)
	most := 0
	for i := range 10000 {
		now = now.Add(time.Millisecond)
		k := keys.Key(keys.KeyA) + keys.Key(i%26)
		c.Key(k, true, now)
		c.Key(k, false, now)
		most = max(most, len(c.ledger.recs))
	}
	if limit := 2 * (sentRing + DefaultQueueLen + 256); most > limit {
		t.Errorf("the ledger held up to %d records, want at most %d", most, limit)
	}
	d := c.Deliveries(nil)[0]
	if d.Delivered != 0 || d.Undelivered != 20001 {
		t.Errorf("%d delivered, %d undelivered; want 0 and 20001", d.Delivered, d.Undelivered)
	}
	t.Logf("at most %d records for 20,001 events", most)
}
