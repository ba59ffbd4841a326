package receiver

import (
	"math"
	"time"
)

// A session's allowance is how long it may stay silent before it ends and
// its keys are released (DESIGN.md invariant 5, PROTOCOL.md §7.2): the
// timeout, made longer while the session visibly loses packets, so a key
// held through heavy loss is not released and pressed again between the
// packets that get through.
//
// The receiver knows how many packets it missed: a sender numbers every
// packet, so a packet whose counter is 5 past the one before says that 4
// were lost (or are late: a late one, when it comes, counts as arrived). m,
// the mean counters per packet that arrives, is 1/(1 − loss), and the
// timeout times m is the time in which as many packets get through as do in
// the timeout without loss. With the loss known exactly, a sender that sends
// every interval I would be released by mistake after a packet with a chance
// of loss^(m·timeout/I), below e^(−timeout/I) at any loss (loss ≤
// e^(−(1−loss))), where the timeout alone gives loss^(timeout/I). The loss
// is estimated from the last 8 or so packets, which at heavy loss is rough,
// and an estimate too low is what releases a held key; so the allowance
// takes m one standard error high: m + √(m(m−1)/n) timeouts, n the packets
// it is estimated from, at most MaxAllowance. Without loss m is 1, the error
// 0, and the allowance exactly the timeout.
//
// A session's first packets say little of its loss: a few that get through
// by luck at heavy loss make the estimate low just when the gaps that follow
// are long. Later the estimate has its past to steady it. So once a session
// loses a packet, its estimate starts from a prior of heavy loss:
// priorWeight packets MaxAllowance counters apart (90 % loss), fading with
// each packet counted as the past does (to a third after 8, a tenth after
// 17), and weighing in proportion to the loss seen (m − 1, fully from m = 2:
// 50 %), so that a session losing a packet now and then is not taken for one
// losing most. A session that has lost nothing keeps exactly the timeout.
// BENCHMARKS.md works the figures through (the chances at 80 and 90 %
// loss, the first packets' luck, the allowances and holds measured by make
// measure).
//
// The cost is that a killed sender's keys are released later: after its
// allowance, which Status shows, and which the log says as it changes
// magnitude.

// MaxAllowance bounds a session's allowance: at most this many timeouts
// (10 s with recv's default --timeout).
const MaxAllowance = 10

const (
	// paceDecay weighs the estimate's past by this at each packet applied:
	// it follows about the last 8 packets, so it learns a loss within a few
	// packets and forgets one within a second at the idle pace.
	paceDecay = 7.0 / 8
	// maxGap: one gap counts for at most this many counters, so an outage
	// weighs no more than heavy loss does. Well above MaxAllowance, as the
	// gaps at 90 % loss often are.
	maxGap = 4 * MaxAllowance
	// allowanceSteps: an allowance is a whole number of sixteenths of the
	// timeout, so it changes (and Status is published) when the loss does,
	// not at every packet.
	allowanceSteps = 16
	// priorWeight: the packets' worth of heavy loss a session's estimate
	// starts from (see above).
	priorWeight = 6
)

// pace is a session's estimate of the counters its sender spends per
// packet that arrives here: two sums decayed by paceDecay at each packet
// applied, whose ratio is the mean over the recent packets (over all of
// them while they are few).
type pace struct {
	base    uint64  // counters up to here are not counted (sent before this receiver listened)
	span    float64 // counters the applied packets moved the session on by
	arrived float64 // packets that arrived among them, late ones included
	aged    float64 // 1 − paceDecay^k after k packets counted: how far the prior has faded
	logged  int     // the magnitude (allowanceMagnitude) last logged
}

// paced counts a packet of session s applied at now: its counter is above
// the session's newest so far, and its sender's clock (ms) is clock.
func (r *Receiver) paced(s *session, counter, clock uint64, now time.Time) {
	p := &s.pace
	if s.counter == 0 && s.mode == handshaken {
		// A handshaken session: before its first queue packet the
		// sender sent initiations, backing off (PROTOCOL.md §8.3), so
		// most counters went nowhere and their absence is no loss. The
		// initiations heard count as packets that arrived (initPace),
		// fading the prior of heavy loss; the counters before this
		// packet say nothing.
		*p = s.inits.pace
		p.base = counter
	} else if s.counter == 0 && !r.listened(now, clock) {
		// The first packet heard of a sender that started before this
		// receiver listened (a restarted receiver): the counters before
		// it say nothing of loss.
		p.base = counter
	} else {
		p.count(counter - max(s.counter, p.base))
	}
	r.setAllowance(s)
}

// count applies a packet that arrived gap counters after the newest before
// it (gap − 1 lost).
func (p *pace) count(gap uint64) {
	p.span = p.span*paceDecay + float64(min(gap, maxGap))
	p.arrived = p.arrived*paceDecay + 1
	p.aged = 1 - (1-p.aged)*paceDecay
}

// initPace is the pace of a handshaken session's initiations heard before
// its first queue packet: each newer one is a packet that arrived. The
// counters between them say nothing of loss: initiations back off, and
// the counters of the packets sent meanwhile went to no one.
type initPace struct {
	newest uint64
	pace   pace
}

// heard counts an initiation of counter c as a packet that arrived. An
// older one (late, or a duplicate) is not counted.
func (p *initPace) heard(c uint64) {
	if c > p.newest {
		p.pace.count(1)
		p.newest = c
	}
}

// listened reports whether this receiver was listening when a sender
// whose clock reads clock (ms) at now started: then a session's first
// packet with counter c says that the c−1 before it were lost.
func (r *Receiver) listened(now time.Time, clock uint64) bool {
	return !r.since.IsZero() && !now.Add(-time.Duration(clock)*time.Millisecond).Before(r.since)
}

// late counts a packet of session s that arrived at now after a newer
// one (reordered, not a duplicate): it was counted as missed when the
// newer one came. Reordering is not loss. Handle applies nothing else of
// it, so a change of the allowance is published here.
func (r *Receiver) late(s *session, counter uint64, now time.Time) {
	if counter <= s.pace.base || s.replaced {
		return
	}
	s.pace.arrived++
	r.setAllowance(s)
	r.publish(now)
}

// allowance is how long session s may be silent before Expire ends it.
func (r *Receiver) allowance(s *session) time.Duration {
	if s.allowance == 0 {
		return r.cfg.Timeout
	}
	return s.allowance
}

// mean is the estimate of the counters per packet that arrives, at least
// 1.
func (p *pace) mean() float64 {
	if p.arrived == 0 {
		return 1
	}
	return max(p.span/p.arrived, 1)
}

// timeouts is the allowance in timeouts: the mean, with the prior while it
// has not faded (weighing nothing without loss), one standard error high,
// within 1..MaxAllowance, in allowanceSteps. (The counters per packet that
// arrives are geometric: variance m(m−1).)
func (p *pace) timeouts() float64 {
	m := p.mean()
	if m > 1 {
		w := priorWeight * (1 - p.aged) * min(m-1, 1)
		n := p.arrived + w
		m = (p.span + w*MaxAllowance) / n
		m += math.Sqrt(m * (m - 1) / n)
	}
	m = min(m, MaxAllowance)
	return math.Round(m*allowanceSteps) / allowanceSteps
}

// loss is the share of session's packets lost, as estimated (from its
// packets alone: the prior is no loss seen).
func (p *pace) loss() float64 { return 1 - 1/p.mean() }

// setAllowance derives session s's allowance from its pace, publishes a
// change, and logs a change of magnitude.
func (r *Receiver) setAllowance(s *session) {
	m := s.pace.timeouts()
	a := r.cfg.Timeout
	if r.cfg.Timeout <= math.MaxInt64/MaxAllowance {
		// Exactly the timeout at m = 1, whatever the timeout.
		a += r.cfg.Timeout / allowanceSteps * (time.Duration(m*allowanceSteps) - allowanceSteps)
	}
	if a != r.allowance(s) {
		s.allowance = a
		r.changed = true
	}
	// Said when the allowance reaches a magnitude (2, 4, 8 timeouts) above
	// the one last said, and when it falls a magnitude below that (for 2
	// timeouts: back to the timeout), so a loss that hovers at a boundary
	// is not said at every packet.
	mag := allowanceMagnitude(m)
	switch {
	case mag > s.pace.logged:
		r.logf("session %016x from %s loses about %.0f %% of its packets: its keys are released after %v of silence (timeout %v)",
			s.id, s.addr, 100*s.pace.loss(), a.Round(time.Millisecond), r.cfg.Timeout)
	case s.pace.logged > 0 && m < max(float64(int(1)<<(s.pace.logged-1)), 1+1.0/allowanceSteps):
		r.logf("session %016x from %s loses fewer packets (about %.0f %%): its keys are released after %v of silence (timeout %v)",
			s.id, s.addr, 100*s.pace.loss(), a.Round(time.Millisecond), r.cfg.Timeout)
	default:
		return
	}
	s.pace.logged = mag
}

// allowanceMagnitude is 0 for an allowance below 2 timeouts, 1 below 4, 2
// below 8, and 3 up to MaxAllowance.
func allowanceMagnitude(m float64) int {
	n := 0
	for ; m >= 2; m /= 2 {
		n++
	}
	return n
}
