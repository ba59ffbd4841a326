package sender

import (
	"slices"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// Delivery accounting. "Every receiver acked the final state" is not
// "every key was typed": a receiver that came back after an outage longer
// than Outage, or a new instance of it, acks the final state while the
// events pushed out of the queue meanwhile never reached it. So the core
// keeps a ledger: each key event the queue took, with the events before
// and after which the queue held it (from its own stamp to the stamp of
// the event that pushed it out), and the unicast destinations that have
// not yet confirmed it under a keypair that types it.
//
// An ack confirms what the receiver applied, not what it received: its stamp
// is the newest stamp of the queue the receiver applied last (PROTOCOL.md
// §9), and the queue whose newest stamp that is holds exactly the events
// from their own stamp up to the one that pushed them out. So an event is
// delivered once an ack's stamp lies in that span. The ack bits say which
// packets arrived, and a packet that arrived after a newer one was applied
// is stale and dropped (PROTOCOL.md §7.2): its events were not applied, and
// counting them from the bits would count delivered a key-down that the
// key-ups added at the end pushed out unapplied. An ack under a keypair
// confirms only events newer than the keypair's since (PROTOCOL.md §8.4):
// older ones are the earlier instance's, confirmed by its own acks or not at
// all.
//
// While a receiver is owed events, none leaves the queue before an ack's
// stamp reached it (backlog.go), and the first such ack's stamp lies in
// its span: then the ledger is exact. One pushed out without that (the
// receiver silent past Outage, the end giving up, the backlog full) is
// confirmed only by an ack of a queue that held it, and an instance that
// applied one whose every ack was lost counts it undelivered: "not
// confirmed", not "not typed". A press the queue dropped (full of held
// keys) reached nobody. One-way destinations are not accounted: nothing
// acks them. A plaintext destination (--insecure) has no keypair and so
// no since: a receiver restarted there joins the session (PROTOCOL.md
// §7.2), and what it skipped counts delivered.

// maxTracked bounds the destinations accounted for (the pending mask's
// width); the others are reported as not accounted.
const maxTracked = 64

// record is one key event the queue took.
type record struct {
	stamp uint64
	at    time.Time // when the source gave it
	first uint64    // the first packet carrying it
	// gone is the first packet that no longer carries it (pushed out of
	// the queue), and goneStamp the stamp of the event that pushed it
	// out; 0 while the queue holds it.
	gone, goneStamp uint64
	pending         uint64 // bit i: destination i has not acknowledged it
}

// tally is one destination's figures.
type tally struct {
	delivered   int
	undelivered int       // settled: no ack can confirm them any more
	first, last time.Time // when the undelivered ones were typed
}

func (t *tally) lose(at time.Time) {
	t.undelivered++
	if t.first.IsZero() || at.Before(t.first) {
		t.first = at
	}
	if at.After(t.last) {
		t.last = at
	}
}

// ledger is the core's delivery accounting; the Core owns it (not safe
// for concurrent use).
type ledger struct {
	tracked uint64   // the destinations accounted
	recs    []record // oldest first, by stamp
	bound   int      // expire scans when recs reach it
	tally   []tally  // per destination (Core.links' order)
}

func newLedger(links []*link, feedback bool) ledger {
	lg := ledger{tally: make([]tally, len(links))}
	for i, l := range links {
		if feedback && !l.OneWay && i < maxTracked {
			lg.tracked |= 1 << i
		}
	}
	return lg
}

// added notes an event the queue took at stamp, typed at, first carried
// by packet first, and the event it pushed out (stamp 0: none) leaving
// from packet first on.
func (lg *ledger) added(stamp uint64, at time.Time, first, pushedOut uint64) {
	if pushedOut != 0 {
		if i, ok := lg.find(pushedOut); ok {
			lg.recs[i].gone, lg.recs[i].goneStamp = first, stamp
		}
	}
	if lg.tracked != 0 {
		lg.recs = append(lg.recs, record{stamp: stamp, at: at, first: first, pending: lg.tracked})
	}
}

// dropped notes an event no packet carried: undelivered everywhere.
func (lg *ledger) dropped(at time.Time) {
	for i := range lg.tally {
		if lg.tracked&(1<<i) != 0 {
			lg.tally[i].lose(at)
		}
	}
}

func (lg *ledger) find(stamp uint64) (int, bool) {
	return slices.BinarySearchFunc(lg.recs, stamp, func(r record, s uint64) int {
		switch {
		case r.stamp < s:
			return -1
		case r.stamp > s:
			return 1
		}
		return 0
	})
}

// acked applies ack a from destination i under a keypair whose since is
// since: each pending event newer than since that the queue the receiver
// applied last (its newest stamp a.Stamp) held is delivered there.
func (lg *ledger) acked(i int, since uint64, a *wire.Ack) {
	if i < 0 || lg.tracked&(1<<i) == 0 {
		return
	}
	bit := uint64(1) << i
	for j := range lg.recs {
		r := &lg.recs[j]
		if r.stamp > a.Stamp {
			break // added after that queue (recs by stamp)
		}
		if r.pending&bit == 0 || r.stamp <= since || (r.goneStamp != 0 && r.goneStamp <= a.Stamp) {
			continue
		}
		r.pending &^= bit
		lg.tally[i].delivered++
	}
	lg.compact(0)
}

// compact drops the records every destination confirmed, and settles
// those pushed out of the queue before packet horizon: an ack that could
// confirm them would be of a queue sent that long ago, and acks come late
// by far fewer packets than that; no later keypair was sent them. What is left is the queue's events and those
// pushed out recently, in order.
func (lg *ledger) compact(horizon uint64) {
	lg.recs = slices.DeleteFunc(lg.recs, func(r record) bool {
		if r.pending != 0 && r.gone != 0 && r.gone < horizon {
			lg.settle(&r)
		}
		return r.pending == 0
	})
}

// expire settles the records pushed out before packet horizon (compact)
// when the oldest is one, or when the records have doubled since the last
// scan (a held key's press stays queued, and those after it may go first):
// amortized, a constant cost per event, and the records stay within twice
// those unsettled.
func (lg *ledger) expire(horizon uint64) {
	if len(lg.recs) == 0 {
		return
	}
	if r := lg.recs[0]; (r.gone != 0 && r.gone < horizon) || len(lg.recs) >= lg.bound {
		lg.compact(horizon)
		lg.bound = max(2*len(lg.recs), 256)
	}
}

// settle counts r undelivered wherever it is still pending.
func (lg *ledger) settle(r *record) {
	for i := range lg.tally {
		if r.pending&(1<<i) != 0 {
			lg.tally[i].lose(r.at)
		}
	}
	r.pending = 0
}

// Delivery is what one unicast receiver acknowledged of the session's key
// events (the ledger, ledger.go).
type Delivery struct {
	Addr string
	// Accounted is false for a destination nothing acknowledges (one-way,
	// broadcast): its figures are zero.
	Accounted bool
	// Delivered events were in a packet an instance of the receiver
	// acknowledged, and newer than what it was told an earlier instance
	// typed (since, PROTOCOL.md §8.4).
	Delivered int
	// Undelivered events were not confirmed: pushed out of the queue
	// before any acknowledged packet carried them, dropped by a full
	// queue, or still unconfirmed. Until the session is done, those
	// still in flight count here too.
	Undelivered int
	// First and Last are when the first and the last undelivered event
	// were typed (zero when none).
	First, Last time.Time
	// Nowhere is how many key events the receiver said it typed into no
	// application (PROTOCOL.md §9; nowhere.go), over its instances, and
	// Why why the latest reached none. They count among Delivered: they
	// reached the receiver, not an application.
	Nowhere int
	Why     wire.Why
}

// Deliveries appends each destination's delivery figures, in Dests'
// order, to dst: what is still unconfirmed counts as undelivered.
func (c *Core) Deliveries(dst []Delivery) []Delivery {
	for i, l := range c.links {
		d := Delivery{Addr: l.Addr, Accounted: c.ledger.tracked&(1<<i) != 0, Nowhere: int(l.nowhere.total()), Why: l.nowhere.why}
		if d.Accounted {
			t := c.ledger.tally[i]
			for _, r := range c.ledger.recs {
				if r.pending&(1<<i) != 0 {
					t.lose(r.at)
				}
			}
			d.Delivered, d.Undelivered, d.First, d.Last = t.delivered, t.undelivered, t.first, t.last
		}
		dst = append(dst, d)
	}
	return dst
}
