package sender

import "time"

// Redundant bursts (seed 003): after a new event, while some receiver is
// live, the queue is re-sent every burst gap until every live receiver has
// acked a packet that carries the event, or for one Interval, after which
// the regular resend takes over. A lost packet then costs a burst gap, not
// an Interval. With no live receiver (one-way use, no acks) there is no
// burst: the plain queue behaviour.

// DefaultBurstGap is the gap between re-sends before an RTT is known.
const DefaultBurstGap = 10 * time.Millisecond

// Bounds of the burst gap. The gap is a quarter of the smallest smoothed
// RTT: acks cannot stop a burst sooner than an RTT, so a shorter gap would
// only add packets, and a longer one would make a loss cost more than the
// round trip that notices it. The floor was 5 ms, which on a LAN (RTT well
// under a millisecond) made every lost packet cost 5 ms, and two in a row
// (the p99 at 10 % loss) 10 ms, however short the round trip (issue 14).
// 1 ms keeps a loss about an RTT-scaled gap there; links with an RTT over
// 20 ms keep their gaps (and packet rates) as they were.
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
		c.burst.at = now.Add(c.burstGap(now))
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
