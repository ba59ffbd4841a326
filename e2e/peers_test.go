//go:build e2e && peers

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// TestBenchPeers is make bench-peers: keyrelay and Barrier relay the same
// keys between the same two Xvfb desktops over the same veth pair, two
// network namespaces this test makes, in one run, at 0, 5 and 10 % loss
// (nftables drops at random on each namespace's input: these machines have
// no netem, DESIGN.md). keyrelay: send --input x11 --grab to recv --inject
// x11, sealed (a handshaken session, PROTOCOL.md §8.3), defaults otherwise.
// Barrier (Debian's 2.4): barriers on the sending desktop, barrierc on the
// other, crypto off, switched to the client's screen with a hotkey. For each
// it measures the CPU of every thread of both ends (schedstat), the IP bytes
// on the veth (both ways), idle and while typing, and the key-down latency
// (XTEST on the sending desktop, polled on the other). It writes its table
// into BENCHMARKS.md between the markers peersBegin and peersEnd. Built only
// with the tag peers (make bench-peers); runs as root.
func TestBenchPeers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: it makes network namespaces and nftables rules")
	}
	for _, tool := range []string{"ip", "nsenter", "nft", "Xvfb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("needs %s (make bench-peers installs what it needs with apt-get)", tool)
		}
	}
	withBarrier := true
	for _, tool := range []string{"barriers", "barrierc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("no %s: keyrelay is measured alone", tool)
			withBarrier = false
		}
	}
	// A normal build, not the race detector's that TestMain makes.
	dir := t.TempDir()
	kr := filepath.Join(dir, "keyrelay")
	if out, err := exec.Command("go", "build", "-o", kr, "..").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	n := newNetPair(t)
	dispA, dispB := startXvfb(t), startXvfb(t)
	events, idle := *peersEvents, *peersIdle
	h := newHarness(t, dispA, dispB)
	var rows []peerRow
	for _, l := range strings.Split(*peersLoss, ",") {
		loss, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("-peers.loss %s: %v", *peersLoss, err)
		}
		n.setLoss(t, loss)
		subjects := []subject{keyrelaySubject{bin: kr, n: n}}
		if withBarrier {
			subjects = append(subjects, barrierSubject{n: n, dir: dir})
		}
		for _, s := range subjects {
			if *peersOnly != "" && s.name() != *peersOnly {
				continue
			}
			row := measure(t, h, n, s, dispA, dispB, loss, events, idle)
			t.Logf("%+v", row)
			rows = append(rows, row)
		}
	}
	n.setLoss(t, 0)
	floor := h.floor(t, 200)
	writePeers(t, rows, floor, events, idle, withBarrier && *peersOnly == "")
}

// The size of a run (make bench-peers's defaults; shorter for a try).
var (
	peersEvents = flag.Int("peers.events", 400, "key events each subject types at each loss")
	peersIdle   = flag.Duration("peers.idle", 20*time.Second, "how long each subject is measured idle at each loss")
	peersLoss   = flag.String("peers.loss", "0,5,10", "the losses (%), comma-separated")
	peersOnly   = flag.String("peers.only", "", "measure only this subject (keyrelay or Barrier); the table then has no ratios")
)

// peerRow is one subject's figures at one loss.
type peerRow struct {
	Subject      string
	Loss         int
	Events       int           // key events typed
	Lost         int           // key-downs that never showed within 3 s
	CPU          time.Duration // both ends, every thread, while typing
	Bytes        int64         // IP bytes on the veth, both ways, while typing
	Packets      int64
	IdleCPU      time.Duration
	IdleBytes    int64
	IdlePackets  int64
	Idle         time.Duration
	P50, P99     time.Duration // key-down latency
	ActiveWindow time.Duration // how long the typing took
}

// netPair is two network namespaces joined by a veth pair.
type netPair struct {
	a, b   string // namespace names
	va, vb string // their veth ends
	ipA    string
	ipB    string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newNetPair(t *testing.T) *netPair {
	id := strconv.Itoa(os.Getpid() % 100000)
	n := &netPair{a: "krpA" + id, b: "krpB" + id, va: "krpa" + id, vb: "krpb" + id, ipA: "10.79.0.1", ipB: "10.79.0.2"}
	ipCmd(t, "netns", "add", n.a)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.a).Run() })
	ipCmd(t, "netns", "add", n.b)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.b).Run() })
	// No IPv6 on the link: the subjects speak IPv4, and the kernel's own
	// IPv6 traffic on a new link (router solicitations, multicast listener
	// reports, neighbour discovery) would be counted as theirs, as idle
	// packets/s.
	for _, ns := range []string{n.a, n.b} {
		ipCmd(t, "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	ipCmd(t, "link", "add", n.va, "netns", n.a, "type", "veth", "peer", "name", n.vb, "netns", n.b)
	ipCmd(t, "-n", n.a, "addr", "add", n.ipA+"/24", "dev", n.va)
	ipCmd(t, "-n", n.b, "addr", "add", n.ipB+"/24", "dev", n.vb)
	for _, x := range [][2]string{{n.a, n.va}, {n.b, n.vb}, {n.a, "lo"}, {n.b, "lo"}} {
		ipCmd(t, "-n", x[0], "link", "set", x[1], "up")
	}
	return n
}

// setLoss makes each namespace drop loss % of what arrives on its veth
// end, so each direction loses loss %.
func (n *netPair) setLoss(t *testing.T, loss int) {
	t.Helper()
	for _, x := range [][2]string{{n.a, n.va}, {n.b, n.vb}} {
		rules := "table inet krloss\ndelete table inet krloss\n"
		if loss > 0 {
			rules += fmt.Sprintf("table inet krloss {\n chain in {\n  type filter hook input priority 0; policy accept;\n  iifname %q numgen random mod 100 < %d drop\n }\n}\n", x[1], loss)
		}
		cmd := exec.Command("ip", "netns", "exec", x[0], "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft in %s: %v\n%s\n%s", x[0], err, rules, out)
		}
	}
}

// counters are the bytes and packets both veth ends sent (IP bytes:
// the Ethernet header taken off).
func (n *netPair) counters(t *testing.T) (bytes, packets int64) {
	t.Helper()
	for _, x := range [][2]string{{n.a, n.va}, {n.b, n.vb}} {
		out, err := exec.Command("ip", "-n", x[0], "-s", "-j", "link", "show", "dev", x[1]).Output()
		if err != nil {
			t.Fatalf("ip -s link: %v", err)
		}
		var l []struct {
			Stats struct {
				TX struct {
					Bytes   int64 `json:"bytes"`
					Packets int64 `json:"packets"`
				} `json:"tx"`
			} `json:"stats64"`
		}
		if err := json.Unmarshal(out, &l); err != nil || len(l) != 1 {
			t.Fatalf("ip -s -j link: %v: %s", err, out)
		}
		bytes += l[0].Stats.TX.Bytes - 14*l[0].Stats.TX.Packets
		packets += l[0].Stats.TX.Packets
	}
	return bytes, packets
}

// in runs name with args in namespace ns on display (exec'd by nsenter,
// so the process is the command itself: its threads are what is counted).
func (n *netPair) in(t *testing.T, ns, display, log string, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + ns, "--", name}, args...)...)
	cmd.Env = append(append(os.Environ(), "DISPLAY="+display), env...)
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// cpu is the CPU time of every thread of the processes.
func cpu(t *testing.T, procs []*exec.Cmd) time.Duration {
	t.Helper()
	var sum time.Duration
	for _, p := range procs {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.Process.Pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("no threads of %v (exited?)", p.Args)
		}
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that just ended
			}
			ns, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// subject is a keyboard relay under measurement.
type subject interface {
	name() string
	// start starts both ends, the sender on dispA, and returns them once
	// the sending desktop's keys go to the other.
	start(t *testing.T, dispA, dispB string) []*exec.Cmd
}

type keyrelaySubject struct {
	bin string
	n   *netPair
}

func (keyrelaySubject) name() string { return "keyrelay" }

func (s keyrelaySubject) start(t *testing.T, dispA, dispB string) []*exec.Cmd {
	dir := t.TempDir()
	// An identity for each end, paired as two machines are (keyrelay
	// peers add on both).
	envS := []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "send")}
	envR := []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "recv")}
	kr := func(env []string, args ...string) string {
		cmd := exec.Command(s.bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("keyrelay %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	keyS, _, _ := strings.Cut(kr(envS, "id"), " ")
	keyR, _, _ := strings.Cut(kr(envR, "id"), " ")
	kr(envS, "peers", "add", "rx", keyR, "--addr", s.n.ipB)
	kr(envR, "peers", "add", "tx", keyS)
	recvLog, sendLog := filepath.Join(dir, "recv.log"), filepath.Join(dir, "send.log")
	recv := s.n.in(t, s.n.b, dispB, recvLog, envR, s.bin, "recv", "--inject", "x11", "--listen", s.n.ipB+":7575")
	t.Cleanup(func() { recv.Process.Kill(); recv.Wait() })
	waitLog(t, recvLog, "listening on")
	send := s.n.in(t, s.n.a, dispA, sendLog, envS, s.bin, "send", "--input", "x11", "--grab", "--to", s.n.ipB+":7575")
	t.Cleanup(func() { send.Process.Kill(); send.Wait() })
	waitLog(t, sendLog, "the keyboard is grabbed")
	return []*exec.Cmd{send, recv}
}

type barrierSubject struct {
	n   *netPair
	dir string
}

func (barrierSubject) name() string { return "Barrier" }

// barrierConf: screen A (the server's, the sending desktop) and B; F12
// switches to B, as a user's mouse crossing the edge would.
const barrierConf = `section: screens
	A:
	B:
end
section: links
	A:
		right = B
	B:
		left = A
end
section: options
	keystroke(F12) = switchToScreen(B)
end
`

func (s barrierSubject) start(t *testing.T, dispA, dispB string) []*exec.Cmd {
	dir := t.TempDir()
	conf := filepath.Join(dir, "barrier.conf")
	if err := os.WriteFile(conf, []byte(barrierConf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir}
	sLog, cLog := filepath.Join(dir, "barriers.log"), filepath.Join(dir, "barrierc.log")
	srv := s.n.in(t, s.n.a, dispA, sLog, env, "barriers", "-f", "--no-tray", "--disable-crypto", "--debug", "INFO",
		"--name", "A", "-c", conf, "--address", s.n.ipA+":24800")
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitLog(t, sLog, "started server")
	cli := s.n.in(t, s.n.b, dispB, cLog, env, "barrierc", "-f", "--disable-crypto", "--debug", "INFO", "--name", "B", s.n.ipA+":24800")
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	waitLog(t, sLog, `client "B" has connected`)
	xdotool(t, dispA, "key", "F12")
	waitLog(t, sLog, `switch from "A" to "B"`)
	return []*exec.Cmd{srv, cli}
}

// waitLog waits until the log file says want.
func waitLog(t *testing.T, log, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if bytes.Contains(b, []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said %q:\n%s", log, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// harness presses keys on the sending desktop A with XTEST and polls the
// other, B, for them; and measures the floor, the same on B alone.
type harness struct {
	inA, inB, pollB *xgb.Conn
}

func newHarness(t *testing.T, dispA, dispB string) *harness {
	dial := func(display string) *xgb.Conn {
		c, err := xgb.NewConnDisplay(display)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	h := &harness{inA: dial(dispA), inB: dial(dispB), pollB: dial(dispB)}
	for _, c := range []*xgb.Conn{h.inA, h.inB} {
		if err := xtest.Init(c); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

const kcA = 38 // KeyA: evdev 30 + 8

func (h *harness) isDown(t *testing.T) bool {
	r, err := xproto.QueryKeymap(h.pollB).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return r.Keys[kcA/8]&(1<<(kcA%8)) != 0
}

// until polls B until KeyA is down (or up), at most 3 s.
func (h *harness) until(t *testing.T, down bool) (time.Time, bool) {
	deadline := time.Now().Add(3 * time.Second)
	for h.isDown(t) != down {
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
	}
	return time.Now(), true
}

// tap presses KeyA on c's display and returns how long B took to show
// it down; then releases it and waits for B to show it up.
func (h *harness) tap(t *testing.T, c *xgb.Conn) (time.Duration, bool) {
	root := xproto.Setup(c).DefaultScreen(c).Root
	t0 := time.Now()
	xtest.FakeInputChecked(c, xproto.KeyPress, kcA, 0, root, 0, 0, 0).Check()
	at, ok := h.until(t, true)
	xtest.FakeInputChecked(c, xproto.KeyRelease, kcA, 0, root, 0, 0, 0).Check()
	h.until(t, false)
	return at.Sub(t0), ok
}

func (h *harness) floor(t *testing.T, n int) []time.Duration {
	var l []time.Duration
	for range n {
		if d, ok := h.tap(t, h.inB); ok {
			l = append(l, d)
		}
	}
	return l
}

func measure(t *testing.T, h *harness, n *netPair, s subject, dispA, dispB string, loss, events int, idle time.Duration) peerRow {
	t.Helper()
	row := peerRow{Subject: s.name(), Loss: loss, Idle: idle}
	procs := s.start(t, dispA, dispB)
	// Connected: a key typed on A shows on B (retried: under loss the
	// first may take long).
	for i := 0; ; i++ {
		if _, ok := h.tap(t, h.inA); ok {
			break
		}
		if i == 5 {
			t.Fatalf("%s: no key typed on A reached B", s.name())
		}
	}
	time.Sleep(2 * time.Second) // past the bursts and acks of the probe
	c0, b0, p0 := cpu(t, procs), int64(0), int64(0)
	b0, p0 = n.counters(t)
	time.Sleep(idle)
	c1 := cpu(t, procs)
	b1, p1 := n.counters(t)
	row.IdleCPU, row.IdleBytes, row.IdlePackets = c1-c0, b1-b0, p1-p0
	// Typing: taps of KeyA, each waited for, 10 ms apart.
	var lat []time.Duration
	start := time.Now()
	for i := 0; i < events/2; i++ {
		d, ok := h.tap(t, h.inA)
		if ok {
			lat = append(lat, d)
		} else {
			row.Lost++
		}
		time.Sleep(10 * time.Millisecond)
	}
	row.ActiveWindow = time.Since(start)
	// What the last taps cost after them (acks, resends) counts too.
	time.Sleep(500 * time.Millisecond)
	c2 := cpu(t, procs)
	b2, p2 := n.counters(t)
	row.Events = events / 2 * 2
	row.CPU, row.Bytes, row.Packets = c2-c1, b2-b1, p2-p1
	slices.Sort(lat)
	t.Logf("%s at %d %% loss: the slowest key-downs %v", s.name(), loss, lat[max(len(lat)-5, 0):])
	if len(lat) > 0 {
		row.P50, row.P99 = lat[len(lat)/2], lat[min(len(lat)*99/100, len(lat)-1)]
	}
	for _, p := range procs {
		p.Process.Kill()
		p.Wait()
	}
	return row
}

// The markers of the section writePeers rewrites in BENCHMARKS.md.
const (
	peersBegin = "<!-- make bench-peers: begin -->"
	peersEnd   = "<!-- make bench-peers: end -->"
)

func writePeers(t *testing.T, rows []peerRow, floor []time.Duration, events int, idle time.Duration, withBarrier bool) {
	slices.Sort(floor)
	var f50 time.Duration
	if len(floor) > 0 {
		f50 = floor[len(floor)/2]
	}
	µs := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Nanoseconds())/1e3, 'f', 0, 64) }
	var w strings.Builder
	fmt.Fprintf(&w, "%s\n## Side by side with Barrier\n\n", peersBegin)
	fmt.Fprintf(&w, "Written by `make bench-peers` (`go test -tags 'e2e peers' -run TestBenchPeers ./e2e/`; do not edit by hand) on %s, %s, %d CPUs, kernel %s, %s, keyrelay %s, %s, %s.\n\n",
		cpuModel(), runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), strings.TrimSpace(cmdOut("uname", "-r")), runtime.Version(),
		strings.TrimSpace(cmdOut("git", "describe", "--always", "--dirty")), firstLine(cmdOut("barriers", "--version")), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&w, "Two Xvfb desktops and a veth pair between two network namespaces, in one run. keyrelay: `send --input x11 --grab` → `recv --inject x11`, sealed (handshaken), defaults otherwise. Barrier: `barriers` on the sending desktop, `barrierc` on the other, `--disable-crypto`. Loss: nftables drops that share of what arrives in each namespace, both ways (no netem here). Each subject: %v idle once connected, then %d key events (taps of KeyA injected with XTEST on the sending desktop, each waited for on the other, 10 ms apart). CPU: every thread of both ends (`/proc/PID/task/*/schedstat`). Bytes: IP bytes both veth ends sent (Ethernet header taken off). Latency: from the XTEST key-down to the other desktop's key map showing it (QueryKeymap, back to back); *over floor*: minus the floor, the same on the other desktop alone (p50 %s µs).\n\n",
		idle, events, µs(f50))
	w.WriteString("| loss | subject | CPU per key event (µs) | IP bytes per key event | packets per key event | idle packets/s | idle bytes/s | idle CPU (% of a core) | key-down p50 over floor (µs) | key-down p99 (µs) | lost |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		e := float64(r.Events)
		fmt.Fprintf(&w, "| %d %% | %s | %.0f | %.0f | %.2f | %.2f | %.0f | %.3f | %s | %s | %d |\n", r.Loss, r.Subject,
			float64(r.CPU.Nanoseconds())/1e3/e, float64(r.Bytes)/e, float64(r.Packets)/e,
			float64(r.IdlePackets)/r.Idle.Seconds(), float64(r.IdleBytes)/r.Idle.Seconds(),
			100*r.IdleCPU.Seconds()/r.Idle.Seconds(), µs(r.P50-f50), µs(r.P99), r.Lost)
	}
	if withBarrier {
		w.WriteString("\nRatios, keyrelay over Barrier (below 1: keyrelay costs less):\n\n| loss | CPU per key event | bytes per key event | idle CPU | idle bytes/s | p50 over floor |\n|---|---|---|---|---|---|\n")
		for i := 0; i+1 < len(rows); i += 2 {
			k, b := rows[i], rows[i+1]
			ratio := func(x, y float64) string {
				if y == 0 {
					return "–"
				}
				return strconv.FormatFloat(x/y, 'f', 2, 64)
			}
			fmt.Fprintf(&w, "| %d %% | %s | %s | %s | %s | %s |\n", k.Loss,
				ratio(float64(k.CPU)/float64(k.Events), float64(b.CPU)/float64(b.Events)),
				ratio(float64(k.Bytes)/float64(k.Events), float64(b.Bytes)/float64(b.Events)),
				ratio(float64(k.IdleCPU), float64(b.IdleCPU)), ratio(float64(k.IdleBytes), float64(b.IdleBytes)),
				ratio(float64(k.P50-f50), float64(b.P50-f50)))
		}
	} else {
		if *peersOnly != "" {
			fmt.Fprintf(&w, "\nOnly %s was measured (-peers.only): no ratios.\n", *peersOnly)
		} else {
			w.WriteString("\nBarrier (barriers, barrierc) was not installed: keyrelay alone.\n")
		}
	}
	w.WriteString(peersEnd + "\n")
	path := filepath.Join("..", "BENCHMARKS.md")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(old)
	i, j := strings.Index(s, peersBegin), strings.Index(s, peersEnd)
	if i >= 0 && j > i {
		s = s[:i] + w.String() + strings.TrimPrefix(s[j+len(peersEnd):], "\n")
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + w.String()
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote BENCHMARKS.md:\n%s", w.String())
}

func cmdOut(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
