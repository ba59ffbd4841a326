package eventqueue

import (
	"errors"
	"fmt"
)

// ErrRebuild is why Rebuild could not make the sender's queue: the receiver
// lacks the queue the abridged packet builds on, or the packet does not
// fit it. The receiver drops such a packet (PROTOCOL.md §3.3).
var ErrRebuild = errors.New("abridged queue does not build on the previous queue")

// Rebuilder makes the sender's whole queue from an abridged packet (its
// events newer than a base stamp) and the receiver's previous queue, by
// replaying the seed's sender steps 1–7 (Queue.Add) for the events the
// previous queue lacks. It keeps a queue as scratch, so a rebuild
// allocates nothing once it has seen a queue as long. It is not safe for
// concurrent use; its zero value is ready.
type Rebuilder struct {
	q Queue
}

// Rebuild returns the sender's queue of n events whose events newer than
// base are newer (newest first, all real events), given prev, the last
// queue the receiver applied from the same sender queue. The result is
// the Rebuilder's own, valid until its next Rebuild.
//
// Why replaying is exact (PROTOCOL.md §3.3): a sender's queue only
// changes by Add, and each Add puts a newer stamp at index 0, so its
// queue is a function of its newest stamp, and prev is the sender's queue
// when its newest was prev[0].Stamp. The sender abridges only while every
// event it added after base is still in its queue (Queue.Evicted ≤ base),
// and prev[0].Stamp ≥ base (the receiver acknowledged base), so the events
// it added after prev are exactly those of newer stamped above
// prev[0].Stamp. Add is deterministic: adding them to prev, oldest first,
// makes the sender's queue. Rebuild checks the result against newer and
// base all the same, and returns ErrRebuild rather than a queue that is
// not the sender's.
func (r *Rebuilder) Rebuild(prev []Event, n int, base uint64, newer []Event) ([]Event, error) {
	switch {
	case len(prev) == 0:
		return nil, fmt.Errorf("%w: no previous queue", ErrRebuild)
	case len(prev) != n:
		return nil, fmt.Errorf("%w: the previous queue has %d events, the packet's %d", ErrRebuild, len(prev), n)
	case prev[0].Stamp < base:
		return nil, fmt.Errorf("%w: the previous queue's newest stamp %d is older than the base %d", ErrRebuild, prev[0].Stamp, base)
	case len(newer) >= n:
		return nil, fmt.Errorf("%w: %d newer events in a queue of %d", ErrRebuild, len(newer), n)
	}
	r.load(prev)
	top := prev[0].Stamp
	for i := len(newer) - 1; i >= 0; i-- {
		e := newer[i]
		if e.Stamp <= top {
			continue // prev has it already
		}
		if res, err := r.q.Add(e); err != nil || res != Added {
			return nil, fmt.Errorf("%w: event %d (%v, stamp %d) not added (%v, %v)", ErrRebuild, i, e.Kind, e.Stamp, res, err)
		}
	}
	got := r.q.ev
	for i, e := range newer {
		if got[i] != e {
			return nil, fmt.Errorf("%w: event %d differs", ErrRebuild, i)
		}
	}
	if got[len(newer)].Stamp > base {
		return nil, fmt.Errorf("%w: an event newer than the base is not in the packet", ErrRebuild)
	}
	return got, nil
}

// load makes the scratch queue a copy of events.
func (r *Rebuilder) load(events []Event) {
	r.q.ev = append(r.q.ev[:0], events...)
	r.q.nchar, r.q.evicted = 0, 0
	for _, e := range events {
		if e.Key.IsChar() {
			r.q.nchar++
		}
	}
}
