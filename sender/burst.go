package sender

import (
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
)

// Redundant bursts (PROTOCOL.md §7.1): after a new event, while some
// receiver is live, the queue is re-sent every burst gap until every live
// receiver has acked a packet that carries the event, or for one Interval,
// after which the regular resend takes over. A lost packet then costs a
// burst gap, not an Interval. With no live receiver (one-way use, no acks)
// there is no burst: the plain queue behaviour.
//
// Most bursts end before their first re-send: the receiver acks a packet
// that typed something at once, not held back by its ack coalescing
// (PROTOCOL.md §9, receiver.MinAckInterval), so on a LAN the ack is back in
// about an RTT, well within MinBurstGap. A re-send goes when the packet or
// its ack was lost, or the ack is later than the gap; each one is news to
// the receiver and draws an ack of its own, so a re-send too early costs two
// datagrams (figures in BENCHMARKS.md).

// DefaultBurstGap is the gap between re-sends before an RTT is known.
const DefaultBurstGap = 10 * time.Millisecond

// Bounds of the burst gap. The gap is a quarter of the smallest smoothed
// RTT: acks cannot stop a burst sooner than an RTT, so a shorter gap would
// only add packets, and a longer one would make a loss cost more than the
// round trip that notices it. The floor is low for a LAN, whose RTT is well
// under a millisecond: every lost packet costs at least the floor, and two
// in a row (the p99 at 10 % loss) twice that, however short the round trip
// (BENCHMARKS.md, Burst gap floor).
const (
	MinBurstGap = time.Millisecond
	MaxBurstGap = 20 * time.Millisecond
)

// burst is the state of the redundant re-sends.
type burst struct {
	armed  bool      // a re-send is due at at
	at     time.Time // when
	target uint64    // the first packet carrying the newest event
	until  time.Time // the regular resend takes over then
	// doublings of the gap while every receiver is overdue (armBurst)
	doublings uint
}

// next is when the burst needs a step; zero when not armed.
func (b *burst) next() time.Time {
	if !b.armed {
		return time.Time{}
	}
	return b.at
}

func (b *burst) due(now time.Time) bool { return b.armed && !now.Before(b.at) }

func (b *burst) stop() { b.armed = false }

// burstGap derives the gap from the smallest smoothed RTT of the live
// receivers: a quarter of it, within MinBurstGap..MaxBurstGap.
func (c *Core) burstGap(now time.Time) time.Duration {
	var srtt time.Duration
	for _, p := range c.peers {
		if c.live(p, now) && p.rtt.Known() && (srtt == 0 || p.rtt.SRTT < srtt) {
			srtt = p.rtt.SRTT
		}
	}
	if srtt == 0 {
		return DefaultBurstGap
	}
	return min(max(srtt/4, MinBurstGap), MaxBurstGap)
}

// startBurst begins (or extends) a burst for the packet just sent.
func (c *Core) startBurst(now time.Time) {
	if _, live := c.minAcked(now); !live {
		return
	}
	c.burst.target = c.keys.nonce // the counter of the packet just sent
	c.burst.until = now.Add(c.cfg.Interval)
	c.armBurst(now)
}

// armBurst schedules the next re-send unless one is scheduled.
func (c *Core) armBurst(now time.Time) {
	if !c.burst.armed {
		c.burst.armed = true
		gap := c.burstGap(now)
		if !c.holding(now) && c.allOverdue(now) {
			// No receiver answers what a burst asks within a round trip:
			// each further step waits twice as long, up to SilentGap,
			// instead of probing at the burst gap until it is silent
			// (a second: about a thousand packets on a LAN).
			c.burst.doublings = min(c.burst.doublings+1, 16)
			gap = min(gap<<c.burst.doublings, max(gap, c.paceGap(now)))
		} else {
			c.burst.doublings = 0
		}
		c.burst.at = now.Add(gap)
		if until := c.pacedUntil(now); until.After(c.burst.at) {
			// Every receiver is silent: a step before then would send
			// nothing, only wake the loop.
			c.burst.at = until
		}
	}
}

// burstStep re-sends the queue unless the burst is over. While events wait
// in the backlog it keeps going: each re-send probes for the acks that let
// them in, so the end of an outage is noticed within a burst gap.
func (c *Core) burstStep(now time.Time) {
	c.burst.armed = false
	if len(c.backlog) == 0 && (now.After(c.burst.until) || c.allAcked(c.burst.target, now)) {
		return
	}
	c.stats.Bursts++
	c.send(now)
	c.armBurst(now)
}

// Pacing to a silent receiver (PROTOCOL.md §9). A receiver answers a packet
// with news (an event, a gap in the counters, or one sent sooner than the
// receiver's BusyGap after the one before: every burst) within a round trip.
// One that has left such a packet unanswered for longer is overdue, and one
// also unheard for over SilentAfter is silent: stopped, restarted, or cut
// off. Every event and every burst would otherwise go to it at full speed,
// most of them bursts probing, every millisecond, for the acks that let the
// backlog in (PROTOCOL.md §9, Pacing to a silent receiver).
//
// While every receiver heard is overdue, each burst step waits twice as
// long as the one before, up to SilentGap (armBurst). A silent receiver
// gets at most one packet per SilentGap, each carrying the whole queue, so
// the events and bursts in between are folded into it and it loses
// nothing the queue (and the backlog behind it) keeps. The pace is fixed,
// not exponential: its first answer ends the pacing, so a receiver that
// comes back (restarted, or its link back) is noticed within SilentGap and
// a round trip however long it was gone, and a few packets a second cost
// next to nothing.
//
// While the queue holds a key pressed an Interval ago or more (not a tap's)
// and no event waits in the backlog (the key's release could be one),
// nothing is paced: the sender cannot tell a stopped receiver from one whose
// acks alone are lost, and a live one releases a held key when too few
// packets get through for its allowance (DESIGN.md invariant 5, PROTOCOL.md
// §7.2): pacing even the bursts alone lets a held key be released now and
// then at heavy loss (PROTOCOL.md §9, Pacing to a silent receiver). A
// stopped receiver then gets the unpaced schedule: the bursts that ask for
// an ack up to PeerTimeout, then the resend every Interval. A receiver never
// heard (one-way, broadcast, acks off, a handshake unanswered: initiations
// back off on their own, §7.1) is not paced: nothing says it is there.

// SilentAfter: an overdue receiver unheard this long is silent, and paced.
// A live idle receiver acks about once a second (receiver.IdleAckInterval),
// and is asked for an ack at 60 % of PeerTimeout (Core.quiet), so only one
// that does not answer that either is silent.
const SilentAfter = time.Second

// SilentGap is the least gap between two packets to a silent receiver:
// about 4 a second (3.3 with the default --interval, whose resends carry
// them), instead of every event and burst.
const SilentGap = 250 * time.Millisecond

// minAnswerWait is the least time a packet with news is given to be
// answered before its receiver is overdue: well over a LAN's round trip
// and the receiver's ack coalescing (receiver.MinAckInterval, 1 ms);
// longer round trips get SRTT + 4·RTTVAR (RFC 6298's timeout).
const minAnswerWait = 100 * time.Millisecond

// busyGapMs is the receiver's BusyGap (PROTOCOL.md §9 rule 4), in the
// milliseconds of the packets' clock: a packet sent sooner after the one
// before is news.
const busyGapMs = 75

// pace is what a link's pacing knows of the packets sent on it.
type pace struct {
	counter, clock, top uint64    // the last packet sent on the link
	asked               uint64    // the first packet with news not answered yet (0: none)
	askedAt             time.Time // when it went
	next                time.Time // silent: the next packet may go then
}

// overdue reports whether the receiver of l has left a packet with news
// unanswered for over a round trip (at least minAnswerWait) at now.
func (c *Core) overdue(l *link, now time.Time) bool {
	p := c.peerOf(l)
	if p == nil || l.pace.asked == 0 || p.Newest >= l.pace.asked {
		return false
	}
	return now.Sub(l.pace.askedAt) > max(p.rtt.SRTT+4*p.rtt.RTTVar, minAnswerWait)
}

// silent reports whether the receiver of l is silent at now: overdue, and
// unheard for over SilentAfter.
func (c *Core) silent(l *link, now time.Time) bool {
	return c.overdue(l, now) && now.Sub(c.peerOf(l).LastHeard) > SilentAfter
}

// allOverdue reports whether every receiver heard is overdue at now (and
// there is one): the bursts that wait for their acks back off (armBurst).
func (c *Core) allOverdue(now time.Time) bool {
	heard := false
	for _, l := range c.links {
		if c.peerOf(l) == nil {
			continue
		}
		if !c.overdue(l, now) {
			return false
		}
		heard = true
	}
	return heard
}

// paced reports whether the packet being sent at now is held back from l:
// its receiver is silent and its SilentGap has not passed, unless a key is
// held (see above).
func (c *Core) paced(l *link, now time.Time) bool {
	if !c.silent(l, now) {
		return false
	}
	if c.holding(now) {
		return false
	}
	if now.Before(l.pace.next) {
		c.stats.Paced++
		return true
	}
	return false
}

// holding reports whether the queue holds a key pressed an Interval or
// more before now, with no event waiting in the backlog: no pacing then.
func (c *Core) holding(now time.Time) bool {
	return len(c.backlog) == 0 && c.holdsLong(now)
}

// holdsLong reports whether the queue holds a key pressed at least an
// Interval before now: one the receiver's liveness keeps held. A tap's
// key is up again by the next resend, and a packet carries its release
// as it would its press.
func (c *Core) holdsLong(now time.Time) bool {
	clock := c.clock(now)
	evs := c.queue.Events()
	for i, e := range evs {
		if e.Kind != eventqueue.Down || e.Stamp+uint64(c.cfg.Interval/time.Millisecond) > clock {
			continue
		}
		newest := true // no newer event of its key: still held
		for _, n := range evs[:i] {
			newest = newest && n.Key != e.Key
		}
		if newest {
			return true
		}
	}
	return false
}

// sentOn notes packet counter, carrying events up to stamp top, sent on l
// at now: whether the receiver must answer it at once (news), and the
// next packet's earliest time while it is silent.
func (c *Core) sentOn(l *link, counter, top uint64, now time.Time) {
	ps := &l.pace
	clock := c.clock(now)
	news := counter != ps.counter+1 || clock < ps.clock+busyGapMs || top > ps.top
	if p := c.peerOf(l); news && p != nil && (ps.asked == 0 || p.Newest >= ps.asked) {
		ps.asked, ps.askedAt = counter, now
	}
	ps.counter, ps.clock, ps.top = counter, clock, top
	if c.silent(l, now) {
		ps.next = now.Add(c.linkGap(l, now))
	}
}

// linkGap is the least gap between packets to l's silent receiver at now:
// SilentGap, but MaxBurstGap in the last SilentAfter of its Outage while
// events wait for it (the backlog, or the end for its ack of the final
// state). A receiver back before its Outage ends must hear of them, and in
// time to ack before they are given up (lossless typing, backlog.go): at
// SilentGap, one back in the last half second gets two tries, which heavy
// loss can take both of; at MaxBurstGap about 25 fit in that half second
// (PROTOCOL.md §9, Pacing to a silent receiver).
func (c *Core) linkGap(l *link, now time.Time) time.Duration {
	waiting := len(c.backlog) > 0 || c.phase == flushing || c.phase == lingering
	if p := c.peerOf(l); waiting && p != nil && c.owed(p, now) && now.Sub(p.LastHeard) >= c.cfg.Outage-SilentAfter {
		return MaxBurstGap
	}
	return SilentGap
}

// paceGap is the least linkGap of the receivers heard at now: the longest
// a burst step waits while they are all overdue.
func (c *Core) paceGap(now time.Time) time.Duration {
	gap := SilentGap
	for _, l := range c.links {
		if c.peerOf(l) != nil {
			gap = min(gap, c.linkGap(l, now))
		}
	}
	return gap
}

// answered ends l's pacing: its receiver answered a handshake (a
// restarted one), as good as an ack for knowing it is there.
func (l *link) answered() { l.pace.asked = 0 }

// pacedUntil is when the next packet may go to some destination, when
// every destination is silent at now; zero otherwise (armBurst).
func (c *Core) pacedUntil(now time.Time) time.Time {
	if c.holding(now) {
		return time.Time{}
	}
	var until time.Time
	for _, l := range c.links {
		if !c.silent(l, now) {
			return time.Time{}
		}
		until = earliest(until, l.pace.next)
	}
	return until
}
