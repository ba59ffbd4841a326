package sender

import (
	"errors"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/wire"
)

// DefaultPeerTimeout is how long a receiver may go unheard and still count
// as live: long enough that a lossy outage of about a second keeps typing
// lossless (backlog.go).
const DefaultPeerTimeout = 2 * time.Second

// DefaultOutage is how long a receiver that was live may go unheard and
// still be owed every key event (lossless typing, backlog.go): an outage
// up to it, a Wi-Fi hand-over or a router restart, loses no key typed
// meanwhile; the events wait and go out when the receiver answers again.
// It is longer than PeerTimeout, after which the receiver is reported as
// silent (PROTOCOL.md §7.1).
const DefaultOutage = 5 * time.Second

// maxPeers bounds the receivers tracked (a broadcast reaches many).
const maxPeers = 64

var errTooManyAcks = errors.New("ack from one receiver too many")

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
	// ClockOffset is the receiver's wall clock minus ours, from the last of
	// its acks that gave it (about one a second, PROTOCOL.md §9; accurate
	// to about half the RTT, and to the millisecond); the
	// receiver rejects our packets when it exceeds its --max-skew.
	ClockOffset time.Duration
	ClockKnown  bool
	// Speaks lists the protocol versions it speaks when it said (a version
	// notice, PROTOCOL.md §10) that ours is not one, since it last acked;
	// nil otherwise. A receiver that only said so has no other figure.
	Speaks []uint8
}

// peer is the sender's state for one receiver.
type peer struct {
	PeerStatus
	rtt     RTT
	counted uint64 // packets up to here are settled
}

// IsLive is the one definition of a live receiver: heard within timeout
// of now. (Before any receiver is heard, a sender with feedback also
// assumes one during its first Outage: Core.inGrace.)
func IsLive(lastHeard, now time.Time, timeout time.Duration) bool {
	return !lastHeard.IsZero() && now.Sub(lastHeard) < timeout
}

func (c *Core) live(p *peer, now time.Time) bool {
	return IsLive(p.LastHeard, now, c.cfg.PeerTimeout)
}

// owed reports whether p is owed every key event: heard within Outage.
// A receiver in an outage shorter than that gets what was typed during it
// when it comes back; past it, the plain queue's behaviour applies.
func (c *Core) owed(p *peer, now time.Time) bool {
	return IsLive(p.LastHeard, now, c.cfg.Outage)
}

// inGrace: a sender that reads feedback and has heard no receiver yet
// assumes one for its first PeerTimeout, so typing right at the start is as
// safe as later; after that, silence means one-way use. (Outage is for a
// receiver that was heard: owed.) While a handshake is unanswered the
// grace lasts Outage: no key went to that receiver (its packets are
// initiations, PROTOCOL.md §8.4), so the keys typed meanwhile wait in the
// backlog for its keypair, as they would through an outage. A response is
// the receiver's first sign of life, not yet an ack: the grace lasts at
// least PeerTimeout after the newest keypair was taken, so that a
// handshake answered late (under loss, after the backoff) is followed by
// the keys that waited for it instead of ending the session before its
// first ack could arrive.
func (c *Core) inGrace(now time.Time) bool {
	if len(c.peers) > 0 || !c.cfg.Feedback {
		return false
	}
	grace := c.cfg.PeerTimeout
	if c.awaitingHandshake() {
		grace = c.cfg.Outage
	}
	if now.Sub(c.start) < grace {
		return true
	}
	return !c.answered.IsZero() && now.Sub(c.answered) < c.cfg.PeerTimeout
}

// quiet reports whether a live receiver has not been heard for over 60 %
// of PeerTimeout. A receiver acks an idle sender only about once a second
// (PROTOCOL.md §9, receiver.IdleAckInterval), so with the default 2 s
// timeout a single lost ack would otherwise bring it to the edge of not
// live; the sender then asks for an ack (Core.Tick).
func (c *Core) quiet(now time.Time) bool {
	for _, p := range c.peers {
		if c.live(p, now) && now.Sub(p.LastHeard) > c.cfg.PeerTimeout*6/10 {
			return true
		}
	}
	return false
}

// minAcked returns the oldest stamp that every receiver owed events
// (owed) has applied, and whether there is one (or one is assumed,
// inGrace).
func (c *Core) minAcked(now time.Time) (uint64, bool) {
	if c.inGrace(now) {
		return 0, true
	}
	var acked uint64
	live := false
	for _, p := range c.peers {
		if !c.owed(p, now) {
			continue
		}
		if !live || p.Stamp < acked {
			acked = p.Stamp
		}
		live = true
	}
	return acked, live
}

// allAcked reports whether every live receiver, and at least one, has
// received counter or a later packet (each packet carries the whole
// queue).
func (c *Core) allAcked(counter uint64, now time.Time) bool {
	live := false
	for _, p := range c.peers {
		if !c.live(p, now) {
			continue
		}
		live = true
		if p.Newest < counter {
			return false
		}
	}
	return live
}

// anyOwed reports whether a receiver that was heard is still owed events.
func (c *Core) anyOwed(now time.Time) bool {
	for _, p := range c.peers {
		if c.owed(p, now) {
			return true
		}
	}
	return false
}

// awaitingAck reports whether a receiver owed events (or, inGrace, one
// assumed) has not acked counter yet.
func (c *Core) awaitingAck(counter uint64, now time.Time) bool {
	if _, live := c.minAcked(now); !live {
		return false
	}
	return !c.allAcked(counter, now)
}

// A packet's fate is read from the ack bits only once the receiver has
// acked a packet both reorderMargin counters past it and sent at least
// reorderTime after it, so a packet overtaken by later ones is not counted
// lost. The time threshold is RFC 9002's (§6.1.2), 9/8 of the larger of
// SRTT and the latest RTT, or TCP's retransmission timeout (RFC 6298 §2:
// SRTT + 4·RTTVAR) when the round trip varies more than that, at least
// 1 ms: only an estimate depends on it, so waiting longer costs nothing but
// a late figure. The counter margin alone is not enough while bursts send
// every millisecond or so: a reordering of a few ms spans more than
// reorderMargin packets, which would be read as loss.
const reorderMargin = 8

func (c *Core) reorderTime(p *peer) time.Duration {
	return max(max(p.rtt.SRTT, p.rtt.Latest)*9/8, p.rtt.SRTT+4*p.rtt.RTTVar, time.Millisecond)
}

// settle counts the fate of the packets an ack tells about for the first
// time, by its ack bits, up to the last that both reorder thresholds allow.
func (c *Core) settle(p *peer, a *wire.Ack) {
	if a.Newest <= reorderMargin {
		return
	}
	newestAt, known := c.sentAt(a.Newest)
	wait := c.reorderTime(p)
	first := p.counted + 1
	if a.Newest > wire.AckBits {
		first = max(first, a.Newest-wire.AckBits)
	}
	last := first - 1
	for n := first; n <= a.Newest-reorderMargin; n++ {
		// Packets older than the record of send times are long settled
		// by any threshold.
		if at, ok := c.sentAt(n); ok && known && newestAt.Sub(at) < wait {
			break // this one and the later ones may still arrive
		}
		lost := 0.0
		if !a.Received(n) {
			lost = 1
			p.Lost++
		}
		p.Settled++
		p.Loss += lossAlpha * (lost - p.Loss)
		last = n
	}
	p.counted = max(p.counted, last)
}

// peerOf is what its receiver told of l, nil while it has not acked: a
// lookup of c.peers by l's address the first time, kept on l after (peers
// are never removed from c.peers), so that the deadlines of an idle sender,
// which ask at every packet (paced, silent), hash no address.
func (c *Core) peerOf(l *link) *peer {
	if l.peer == nil {
		l.peer = c.peers[l.Addr]
	}
	return l.peer
}

// handleAck applies one ack, parsed as m, from the address from. A
// handshaken link's ack counts for that link's destination, whatever
// address it came from: it authenticates, but its address is trusted for
// nothing.
func (c *Core) handleAck(m handshake.Message, from string, now time.Time) error {
	a := &c.ack
	l, since, err := c.openAck(m, a, now)
	if err != nil {
		return err
	}
	if l != nil {
		from = l.Addr
	}
	i := c.linkIndex(l, from)
	c.ledger.acked(i, since, a)
	if i >= 0 {
		c.noteNowhere(c.links[i], a, c.ackedBy)
	}
	p := c.peers[from]
	if p == nil {
		if len(c.peers) >= maxPeers {
			return errTooManyAcks
		}
		p = &peer{PeerStatus: PeerStatus{Addr: from}}
		c.peers[from] = p
	}
	if l != nil {
		// The packets before the keypair's first went to the receiver as
		// initiations, or under a keypair it could not open (it
		// restarted): their absence from its ack bits is no loss.
		p.counted = max(p.counted, l.first-1)
	}
	p.LastHeard = now
	p.Stamp = max(p.Stamp, a.Stamp)
	if a.Newest > p.Newest {
		if at, ok := c.sentAt(a.Newest); ok {
			if r := now.Sub(at) - time.Duration(a.Delay)*time.Microsecond; r > 0 {
				p.rtt.Sample(r)
				// Only an ack that gives the receiver's clock (about one a
				// second, PROTOCOL.md §9) moves the offset; 0 is "not
				// given", not the Unix epoch.
				if a.Wall != 0 {
					p.ClockOffset, p.ClockKnown = ClockOffset(a.Wall, now, r), true
				}
			}
		}
		p.Newest = a.Newest
	}
	c.settle(p, a)
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

type sentRecord struct {
	counter uint64
	at      time.Time
	top     uint64 // the newest stamp the packet carried (topBefore)
}

func (c *Core) recordSent(counter uint64, at time.Time, top uint64) {
	c.sent[counter%sentRing] = sentRecord{counter, at, top}
}

func (c *Core) sentAt(counter uint64) (time.Time, bool) {
	r := c.sent[counter%sentRing]
	return r.at, r.counter == counter
}

// Peers appends what the core knows of each receiver that has acked, or
// said it speaks another protocol version, as of now, to dst.
func (c *Core) Peers(dst []PeerStatus, now time.Time) []PeerStatus {
	from := len(dst)
	for _, p := range c.peers {
		st := p.PeerStatus
		st.SRTT, st.RTTVar = p.rtt.SRTT, p.rtt.RTTVar
		st.Live = c.live(p, now)
		dst = append(dst, st)
	}
	return c.withVersions(dst, from)
}

// linkIndex is the index of link l in Dests, or for a plaintext ack (l
// nil, --insecure) of the destination at from; -1 for none.
func (c *Core) linkIndex(l *link, from string) int {
	for i, d := range c.links {
		if d == l || (l == nil && d.init == nil && !d.OneWay && d.Addr == from) {
			return i
		}
	}
	return -1
}
