package sender

import (
	"errors"
	"net"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// DefaultPeerTimeout is how long a receiver may go unheard and still count
// as live: long enough that a lossy outage of about a second keeps typing
// lossless (backlog.go).
const DefaultPeerTimeout = 2 * time.Second

// maxPeers bounds the receivers tracked (a broadcast reaches many).
const maxPeers = 64

// lossAlpha weighs each settled packet in the smoothed loss estimate (an
// effective window of about 32 packets).
const lossAlpha = 1.0 / 32

// PeerStatus is what the sender knows of one receiver from its acks.
type PeerStatus struct {
	Addr      string
	Live      bool          // heard within the peer timeout
	LastHeard time.Time     // when its last ack arrived
	SRTT      time.Duration // smoothed round-trip time (RFC 6298); 0 before a sample
	RTTVar    time.Duration // its variation
	Loss      float64       // smoothed fraction of packets lost to it
	Lost      int           // packets known lost (from ack bits)
	Settled   int           // packets whose fate the acks told
	Stamp     uint64        // newest event stamp it has applied
	Newest    uint64        // newest packet counter it has received
	// ClockOffset is the receiver's wall clock minus ours, from its acks
	// (accurate to about half the RTT, and to the millisecond); the
	// receiver rejects our packets when it exceeds its --max-skew.
	ClockOffset time.Duration
	ClockKnown  bool
}

// peer is the sender's state for one receiver.
type peer struct {
	PeerStatus
	haveRTT bool
	counted uint64 // packets up to here are settled
	acks    wire.ReplayFilter
}

// sample feeds one RTT measurement to the RFC 6298 estimator.
func (p *peer) sample(r time.Duration) {
	if !p.haveRTT {
		p.SRTT, p.RTTVar, p.haveRTT = r, r/2, true
		return
	}
	d := p.SRTT - r
	if d < 0 {
		d = -d
	}
	p.RTTVar = (3*p.RTTVar + d) / 4
	p.SRTT = (7*p.SRTT + r) / 8
}

// reorderMargin: a packet's fate is read from the ack bits only once the
// receiver's newest is this many packets past it, so a packet overtaken by
// the next ones is not counted lost.
const reorderMargin = 8

// settle counts the fate of the packets an ack tells about for the first
// time, by its ack bits, up to reorderMargin before its newest.
func (p *peer) settle(a *wire.Ack) {
	if a.Newest <= reorderMargin {
		return
	}
	last := a.Newest - reorderMargin
	first := p.counted + 1
	if a.Newest > wire.AckBits {
		first = max(first, a.Newest-wire.AckBits)
	}
	for c := first; c <= last; c++ {
		lost := 0.0
		if !a.Received(c) {
			lost = 1
			p.Lost++
		}
		p.Settled++
		p.Loss += lossAlpha * (lost - p.Loss)
	}
	p.counted = max(p.counted, last)
}

var errForeignAck = errors.New("ack for another session")

// handleAck applies one datagram read from a feedback socket.
func (s *Sender) handleAck(b []byte, from net.Addr, now time.Time) error {
	var a wire.Ack
	var err error
	if s.aead != nil {
		s.ackScratch, err = wire.OpenAck(b, s.ackAEAD, s.ackScratch, &a)
	} else {
		err = wire.ParseAck(b, &a)
	}
	if err != nil {
		return err
	}
	if a.Header.Session != s.cfg.Session {
		return errForeignAck
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := from.String()
	p := s.peers[key]
	if p == nil {
		if len(s.peers) >= maxPeers {
			return nil
		}
		p = &peer{PeerStatus: PeerStatus{Addr: key}}
		s.peers[key] = p
	}
	if !p.acks.Accept(a.Header.Counter) {
		return nil // a duplicate or replayed ack
	}
	p.LastHeard = now
	p.Stamp = max(p.Stamp, a.Stamp)
	if a.Newest > p.Newest {
		if at, ok := s.sentAt(a.Newest); ok {
			if r := now.Sub(at) - time.Duration(a.Delay)*time.Microsecond; r > 0 {
				p.sample(r)
				p.ClockOffset, p.ClockKnown = ClockOffset(a.Wall, now, r), true
			}
		}
		p.Newest = a.Newest
	}
	p.settle(&a)
	return nil
}

// ClockOffset is the receiver's clock minus ours, from an ack that left
// the receiver at wall (its Unix ms) and arrived at now, rtt after the
// packet it acks was sent (the receiver's hold time taken out): the ack
// left, by our clock, about rtt/2 before it arrived (NTP's assumption of a
// symmetric path).
func ClockOffset(wall uint64, now time.Time, rtt time.Duration) time.Duration {
	left := now.Add(-rtt / 2)
	return time.Duration(int64(wall)-left.UnixMilli()) * time.Millisecond
}

// sentRing remembers when recent packets were sent, for RTT samples.
const sentRing = 1024

func (s *Sender) recordSent(counter uint64, at time.Time) {
	s.sent[counter%sentRing] = sentRecord{counter, at}
}

func (s *Sender) sentAt(counter uint64) (time.Time, bool) {
	r := s.sent[counter%sentRing]
	return r.at, r.counter == counter
}

type sentRecord struct {
	counter uint64
	at      time.Time
}

// Peers returns what the sender knows of each receiver that has acked.
// Safe to call while Run runs.
func (s *Sender) Peers() []PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]PeerStatus, 0, len(s.peers))
	for _, p := range s.peers {
		st := p.PeerStatus
		st.Live = now.Sub(p.LastHeard) < s.cfg.PeerTimeout
		out = append(out, st)
	}
	return out
}
