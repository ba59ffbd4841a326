// Package netsim impairs datagrams the way real networks do: independent and
// bursty (Gilbert–Elliott) loss, delay and jitter, duplication and
// reordering. Network is an in-memory network of net.PacketConns for tests:
// it uses only channels and timers, so it runs in virtual time inside
// testing/synctest, and for a given seed and order of writes its decisions
// are the same every run. Wrap impairs the writes of a real socket, and Proxy
// is a UDP impairment proxy (`keyrelay impair`).
package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the impairment of one direction of a link. The zero Config is a
// perfect link.
type Config struct {
	// Loss is the probability that a datagram is dropped, independently.
	Loss float64
	// BurstEnter and BurstExit are the per-datagram probabilities of moving
	// into and out of a loss burst (Gilbert–Elliott); while in a burst,
	// datagrams are dropped with probability BurstLoss (1 if 0).
	BurstEnter, BurstExit, BurstLoss float64
	// Delay is the one-way delay; Jitter spreads it uniformly over
	// [Delay-Jitter, Delay+Jitter] (never below zero).
	Delay, Jitter time.Duration
	// Duplicate is the probability that a datagram is delivered twice; the
	// copy has its own delay.
	Duplicate float64
	// Reorder is the probability that a datagram is held back a further
	// ReorderDelay (2×Jitter, or 10ms, if 0), so later ones overtake it.
	Reorder      float64
	ReorderDelay time.Duration
	// Seed seeds the random decisions.
	Seed uint64
}

// Validate reports the first out-of-range knob.
func (c Config) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"loss", c.Loss}, {"burst-enter", c.BurstEnter}, {"burst-exit", c.BurstExit}, {"burst-loss", c.BurstLoss}, {"duplicate", c.Duplicate}, {"reorder", c.Reorder}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("%s %v out of range 0..1", p.name, p.v)
		}
	}
	if c.BurstEnter > 0 && c.BurstExit == 0 {
		return errors.New("burst-enter needs a burst-exit above 0, or bursts never end")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"delay", c.Delay}, {"jitter", c.Jitter}, {"reorder-delay", c.ReorderDelay}} {
		if d.v < 0 || d.v > time.Minute {
			return fmt.Errorf("%s %v out of range 0..1m", d.name, d.v)
		}
	}
	return nil
}

// Stats count what a link did. Safe for concurrent use.
type Stats struct {
	Sent, Dropped, Duplicated, Reordered, Delivered, Overflow atomic.Int64
}

// StatsSnapshot is a copy of Stats.
type StatsSnapshot struct {
	Sent, Dropped, Duplicated, Reordered, Delivered, Overflow int64
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() StatsSnapshot {
	return StatsSnapshot{s.Sent.Load(), s.Dropped.Load(), s.Duplicated.Load(), s.Reordered.Load(), s.Delivered.Load(), s.Overflow.Load()}
}

func (s StatsSnapshot) String() string {
	return fmt.Sprintf("%d sent, %d dropped, %d duplicated, %d reordered, %d delivered", s.Sent, s.Dropped, s.Duplicated, s.Reordered, s.Delivered)
}

// impairer makes the decisions for one direction. Safe for concurrent use.
type impairer struct {
	mu    sync.Mutex
	cfg   Config
	rng   *rand.Rand
	burst bool
	down  bool
	stats Stats
}

func newImpairer(c Config) *impairer {
	return &impairer{cfg: c, rng: rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))}
}

// plan decides the fate of one datagram: the delays after which its copies
// are delivered (none: dropped).
func (im *impairer) plan() []time.Duration {
	im.mu.Lock()
	defer im.mu.Unlock()
	c := &im.cfg
	im.stats.Sent.Add(1)
	if im.down {
		im.stats.Dropped.Add(1)
		return nil
	}
	if c.BurstEnter > 0 {
		if im.burst {
			if im.rng.Float64() < c.BurstExit {
				im.burst = false
			}
		} else if im.rng.Float64() < c.BurstEnter {
			im.burst = true
		}
		bl := c.BurstLoss
		if bl == 0 {
			bl = 1
		}
		if im.burst && im.rng.Float64() < bl {
			im.stats.Dropped.Add(1)
			return nil
		}
	}
	if c.Loss > 0 && im.rng.Float64() < c.Loss {
		im.stats.Dropped.Add(1)
		return nil
	}
	copies := 1
	if c.Duplicate > 0 && im.rng.Float64() < c.Duplicate {
		copies = 2
		im.stats.Duplicated.Add(1)
	}
	out := make([]time.Duration, copies)
	for i := range out {
		d := c.Delay
		if c.Jitter > 0 {
			d += time.Duration(im.rng.Int64N(int64(2*c.Jitter)+1)) - c.Jitter
		}
		if c.Reorder > 0 && im.rng.Float64() < c.Reorder {
			rd := c.ReorderDelay
			if rd == 0 {
				rd = 2 * c.Jitter
			}
			if rd == 0 {
				rd = 10 * time.Millisecond
			}
			d += rd
			im.stats.Reordered.Add(1)
		}
		out[i] = max(d, 0)
	}
	return out
}

// setLoss changes the loss probability from the next datagram on; the
// decisions go on from the same random stream.
func (im *impairer) setLoss(loss float64) {
	im.mu.Lock()
	im.cfg.Loss = loss
	im.mu.Unlock()
}

func (im *impairer) setDown(down bool) {
	im.mu.Lock()
	im.down = down
	im.mu.Unlock()
}

// schedule runs deliver after each planned delay; a zero delay delivers at
// once, in the caller's goroutine, which keeps a perfect link in order.
func (im *impairer) schedule(deliver func()) {
	for _, d := range im.plan() {
		if d == 0 {
			deliver()
		} else {
			time.AfterFunc(d, deliver)
		}
	}
}
