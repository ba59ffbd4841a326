package receiver

import "github.com/keyrelay/keyrelay/eventqueue"

// LoseQueueForTest makes the receiver forget the previous queue of session
// id while keeping its keypairs: a state a correct receiver never reaches,
// in which the sender's abridged packets do not build (PROTOCOL.md §3.3).
func (r *Receiver) LoseQueueForTest(id uint64) {
	if s := r.sessions[id]; s != nil {
		s.tracker = eventqueue.Tracker{Unbalanced: r.cfg.Unbalanced}
	}
}
