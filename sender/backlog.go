package sender

import (
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
)

// Lossless typing. The plain queue drops an event when N newer ones have
// pushed it out, received or not: a burst of typing longer than the queue
// during an outage loses key-downs for good. While feedback flows, the
// sender holds a new event back, in a backlog, whenever adding it would push
// out an event that some receiver owed events has not applied yet (its acked stamp
// is older), and adds it when the acks move on. With no receiver owed
// events (no feedback: one-way, broadcast; or every receiver silent for
// Outage, 5 s by default, though reported silent after PeerTimeout) the
// plain queue behaviour applies and the backlog drains at once. A sender
// that reads feedback assumes a receiver during its first PeerTimeout
// (peers.go: owed, inGrace).

// BacklogLimit bounds the events waiting for acks. Past it the oldest
// waiting event is added anyway (plain queue behaviour), counted in
// Stats.Overflow and reported.
const BacklogLimit = 1024

// mayAdd reports whether adding ev at now loses nothing a live receiver
// still needs.
func (c *Core) mayAdd(ev keyEvent, now time.Time) bool {
	acked, live := c.minAcked(now)
	if !live {
		return true
	}
	victim, adds := c.queue.Victim(c.event(ev, now))
	return !adds || victim.Kind == eventqueue.None || victim.Stamp <= acked
}

// hold puts ev at the end of the backlog, making room if it is full.
func (c *Core) hold(ev keyEvent, now time.Time) {
	if len(c.backlog) >= BacklogLimit {
		c.stats.Overflow++
		if c.stats.Overflow == 1 {
			c.logf("backlog full (%d events waiting for acks): adding without waiting; keys typed during this outage may be lost", BacklogLimit)
		}
		c.addNow(c.backlog[0], now)
		c.backlog = c.backlog[1:]
	}
	c.stats.Held++
	c.backlog = append(c.backlog, ev)
	c.armBurst(now)
}

// drain adds the waiting events, in order, as far as the acks allow. While
// flushing, progress restarts the stuck deadline: the backlog is given up
// only after Outage without any; after a signal, the deadline stands
// (Stop).
func (c *Core) drain(now time.Time) {
	n := 0
	for n < len(c.backlog) && c.mayAdd(c.backlog[n], now) {
		c.addNow(c.backlog[n], now)
		n++
	}
	if n == 0 {
		return
	}
	c.backlog = c.backlog[n:]
	if len(c.backlog) == 0 {
		c.backlog = nil
	}
	if c.phase == flushing && !c.interrupted {
		c.stuckAt = now.Add(c.patience())
	}
}
