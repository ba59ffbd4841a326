package report

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
)

// lanLink is a simulated LAN: 150 µs ± 50 µs one-way delay, so the sender's
// bursts re-send at their least gap (sender.MinBurstGap, 1 ms) and the
// receiver's ack interval is what holds an ack back, if anything does.
var lanLink = netsim.Config{Delay: 150 * time.Microsecond, Jitter: 50 * time.Microsecond}

// handshakeLead is how long the sender runs before the trace's first key
// in TestMeasureAckInterval: long enough for the handshake to be over in
// every seed (its retries back off to a second: at 40 % loss both ways one
// in 0.36 gets through, so 20 or so tries all fail in about one seed of
// 10,000), so that its retries, which no ack interval changes, do not
// swamp the tail.
const handshakeLead = 20 * time.Second

// TestMeasureAckInterval compares receiver ack intervals (Config.AckInterval;
// PROTOCOL.md §9) on lanLink at 5-40 % loss in both directions: the typing
// trace, feedback on, over MEASURE_SEEDS seeds (30 unless set) per loss and
// interval, in virtual time, so each figure is the same every run. It logs,
// per loss and interval: the key-down latency's mean, p50, p99, p99.9 and
// max over every seed's key-downs together; the median and the spread of
// the per-seed p99s; lost key-downs; the key-up latency's p99 and p99.9
// (how long a released key stays down) and the longest stuck key; packets
// per second; and, for each interval against the first, in how many seeds
// its p99 was lower and higher. It fails if any key-down is lost or any
// key-up never comes (lossless typing, PROTOCOL.md §7.1). make measure-acks
// runs it (KEYRELAY_MEASURE=1): about 15 s for 30 seeds, 2 to 4 minutes
// for MEASURE_SEEDS=300, on 2 shared cores.
func TestMeasureAckInterval(t *testing.T) {
	if os.Getenv("KEYRELAY_MEASURE") == "" {
		t.Skip("set KEYRELAY_MEASURE=1 (make measure-acks) to compare ack intervals")
	}
	seeds := measureSeeds(t)
	intervals := []time.Duration{receiver.MinAckInterval, 2 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}
	losses := []int{5, 10, 20, 30, 40}

	// results[loss][interval][seed]
	results := make([][][]cell, len(losses))
	for li := range losses {
		results[li] = make([][]cell, len(intervals))
		for ii := range intervals {
			results[li][ii] = make([]cell, seeds)
		}
	}
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for li, loss := range losses {
			for ii, iv := range intervals {
				for seed := range seeds {
					t.Run(fmt.Sprintf("loss=%d%%/ack=%v/seed=%d", loss, iv, seed+1), func(t *testing.T) {
						t.Parallel()
						link := lanLink
						link.Loss, link.Seed = float64(loss)/100, uint64(seed+1)
						c := simulate(t, link, true, iv, handshakeLead)
						mu.Lock()
						results[li][ii][seed] = c
						mu.Unlock()
					})
				}
			}
		}
	})

	var out strings.Builder
	fmt.Fprintf(&out, "simulated LAN (%v ± %v one way), typing trace %v after the start, feedback on, %d seeds per row; key-down latency in ms\n", lanLink.Delay, lanLink.Jitter, handshakeLead, seeds)
	out.WriteString("loss  ack    downs  mean   p50    p99  p99.9     max   seed-p99 median [min..max]  lost  ups-missing  up-p99  up-p99.9  stuck-max  packets/s  p99 lower/higher than 1ms (seeds)\n")
	for li, loss := range losses {
		for ii, iv := range intervals {
			var downs, ups []time.Duration
			var seedP99 []time.Duration
			lost, missing := 0, 0
			var stuck time.Duration
			var pkts float64
			for _, c := range results[li][ii] {
				downs = append(downs, c.downs...)
				ups = append(ups, c.ups...)
				seedP99 = append(seedP99, pct(c.downs, 99))
				lost += c.lostDowns
				missing += len(c.downs) + c.lostDowns - len(c.ups)
				stuck = max(stuck, c.maxStuck)
				pkts += c.packetsPerSec / float64(seeds)
			}
			slices.Sort(downs)
			slices.Sort(ups)
			slices.Sort(seedP99)
			var sum time.Duration
			for _, d := range downs {
				sum += d
			}
			p999 := downs[min(len(downs)-1, len(downs)*999/1000)]
			cmp := "-"
			if ii > 0 {
				lower, higher := 0, 0
				for s := range seeds {
					a, b := pct(results[li][ii][s].downs, 99), pct(results[li][0][s].downs, 99)
					switch {
					case a < b:
						lower++
					case a > b:
						higher++
					}
				}
				cmp = fmt.Sprintf("%d/%d", lower, higher)
			}
			fmt.Fprintf(&out, "%3d%%  %-5v  %5d  %4.2f  %4s  %5s  %5s  %6s   %5s [%s..%s]  %4d  %11d  %6s  %8s  %9s  %9.1f  %s\n",
				loss, iv, len(downs), float64(sum)/float64(len(downs))/float64(time.Millisecond), ms(pct(downs, 50)), ms(pct(downs, 99)), ms(p999), ms(pct(downs, 100)),
				ms(seedP99[len(seedP99)/2]), ms(seedP99[0]), ms(seedP99[len(seedP99)-1]),
				lost, missing, ms(pct(ups, 99)), ms(ups[min(len(ups)-1, len(ups)*999/1000)]), ms(stuck), pkts, cmp)
			if lost > 0 || missing > 0 {
				t.Errorf("loss %d %%, ack interval %v: %d key-downs lost and %d key-ups never came, want none (lossless typing, PROTOCOL.md §7.1)", loss, iv, lost, missing)
			}
		}
	}
	t.Log("\n" + out.String())
}

// measureSeeds is how many seeds a measurement runs per row: MEASURE_SEEDS,
// or 30.
func measureSeeds(t *testing.T) int {
	t.Helper()
	s := os.Getenv("MEASURE_SEEDS")
	if s == "" {
		return 30
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("MEASURE_SEEDS=%q: want a whole number of seeds, 1 or more", s)
	}
	return n
}
