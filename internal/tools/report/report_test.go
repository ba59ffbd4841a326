// Package report writes BENCHMARKS.md and benchmarks.png (make bench): the
// plain balanced queue against keyrelay's defaults (feedback, bursts,
// lossless typing) on the same simulated channel and typing trace, in
// virtual time, plus real-socket loopback latency, idle CPU, desktop to desktop
// latency over its harness floor, and every benchmark's figures. It runs only
// with KEYRELAY_REPORT=1, so `go test ./...` stays quick; with
// KEYRELAY_MEASURE=1 (make measure-acks) it compares receiver ack
// intervals on a simulated LAN instead.
package report

import (
	"context"
	"fmt"
	"image/color"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

var key = []byte("report-key-0123456789abcdef01234")

// ev is one key event of the trace.
type ev struct {
	at   time.Duration // from the start
	code keys.Key
	down bool
}

// typingTrace is a fixed minute of typing: taps of rotating letters at
// human gaps (60–250 ms), each held 30–90 ms, with a Shift held over some
// of them.
func typingTrace() []ev {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []ev
	t := 200 * time.Millisecond
	for i := range 300 {
		shift := i%17 == 0
		if shift {
			out = append(out, ev{t, keys.Key(keys.ShiftLeft), true})
			t += 20 * time.Millisecond
		}
		c := keys.Key(keys.KeyA) + keys.Key(i%26)
		hold := time.Duration(30+rng.IntN(60)) * time.Millisecond
		out = append(out, ev{t, c, true}, ev{t + hold, c, false})
		t += hold
		if shift {
			t += 10 * time.Millisecond
			out = append(out, ev{t, keys.Key(keys.ShiftLeft), false})
		}
		t += time.Duration(60+rng.IntN(190)) * time.Millisecond
	}
	return out
}

// steps is the trace as a fake.Trace plays it: each event a wait after the
// one before.
func steps(trace []ev) []fake.Step {
	var out []fake.Step
	var last time.Duration
	for _, e := range trace {
		out = append(out, fake.Step{Wait: e.at - last, Key: e.code, Down: e.down})
		last = e.at
	}
	return out
}

// line is one curve of the chart.
type line struct {
	name string
	lat  []time.Duration // sorted
	dash bool
	col  color.Color
}

type profile struct {
	name string
	link netsim.Config
}

type cell struct {
	downs, ups    []time.Duration // sorted latencies
	lostDowns     int
	maxStuck      time.Duration
	packetsPerSec float64
	bytesPerSec   float64
}

// simulate relays the trace over link (both directions) in virtual time,
// the receiver acking at most once per ackInterval per session
// (receiver.MinAckInterval if 0). The trace starts lead after the sender
// does: with a lead of some seconds the handshake is over before the first
// key, so its retries (up to a second apart under loss) do not weigh in
// the key's latency.
func simulate(t *testing.T, link netsim.Config, feedback bool, ackInterval, lead time.Duration) cell {
	return simulateWith(t, link, feedback, ackInterval, lead, nil)
}

// simulateWith is simulate, calling down (if not nil) with each key-down's
// place among the trace's key-downs and its latency.
func simulateWith(t *testing.T, link netsim.Config, feedback bool, ackInterval, lead time.Duration, down func(i int, d time.Duration)) cell {
	trace := typingTrace()
	for i := range trace {
		trace[i].at += lead
	}
	var c cell
	synctest.Test(t, func(t *testing.T) {
		rec := &fake.Recorder{}
		rl := relaytest.Start(t, relaytest.Config{Net: netsim.NewNetwork(link), PSK: key, Feedback: feedback,
			Receiver: receiver.Config{Injector: rec, AckInterval: ackInterval}})
		start := time.Now()
		st, _ := rl.Sender.Run(context.Background(), &fake.Trace{Steps: steps(trace)})
		elapsed := time.Since(start)
		time.Sleep(3 * time.Second)
		rl.Stop()
		// When the receiver injected each key event.
		gotDowns, gotUps := map[keys.Key][]time.Duration{}, map[keys.Key][]time.Duration{}
		for _, a := range rec.Events() {
			if a.Down {
				gotDowns[a.Key] = append(gotDowns[a.Key], a.At.Sub(start))
			} else {
				gotUps[a.Key] = append(gotUps[a.Key], a.At.Sub(start))
			}
		}
		c.packetsPerSec = float64(st.Packets) / elapsed.Seconds()
		c.bytesPerSec = float64(st.Bytes) / elapsed.Seconds()
		// Match the i-th key-down (key-up) of a key at the sender with the
		// i-th at the receiver.
		seenDown, seenUp := map[keys.Key]int{}, map[keys.Key]int{}
		nth := -1 // the key-down's place in the trace
		for _, e := range trace {
			if e.down {
				nth++
				i := seenDown[e.code]
				seenDown[e.code]++
				if i < len(gotDowns[e.code]) {
					d := gotDowns[e.code][i] - e.at
					if down != nil {
						down(nth, d)
					}
					c.downs = append(c.downs, d)
				} else {
					c.lostDowns++
				}
				continue
			}
			i := seenUp[e.code]
			seenUp[e.code]++
			if i < len(gotUps[e.code]) {
				d := gotUps[e.code][i] - e.at
				c.ups = append(c.ups, d)
				c.maxStuck = max(c.maxStuck, d)
			}
		}
	})
	slices.Sort(c.downs)
	slices.Sort(c.ups)
	return c
}

func pct(l []time.Duration, p int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, len(l)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// TestWriteReport writes BENCHMARKS.md and benchmarks.png at the repository
// root.
func TestWriteReport(t *testing.T) {
	if os.Getenv("KEYRELAY_REPORT") == "" {
		t.Skip("set KEYRELAY_REPORT=1 (make bench) to write BENCHMARKS.md")
	}
	base := netsim.Config{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 3}
	var profiles []profile
	for _, l := range []int{0, 1, 5, 10, 20, 30, 50} {
		p := base
		p.Loss = float64(l) / 100
		profiles = append(profiles, profile{fmt.Sprintf("%d %%", l), p})
	}
	bursty := base
	bursty.BurstEnter, bursty.BurstExit = 0.02, 0.2 // ~9 % loss in bursts of ~5
	profiles = append(profiles, profile{"bursty", bursty})

	var md strings.Builder
	fmt.Fprintf(&md, "# keyrelay benchmarks\n\nWritten by `make bench` (every `go test -bench` benchmark into `bench.out`, then `KEYRELAY_REPORT=1 go test -run TestWriteReport ./internal/tools/report/`, which writes this file and `benchmarks.png`; do not edit by hand) on %s, %s/%s, %d CPUs, %s, %s. The machine is shared: compare ratios within one run, not absolutes across machines.\n\n",
		hostDesc(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	md.WriteString("## Plain queue against keyrelay's defaults\n\n")
	md.WriteString("*Plain* is the seed's balanced queue alone, what `keyrelay send --feedback=false` does: every packet carries the whole queue and is re-sent every 100 ms, nothing comes back. *Defaults* is `keyrelay send` as shipped: the receiver acks, the sender re-sends a burst every 10 ms until the ack, and never drops an unacknowledged key-down from the queue (lossless typing).\n\n")
	md.WriteString("Both relay the same minute of typing (300 taps of rotating letters at 60–250 ms gaps, held 30–90 ms, Shift over some) over the same simulated link, in virtual time (`testing/synctest`, `netsim`): 20 ms ± 5 ms one-way delay, the loss shown, in both directions, sealed packets. Latency: from a key event at the sender to its injection at the receiver. *Stuck*: the longest a key stayed down at the receiver after its release at the sender. All times in milliseconds (ms).\n\n")
	md.WriteString("| loss | mode | down p50 (ms) | down p99 (ms) | down max (ms) | up p50 (ms) | up p99 (ms) | up max (ms) | lost key-downs | stuck max (ms) | packets/s | bytes/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var lines []line
	palette := []color.Color{color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0x2c, 0xa0, 0x2c, 255}, color.RGBA{0xff, 0x7f, 0x0e, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}, color.RGBA{0x94, 0x67, 0xbd, 255}}
	var ratios []string
	var pkts [2]float64 // packets/s of plain and defaults, summed over the profiles
	var maxBytes float64
	for _, p := range profiles {
		var cells [2]cell
		for i, fb := range []bool{false, true} {
			c := simulate(t, p.link, fb, 0, 0)
			cells[i] = c
			pkts[i] += c.packetsPerSec
			maxBytes = max(maxBytes, c.bytesPerSec)
			mode := "plain"
			if fb {
				mode = "defaults"
			}
			fmt.Fprintf(&md, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %.1f | %.0f |\n", p.name, mode,
				ms(pct(c.downs, 50)), ms(pct(c.downs, 99)), ms(pct(c.downs, 100)),
				ms(pct(c.ups, 50)), ms(pct(c.ups, 99)), ms(pct(c.ups, 100)),
				c.lostDowns, ms(c.maxStuck), c.packetsPerSec, c.bytesPerSec)
		}
		if n := slices.Index([]string{"0 %", "10 %", "30 %", "50 %", "bursty"}, p.name); n >= 0 {
			lines = append(lines, line{"plain " + p.name, cells[0].downs, true, palette[n]}, line{"defaults " + p.name, cells[1].downs, false, palette[n]})
		}
		if p.name == "10 %" || p.name == "30 %" || p.name == "bursty" {
			ratios = append(ratios, fmt.Sprintf("at %s loss the key-down p99 is %s ms with the defaults against %s ms for the plain queue (%.1f× lower), with %d against %d lost key-downs",
				p.name, ms(pct(cells[1].downs, 99)), ms(pct(cells[0].downs, 99)), float64(pct(cells[0].downs, 99))/float64(max(pct(cells[1].downs, 99), 1)), cells[1].lostDowns, cells[0].lostDowns))
		}
	}
	packetRatio := fmt.Sprintf("the defaults send about %.1f× as many (bursts re-send every 10 ms until an ack, which takes a round trip), at most %.0f bytes/s (%.1f KB/s) in any profile here",
		pkts[1]/pkts[0], maxBytes, maxBytes/1000)
	md.WriteString("\n![share of key-downs slower than a latency, log scale](benchmarks.png)\n\n" +
		"The chart: for each latency on the x axis (ms), the share of key-downs that took longer; both axes are logarithmic, so the bulk near the 20 ms link delay and the tail out to the slowest key-down are both visible: where a line crosses 0.5 is its median, where it crosses 0.01 its p99, and its end its slowest key-down (1 of 300). Dashed: plain; solid: defaults; one colour per loss.\n\n" +
		"Headline: " + strings.Join(ratios, "; ") + ". The price is packets: " + packetRatio + ".\n")

	// Real sockets.
	p50, p99 := loopbackLatency(t, 2000)
	cpu := idleCPU(t, 10*time.Second)
	fmt.Fprintf(&md, "\n## Real sockets\n\n- Loopback latency with the defaults (real UDP on 127.0.0.1, sealed, feedback on, sender and receiver in one process, 2,000 key events back to back, each sent when the previous one was injected; from the event entering the sender to its injection): p50 %d µs, p99 %d µs. The tail comes from lossless typing: events arriving faster than the receiver's acks (at most one per 1 ms) wait until the queue's oldest events are acknowledged; human typing is far slower. `BenchmarkLoopbackLatency` below measures the same without feedback (plain), so without that wait.\n- Idle CPU of a sender and a receiver in one process over 10 s with no key pressed (the 100 ms resend and acks only): %.2f %% of one CPU.\n",
		p50.Microseconds(), p99.Microseconds(), cpu)

	if path := os.Getenv("KEYRELAY_BENCH_OUT"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rs := parseBench(string(b))
		if len(rs) == 0 {
			t.Fatalf("%s: no benchmark results", path)
		}
		md.WriteString(desktopSection(rs))
		md.WriteString(senderSection(rs))
		md.WriteString("\n## go test -bench\n\n" + benchIntro + "\n\n" + benchTable(rs))
	}

	// make bench-peers's section (e2e/peers_test.go) is its own run's, and
	// the measurements written by hand are no run's: both kept as they are.
	if old, err := os.ReadFile("../../../BENCHMARKS.md"); err == nil {
		for _, m := range keptMarkers {
			if s := keptSection(string(old), m[0], m[1]); s != "" {
				md.WriteString("\n" + s)
			}
		}
	}
	if err := os.WriteFile("../../../BENCHMARKS.md", []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tailChart(lines, "../../../benchmarks.png"); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote BENCHMARKS.md and benchmarks.png")
}

// tailChart draws, for each line, the share of its key-downs slower than
// each latency (the complementary CDF) on a log scale: the median and the
// tail in one view.
func tailChart(lines []line, path string) error {
	pl := plot.New()
	pl.Title.Text = "keyrelay: key-down latency over a 20 ms ± 5 ms one-way link (dashed: plain, solid: defaults)"
	pl.X.Label.Text = "latency from the sender's key event to injection (ms, log scale)"
	pl.Y.Label.Text = "share of key-downs slower (log scale)"
	pl.X.Scale = plot.LogScale{}
	pl.X.Tick.Marker = logTicks{10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000}
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = logTicks{1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001}
	pl.Add(plotter.NewGrid())
	xmin, xmax := 1e9, 0.0
	ymin := 1.0
	for _, l := range lines {
		n := len(l.lat)
		if n == 0 {
			continue
		}
		// A step down at each latency: the share slower than it.
		pts := make(plotter.XYs, 0, 2*n)
		prev := 1.0
		for i, d := range l.lat {
			x := float64(d) / float64(time.Millisecond)
			y := float64(n-i-1) / float64(n)
			if y == 0 {
				y = 1 / float64(n) / 2 // the last step: below the slowest, off the log scale's zero
			}
			pts = append(pts, plotter.XY{X: x, Y: prev}, plotter.XY{X: x, Y: y})
			prev = y
			xmin, xmax = min(xmin, x), max(xmax, x)
			ymin = min(ymin, y)
		}
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		ln.Color = l.col
		ln.Width = vg.Points(1.5)
		if l.dash {
			ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		pl.Add(ln)
		pl.Legend.Add(l.name, ln)
	}
	for _, ref := range []struct {
		y    float64
		name string
	}{{0.5, "p50"}, {0.01, "p99"}} {
		ln, err := plotter.NewLine(plotter.XYs{{X: xmin * 0.8, Y: ref.y}, {X: xmax * 1.2, Y: ref.y}})
		if err != nil {
			return err
		}
		ln.Color = color.Gray{0x80}
		ln.Width = vg.Points(0.75)
		ln.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		pl.Add(ln)
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: xmin * 0.8, Y: ref.y * 1.08}}, Labels: []string{ref.name}})
		if err != nil {
			return err
		}
		pl.Add(lbl)
	}
	pl.X.Min, pl.X.Max = xmin*0.8, xmax*1.2
	pl.Y.Min, pl.Y.Max = ymin, 1
	pl.Legend.Top = true
	pl.Legend.Left = false
	pl.Legend.XOffs = -vg.Points(10)
	pl.Legend.YOffs = -vg.Points(25) // inside the plot area, clear of the title
	return pl.Save(10*vg.Inch, 6*vg.Inch, path)
}

// logTicks labels a log axis at these values (those in its range).
type logTicks []float64

func (lt logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for _, v := range lt {
		if v >= min && v <= max {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	return ts
}

const benchIntro = "Every `go test -bench . -benchmem ./...` benchmark of this run, and `BenchmarkHookToDisplayLatency` (e2e; see *Desktop to desktop* above; skipped without Xvfb). " +
	"`BenchmarkLoopbackLatency`: real UDP sockets on 127.0.0.1, sealed packets, plain (no feedback), one key event at a time from entering the sender to the receiver handing it to its injector; *flood*: the same while another socket sends the receiver hostile datagrams as fast as it can. " +
	"Columns: time per operation, heap bytes and allocations per operation (`-benchmem`), then what the benchmark reports itself, each with its unit (p50-µs, p99-µs: latency percentiles in microseconds; floor-…: the harness floor, p50-added-µs: the p50 over it)."

// benchResult is one line of go test -bench output: its package, its name
// without the GOMAXPROCS suffix, and its figures, each with its unit, in
// the order printed.
type benchResult struct {
	pkg, name string
	figures   []figure
}

type figure struct {
	v    float64
	unit string
}

// get is the figure with unit, if the line has one.
func (r benchResult) get(unit string) (float64, bool) {
	for _, f := range r.figures {
		if f.unit == unit {
			return f.v, true
		}
	}
	return 0, false
}

// parseBench reads the result lines of go test -bench output.
func parseBench(out string) []benchResult {
	var rs []benchResult
	pkg := ""
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "pkg: "); ok {
			pkg = strings.TrimPrefix(p, "github.com/keyrelay/keyrelay/")
			continue
		}
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		r := benchResult{pkg: pkg, name: f[0]}
		if i := strings.LastIndex(r.name, "-"); i > 0 {
			if _, err := strconv.Atoi(r.name[i+1:]); err == nil {
				r.name = r.name[:i] // the GOMAXPROCS suffix
			}
		}
		r.name = strings.TrimPrefix(r.name, "Benchmark")
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				r.figures = append(r.figures, figure{v, f[i+1]})
			}
		}
		rs = append(rs, r)
	}
	return rs
}

// benchTable turns go test -bench results into a table, every figure with
// its unit.
func benchTable(rs []benchResult) string {
	var out strings.Builder
	out.WriteString("| package | benchmark | time/op | bytes/op | allocs/op | reported |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		var tm, by, al string
		var other []string
		for _, f := range r.figures {
			switch f.unit {
			case "ns/op":
				tm = duration(f.v)
			case "B/op":
				by = fmt.Sprintf("%.0f B", f.v)
			case "allocs/op":
				al = fmt.Sprintf("%.0f", f.v)
			default:
				other = append(other, strconv.FormatFloat(f.v, 'f', -1, 64)+" "+f.unit)
			}
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %s |\n", r.pkg, r.name, tm, by, al, strings.Join(other, ", "))
	}
	return out.String()
}

// addedTarget is the most keyrelay may add, at the median, to the desktop to
// desktop latency over the harness floor (BENCHMARKS.md, Desktop to
// desktop).
const addedTarget = 250.0 // µs

const desktopIntro = "`BenchmarkHookToDisplayLatency` (e2e; two Xvfb displays, 300 iterations): a key-down injected with XTEST on display B, captured by `send --input hook` (X RECORD), relayed over loopback UDP (sealed, feedback on) and pressed by `recv --inject` x11 or robotgo on display A, until a loop polling A's key map (QueryKeymap, back to back) sees it down. " +
	"In the same iterations, the *floor*: the same XTEST key-down injected on display A itself and seen by the same loop, which is what the harness costs with no keyrelay in the path (the injecting request, its round trip, the polling). " +
	"*Added* is keyrelay's share: its p50 minus the floor's p50 (X RECORD delivery on B, the sender, UDP, the receiver, the injector). All times in microseconds (µs)."

// desktopSection is the desktop to desktop latency against its floor, from
// BenchmarkHookToDisplayLatency's results, with the target.
func desktopSection(rs []benchResult) string {
	var out strings.Builder
	out.WriteString("\n## Desktop to desktop\n\n" + desktopIntro + "\n\n")
	rows := 0
	for _, r := range rs {
		inj, ok := strings.CutPrefix(r.name, "HookToDisplayLatency/")
		if !ok {
			continue
		}
		if rows == 0 {
			fmt.Fprintf(&out, "| injector | floor p50 (µs) | floor p99 (µs) | keyrelay p50 (µs) | keyrelay p99 (µs) | added p50 (µs) | target: added p50 ≤ %.0f µs |\n|---|---|---|---|---|---|---|\n", addedTarget)
		}
		rows++
		cell := func(unit string) string {
			if v, ok := r.get(unit); ok {
				return fmt.Sprintf("%.0f", v)
			}
			return "–"
		}
		verdict := "–"
		if added, ok := r.get("p50-added-µs"); ok {
			verdict = "met"
			if added > addedTarget {
				verdict = "**not met**"
			}
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %s | %s |\n", inj,
			cell("floor-p50-µs"), cell("floor-p99-µs"), cell("p50-µs"), cell("p99-µs"), cell("p50-added-µs"), verdict)
	}
	if rows == 0 {
		out.WriteString("Not measured in this run: it needs Xvfb (`make deps`).\n")
	}
	return out.String()
}

// senderSection is the sender's performance targets (BENCHMARKS.md, The
// sender's targets), each figure from its benchmark in this run, with the
// target and whether it is met.
func senderSection(rs []benchResult) string {
	find := func(name string) (benchResult, bool) {
		for _, r := range rs {
			if r.name == name {
				return r, true
			}
		}
		return benchResult{}, false
	}
	type row struct {
		what, bench, unit, target string
		limit                     float64
		format                    string
	}
	rows := []row{
		{"idle connected pair, send + recv (sealed, feedback on; real binaries, 10 s)", "IdlePair", "pair-%cpu", "≤ 0.6 % of one core", 0.6, "%.2f %% (send %s %%, recv %s %%)"},
		{"acks per second to an idle sender", "IdlePair", "idle-acks/s", "≤ 1", 1, "%.2f"},
		{"extra delay a loss adds, p99 (real loopback, no added delay, 10 % loss both ways)", "LossyLoopback/loss=10%", "extra-p99-µs", "≤ 3000 µs", 3000, "%.0f µs"},
		{"allocations per key event on the send path (source to socket)", "KeyEvent", "allocs/op", "0", 0, "%.0f"},
		{"CPU per key event on the send path (source to socket)", "KeyEvent", "ns/op", "no higher than before the sender core (about 1.9–2.3 µs on this machine)", -1, "%.0f ns"},
	}
	var out strings.Builder
	out.WriteString("\n## The sender's targets\n\nThe sender's performance targets, each from a benchmark of this run (`BenchmarkIdlePair`: e2e, run with `-benchtime 1x`; `BenchmarkLossyLoopback`: internal/testutil/relaytest; `BenchmarkKeyEvent`: sender; their doc comments say what they measure). The machine is shared: idle CPU varies by about a tenth of a percent between runs.\n\n")
	out.WriteString("| figure | this run | target | |\n|---|---|---|---|\n")
	for _, w := range rows {
		r, ok := find(w.bench)
		v, vok := r.get(w.unit)
		if !ok || !vok {
			fmt.Fprintf(&out, "| %s | not measured | %s | |\n", w.what, w.target)
			continue
		}
		var got string
		if w.unit == "pair-%cpu" {
			sv, _ := r.get("send-%cpu")
			rv, _ := r.get("recv-%cpu")
			got = fmt.Sprintf(w.format, v, strconv.FormatFloat(sv, 'f', 2, 64), strconv.FormatFloat(rv, 'f', 2, 64))
		} else {
			got = fmt.Sprintf(w.format, v)
		}
		verdict := "met"
		switch {
		case w.limit < 0:
			verdict = "compare"
		case v > w.limit:
			verdict = "**not met**"
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s |\n", w.what, got, w.target, verdict)
	}
	return out.String()
}

// duration formats nanoseconds with a readable unit.
func duration(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func hostDesc() string {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				return strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
			}
		}
	}
	return "unknown CPU"
}

// loopback is a relay on real loopback sockets, with feedback and no
// linger.
func loopback(t *testing.T, inj receiver.Injector) *relaytest.Relay {
	rc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return relaytest.Start(t, relaytest.Config{RecvConn: rc, SendConn: sc, PSK: key, Feedback: true,
		Receiver: receiver.Config{Injector: inj}, Sender: sender.Config{Linger: -1}})
}

// loopbackLatency runs a sender and receiver on real loopback sockets.
func loopbackLatency(t *testing.T, n int) (p50, p99 time.Duration) {
	got := make(chan fake.Arrival, 16)
	feed := loopback(t, &fake.Recorder{Notify: got}).Feed(got)
	var lat []time.Duration
	for i := range n {
		lat = append(lat, feed.Latency(t, fake.Event{Key: keys.Key(keys.KeyA) + keys.Key(i/2%26), Down: i%2 == 0}))
	}
	feed.Close()
	return relaytest.Percentiles(lat)
}

// TestDesktopSection: the HookToDisplayLatency lines of go test -bench
// output become the desktop table, with the floor, the added median and
// whether it meets the target; a run without them says so.
func TestDesktopSection(t *testing.T) {
	out := `goos: linux
pkg: github.com/keyrelay/keyrelay/e2e
BenchmarkHookToDisplayLatency/x11-2         	     300	   1014151 ns/op	       105.8 floor-p50-µs	       523.9 floor-p99-µs	       216.5 p50-added-µs	       322.3 p50-µs	      1378 p99-µs
BenchmarkHookToDisplayLatency/robotgo-2     	     300	   1321125 ns/op	       156.0 floor-p50-µs	       713.2 floor-p99-µs	       252.9 p50-added-µs	       408.9 p50-µs	      1655 p99-µs
ok  	github.com/keyrelay/keyrelay/e2e	11.472s
`
	rs := parseBench(out)
	if len(rs) != 2 || rs[0].pkg != "e2e" || rs[0].name != "HookToDisplayLatency/x11" {
		t.Fatalf("parsed %+v", rs)
	}
	got := desktopSection(rs)
	for _, want := range []string{
		"| x11 | 106 | 524 | 322 | 1378 | 216 | met |",
		"| robotgo | 156 | 713 | 409 | 1655 | 253 | **not met** |",
		"added p50 ≤ 250 µs",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("desktop section lacks %q:\n%s", want, got)
		}
	}
	if got := desktopSection(parseBench("pkg: github.com/keyrelay/keyrelay/wire\nBenchmarkSeal/N=16-2 1 754 ns/op\n")); !strings.Contains(got, "Not measured in this run") {
		t.Errorf("without the benchmark:\n%s", got)
	}
	if tbl := benchTable(rs); !strings.Contains(tbl, "| e2e | HookToDisplayLatency/x11 | 1.0 ms |  |  | 105.8 floor-p50-µs, ") {
		t.Errorf("bench table:\n%s", tbl)
	}
}

// TestSenderSection: the sender's target figures are read from their
// benchmarks' lines, each against its target; one over its target says so,
// and a benchmark missing from the run is "not measured".
func TestSenderSection(t *testing.T) {
	out := `pkg: github.com/keyrelay/keyrelay/e2e
BenchmarkIdlePair-2   	       1	12634941645 ns/op	         0.9166 idle-acks/s	         0.5136 pair-%cpu	         0.2171 recv-%cpu	         0.2964 send-%cpu
pkg: github.com/keyrelay/keyrelay/receiver
BenchmarkLossyLoopback/loss=10%-2        	     400	  20000371 ns/op	      3302 extra-p99-µs	       127.0 p50-µs	     2430 p99-µs
`
	got := senderSection(parseBench(out))
	for _, want := range []string{
		"| 0.51 % (send 0.30 %, recv 0.22 %) | ≤ 0.6 % of one core | met |",
		"| 0.92 | ≤ 1 | met |",
		"| 3302 µs | ≤ 3000 µs | **not met** |",
		"| allocations per key event on the send path (source to socket) | not measured | 0 | |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sender section lacks %q:\n%s", want, got)
		}
	}
}

// The markers of make bench-peers's section of BENCHMARKS.md, as
// e2e/peers_test.go writes them, and of the section written by hand.
const (
	peersBegin  = "<!-- make bench-peers: begin -->"
	peersEnd    = "<!-- make bench-peers: end -->"
	byHandBegin = "<!-- by hand: begin -->"
	byHandEnd   = "<!-- by hand: end -->"
)

// keptMarkers are the sections make bench keeps from the BENCHMARKS.md it
// rewrites, in the order it writes them.
var keptMarkers = [][2]string{{peersBegin, peersEnd}, {byHandBegin, byHandEnd}}

// peersSection is make bench-peers's section of the BENCHMARKS.md md, its
// markers and a final newline included; "" if md has none.
func peersSection(md string) string { return keptSection(md, peersBegin, peersEnd) }

// keptSection is the section of md between the markers begin and end,
// the markers and a final newline included; "" if md has none.
func keptSection(md, begin, end string) string {
	i := strings.Index(md, begin)
	j := strings.Index(md, end)
	if i < 0 || j < i {
		return ""
	}
	return md[i:j+len(end)] + "\n"
}

// TestWriteReportKeepsPeers: make bench rewrites BENCHMARKS.md, but the
// side by side with Barrier comes from make bench-peers, and stays.
func TestWriteReportKeepsPeers(t *testing.T) {
	section := peersBegin + "\n## Side by side with Barrier\n\n| a | b |\n" + peersEnd + "\n"
	for _, tc := range []struct{ name, md, want string }{
		{"at the end", "# keyrelay benchmarks\n\n" + section, section},
		{"in the middle", "# x\n\n" + section + "\n## more\n", section},
		{"none", "# keyrelay benchmarks\n", ""},
		{"an end marker alone", "# x\n" + peersEnd + "\n", ""},
		{"markers reversed", peersEnd + "\n" + peersBegin + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := peersSection(tc.md); got != tc.want {
				t.Errorf("peersSection = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWriteReportKeepsByHand: make bench rewrites BENCHMARKS.md, but the
// measurements written by hand, which no benchmark makes, stay.
func TestWriteReportKeepsByHand(t *testing.T) {
	section := byHandBegin + "\n## Measurements behind the code\n\n- a figure\n" + byHandEnd + "\n"
	md := "# keyrelay benchmarks\n\n" + peersBegin + "\n## Side by side\n" + peersEnd + "\n\n" + section
	if got := keptSection(md, byHandBegin, byHandEnd); got != section {
		t.Errorf("keptSection = %q, want %q", got, section)
	}
	if got := keptSection(md, peersBegin, peersEnd); got != peersBegin+"\n## Side by side\n"+peersEnd+"\n" {
		t.Errorf("keptSection of the peers markers = %q", got)
	}
}
