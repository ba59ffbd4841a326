package receiver

import "github.com/keyrelay/keyrelay/eventqueue"

// LoseQueueForTest makes the receiver forget the previous queue of session
// id while keeping its keypairs: a state a correct receiver never reaches,
// in which the sender's abridged packets do not build (PROTOCOL.md §3.3).
// Only tests call it: the relay's tests (internal/testutil/relaytest) run
// a real sender against the receiver and live outside this package. It is
// not safe for concurrent use with Run: the tests step the receiver
// themselves.
func (r *Receiver) LoseQueueForTest(id uint64) {
	if s := r.sessions[id]; s != nil {
		s.tracker = eventqueue.Tracker{Unbalanced: r.cfg.Unbalanced}
	}
}
