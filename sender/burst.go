package sender

import "time"

// Redundant bursts (seed 003): after a new event, while some receiver is
// live, the queue is re-sent every burstGap until every live receiver has
// acked a packet that carries the event, or for one Interval, after which
// the regular tick takes over. A lost packet then costs a burst gap, not a
// tick. With no live receiver (one-way use, no acks) there is no burst: the
// plain queue behaviour.

// DefaultBurstGap is the gap between re-sends before an RTT is known.
const DefaultBurstGap = 10 * time.Millisecond

// burstGap derives the gap from the smallest smoothed RTT of the live
// receivers: a quarter of it, within 5–20 ms. Acks cannot stop a burst
// sooner than an RTT, so shorter gaps would only add packets.
func (s *Sender) burstGap() time.Duration {
	var srtt time.Duration
	now := time.Now()
	s.mu.Lock()
	for _, p := range s.peers {
		if now.Sub(p.LastHeard) < s.cfg.PeerTimeout && p.haveRTT && (srtt == 0 || p.SRTT < srtt) {
			srtt = p.SRTT
		}
	}
	s.mu.Unlock()
	if srtt == 0 {
		return DefaultBurstGap
	}
	return min(max(srtt/4, 5*time.Millisecond), 20*time.Millisecond)
}

// startBurst begins (or extends) a burst for the packet just sent.
func (s *Sender) startBurst() {
	if _, live := s.minAcked(); !live {
		return
	}
	s.burstTarget = uint64(s.stats.Packets) // the counter of the packet just sent
	s.burstUntil = time.Now().Add(s.cfg.Interval)
	s.armBurst()
}

// armBurst starts the burst timer unless it runs.
func (s *Sender) armBurst() {
	if !s.bursting {
		s.bursting = true
		s.burst.Reset(s.burstGap())
	}
}

// burstStep re-sends the queue unless the burst is over. While events wait
// in the backlog it keeps going: each re-send probes for the acks that let
// them in, so the end of an outage is noticed within a burst gap.
func (s *Sender) burstStep() {
	s.bursting = false
	if len(s.backlog) == 0 && (time.Now().After(s.burstUntil) || s.allAcked(s.burstTarget)) {
		return
	}
	s.stats.Bursts++
	s.send()
	s.armBurst()
}

// anyLive reports whether some receiver has acked within PeerTimeout.
func (s *Sender) anyLive() bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.peers {
		if now.Sub(p.LastHeard) < s.cfg.PeerTimeout {
			return true
		}
	}
	return false
}

// allAcked reports whether every live receiver has received counter or a
// later packet (each packet carries the whole queue).
func (s *Sender) allAcked(counter uint64) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	live := false
	for _, p := range s.peers {
		if now.Sub(p.LastHeard) >= s.cfg.PeerTimeout {
			continue
		}
		live = true
		if p.Newest < counter {
			return false
		}
	}
	return live
}
