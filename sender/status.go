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

// publish copies what Status reports; Run calls it after each change.
func (s *Sender) publish() {
	s.mu.Lock()
	s.pubPackets = s.stats.Packets
	s.pubHeld = s.queue.HeldKeys(s.pubHeld[:0])
	s.mu.Unlock()
}

// Status returns a snapshot of the sender.
func (s *Sender) Status() Status {
	peers := s.Peers()
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{
		Packets: s.pubPackets,
		Held:    append([]keys.Key(nil), s.pubHeld...),
		Pending: s.Pending(),
		Peers:   peers,
		Uptime:  time.Since(s.start),
	}
}
