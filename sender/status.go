package sender

import (
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// Status is a snapshot for status displays. Safe to call while Run runs.
type Status struct {
	Packets int        // packets sent so far
	Held    []keys.Key // keys the queue holds down
	Pending int        // events waiting in the backlog
	Peers   []PeerStatus
	Uptime  time.Duration
}

// publish copies what the status methods report, under mu, if a step of
// the core came since the last copy: the status methods call it, not each
// step, so an idle sender's resends, ten a second, make no copy that no
// display asks for. The core is read under mu, which Run holds for each of
// its steps. The slices are reused: no allocation once they have grown.
func (s *Sender) publish() {
	if !s.stale {
		return
	}
	s.stale = false
	c, now := s.core, s.steppedAt
	s.pub.packets = c.Packets()
	s.pub.held = c.Held(s.pub.held[:0])
	s.pub.pending = c.Pending()
	s.pub.peers = c.Peers(s.pub.peers[:0], now)
	s.pub.final = c.Final()
	s.pub.unanswered = c.Unanswered(s.pub.unanswered[:0])
}

// Status returns a snapshot of the sender.
func (s *Sender) Status() Status {
	peers := s.Peers()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
	st := Status{
		Packets: s.pub.packets,
		Held:    append([]keys.Key(nil), s.pub.held...),
		Pending: s.pub.pending,
		Peers:   peers,
	}
	if !s.pub.start.IsZero() {
		st.Uptime = time.Since(s.pub.start)
	}
	return st
}

// Peers returns what the sender knows of each receiver that has acked,
// live as of now. Safe to call while Run runs.
func (s *Sender) Peers() []PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
	now := time.Now()
	out := append([]PeerStatus(nil), s.pub.peers...)
	for i := range out {
		out[i].Live = IsLive(out[i].LastHeard, now, s.cfg.PeerTimeout)
	}
	return out
}

// Pending is how many events wait in the backlog. Safe to call while Run
// runs.
func (s *Sender) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
	return s.pub.pending
}

// Final is the counter of the packet that carried the final state (every
// key released) once Run has sent it, 0 before. A receiver whose Newest
// (PeerStatus) reached it acknowledged that state: for a script, that
// everything was delivered.
func (s *Sender) Final() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
	return s.pub.final
}

// Unanswered lists the destinations (as Dests name them) whose handshake
// has not completed, and what it waits on: no keypair, so no key went to
// them (PROTOCOL.md §8.4). Safe to call while Run runs.
func (s *Sender) Unanswered() []LinkState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
	return append([]LinkState(nil), s.pub.unanswered...)
}

// Deliveries is what each destination acknowledged of the session's key
// events (Core.Deliveries), in Dests' order, once Run has returned; nil
// before. Safe to call while Run runs.
func (s *Sender) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.pub.deliveries...)
}

// Started is when Run started the session (zero before). Safe to call
// while Run runs.
func (s *Sender) Started() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pub.start
}
