package report

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/netsim"
)

// TestMeasureStart measures the keys typed at the start of a session, while
// the handshake runs (PROTOCOL.md §7.1, §8.2): the report's typing trace from
// 200 ms after the sender starts (no lead), on the report's link (20 ms ±
// 5 ms one way, sealed, feedback on) at 10, 30 and 50 % loss both ways and
// bursty loss, over MEASURE_SEEDS seeds (30 unless set) each, in virtual
// time. It logs, per loss: the key-down latency's p50, p99 and max over every
// seed's key-downs together; the median and the largest of the per-seed p99s
// (what BENCHMARKS.md's one seed shows); the slowest of each seed's first
// five key-downs (the keys that wait for the handshake), median and max;
// lost key-downs; the longest stuck key; packets per second. It fails if
// a key-down is lost (lossless typing, PROTOCOL.md §7.1). make measure-start
// runs it (KEYRELAY_MEASURE=1).
func TestMeasureStart(t *testing.T) {
	if os.Getenv("KEYRELAY_MEASURE") == "" {
		t.Skip("set KEYRELAY_MEASURE=1 (make measure-start) to measure the start of a session")
	}
	seeds := measureSeeds(t)
	base := netsim.Config{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}
	type profile struct {
		name string
		link netsim.Config
	}
	var profiles []profile
	for _, l := range []int{10, 30, 50} {
		p := base
		p.Loss = float64(l) / 100
		profiles = append(profiles, profile{fmt.Sprintf("%d %%", l), p})
	}
	bursty := base
	bursty.BurstEnter, bursty.BurstExit = 0.02, 0.2 // as TestWriteReport's
	profiles = append(profiles, profile{"bursty", bursty})

	results := make([][]cell, len(profiles))
	firsts := make([][]time.Duration, len(profiles)) // per seed: the slowest of the first five key-downs
	for i := range profiles {
		results[i] = make([]cell, seeds)
		firsts[i] = make([]time.Duration, seeds)
	}
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for pi, p := range profiles {
			for seed := range seeds {
				t.Run(fmt.Sprintf("%s/seed=%d", p.name, seed+1), func(t *testing.T) {
					t.Parallel()
					link := p.link
					link.Seed = uint64(seed + 1)
					c, first := simulateFirst(t, link)
					mu.Lock()
					results[pi][seed], firsts[pi][seed] = c, first
					mu.Unlock()
				})
			}
		}
	})

	var out strings.Builder
	fmt.Fprintf(&out, "report link (%v ± %v one way), typing trace from the start, feedback on, %d seeds per row; ms\n", base.Delay, base.Jitter, seeds)
	out.WriteString("loss     downs  p50    p99     max   seed-p99 median  max   first-5 median  max  lost  stuck-max  packets/s\n")
	for pi, p := range profiles {
		var downs, seedP99 []time.Duration
		lost := 0
		var stuck time.Duration
		var pkts float64
		for _, c := range results[pi] {
			downs = append(downs, c.downs...)
			seedP99 = append(seedP99, pct(c.downs, 99))
			lost += c.lostDowns
			stuck = max(stuck, c.maxStuck)
			pkts += c.packetsPerSec / float64(seeds)
		}
		slices.Sort(downs)
		slices.Sort(seedP99)
		f := slices.Sorted(slices.Values(firsts[pi]))
		fmt.Fprintf(&out, "%-7s  %5d  %4s  %6s  %6s   %6s  %6s   %6s  %6s  %4d  %9s  %9.1f\n",
			p.name, len(downs), ms(pct(downs, 50)), ms(pct(downs, 99)), ms(pct(downs, 100)),
			ms(seedP99[len(seedP99)/2]), ms(seedP99[len(seedP99)-1]), ms(f[len(f)/2]), ms(f[len(f)-1]),
			lost, ms(stuck), pkts)
		if lost > 0 {
			t.Errorf("%s loss: %d key-downs lost, want none (lossless typing, PROTOCOL.md §7.1)", p.name, lost)
		}
	}
	t.Log("\n" + out.String())
}

// simulateFirst is simulate with no lead, and the slowest of the trace's
// first five key-downs: those typed within about a second of the start.
func simulateFirst(t *testing.T, link netsim.Config) (cell, time.Duration) {
	var first time.Duration
	c := simulateWith(t, link, true, 0, 0, func(i int, d time.Duration) {
		if i < 5 {
			first = max(first, d)
		}
	})
	return c, first
}
