package sender

import (
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
)

// Lossless typing. The plain queue drops an event when N newer ones have
// pushed it out, received or not: a burst of typing longer than the queue
// during an outage loses key-downs for good. While feedback flows, the
// sender holds a new event back, in a backlog, whenever adding it would push
// out an event that some live receiver has not applied yet (its acked stamp
// is older), and adds it when the acks move on. With no live receiver (no
// feedback: one-way, broadcast, or all receivers silent for PeerTimeout) the
// plain queue behaviour applies and the backlog drains at once. A sender
// that reads feedback assumes a receiver during its first PeerTimeout.

// BacklogLimit bounds the events waiting for acks. Past it the oldest
// waiting event is added anyway (plain queue behaviour), counted in
// Stats.Overflow and reported.
const BacklogLimit = 1024

// Pending is how many events wait in the backlog. Safe to call while Run
// runs.
func (s *Sender) Pending() int { return int(s.pending.Load()) }

// minAcked returns the oldest stamp that every live receiver has applied,
// and whether any receiver is live. A sender that reads feedback and has
// heard no receiver yet assumes one for its first PeerTimeout, so typing
// right at the start is as safe as later; after that, silence means one-way
// use.
func (s *Sender) minAcked() (uint64, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.peers) == 0 && len(s.cfg.Feedback) > 0 && now.Sub(s.start) < s.cfg.PeerTimeout {
		return 0, true
	}
	var acked uint64
	live := false
	for _, p := range s.peers {
		if now.Sub(p.LastHeard) >= s.cfg.PeerTimeout {
			continue
		}
		if !live || p.Stamp < acked {
			acked = p.Stamp
		}
		live = true
	}
	return acked, live
}

// mayAdd reports whether adding ev now loses nothing a live receiver still
// needs.
func (s *Sender) mayAdd(ev keyEvent) bool {
	acked, live := s.minAcked()
	if !live {
		return true
	}
	victim, adds := s.queue.Victim(s.event(ev))
	return !adds || victim.Kind == eventqueue.None || victim.Stamp <= acked
}

// hold puts ev at the end of the backlog, making room if it is full.
func (s *Sender) hold(ev keyEvent) {
	if len(s.backlog) >= BacklogLimit {
		s.stats.Overflow++
		if s.stats.Overflow == 1 {
			s.logf("backlog full (%d events waiting for acks): adding without waiting; keys typed during this outage may be lost", BacklogLimit)
		}
		s.addNow(s.backlog[0])
		s.backlog = s.backlog[1:]
	}
	s.stats.Held++
	s.backlog = append(s.backlog, ev)
	s.pending.Store(int64(len(s.backlog)))
	s.armBurst()
}

// drain adds the waiting events, in order, as far as the acks allow.
func (s *Sender) drain() {
	for len(s.backlog) > 0 && s.mayAdd(s.backlog[0]) {
		ev := s.backlog[0]
		s.backlog = s.backlog[1:]
		s.addNow(ev)
	}
	if len(s.backlog) == 0 {
		s.backlog = nil
	}
	s.pending.Store(int64(len(s.backlog)))
}

// flushBacklog, when the source has ended, lets the backlog drain with the
// acks as long as it shrinks; after PeerTimeout without progress it adds
// what is left. (drain itself adds everything once no receiver is live.)
func (s *Sender) flushBacklog(tick *time.Ticker) {
	if len(s.backlog) == 0 {
		return
	}
	stuck := time.NewTimer(s.cfg.PeerTimeout)
	defer stuck.Stop()
	for len(s.backlog) > 0 {
		before := len(s.backlog)
		select {
		case <-tick.C:
			s.send()
			s.drain()
		case <-s.burst.C:
			s.burstStep()
		case d := <-s.acks:
			s.applyAck(d)
			s.drain()
		case <-stuck.C:
			for _, ev := range s.backlog {
				s.addNow(ev)
			}
			s.backlog = nil
			s.pending.Store(0)
		}
		if len(s.backlog) < before {
			stuck.Reset(s.cfg.PeerTimeout)
		}
	}
}
