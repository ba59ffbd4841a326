//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time a process's threads have used, from
// /proc/PID/task/*/schedstat (nanoseconds, unlike /proc/PID/stat's 10 ms
// ticks, which are too coarse for a process using a fraction of a percent).
func cpuTime(t testing.TB, pid int) time.Duration {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schedstat for pid %d: %v", pid, err)
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that just ended
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", f, b)
		}
		sum += time.Duration(ns)
	}
	return sum
}

var acksSentRE = regexp.MustCompile(`(\d+) acks (?:and \d+ tickets )?sent`)

// BenchmarkIdlePair is what an idle connected pair costs (BENCHMARKS.md, The
// sender's targets: send + recv ≤ 0.6 % of one core together; at most one
// ack a second while nothing changes): the real binaries, `recv --inject
// log` and `send --script` sleeping, sealed, feedback on, over loopback.
// After 2 s to settle, it reads both processes' CPU time over 10 s. Idle
// acks/s are recv's own counts (from its exit summary): those of this
// session minus those of a session that only starts and ends (the acks a
// start and a final state earn at once), over the difference of their lives.
// Run it with -benchtime 1x.
func BenchmarkIdlePair(b *testing.B) {
	const settle, span = 2 * time.Second, 10 * time.Second
	script := filepath.Join(b.TempDir(), "idle.txt")
	if err := os.WriteFile(script, []byte("sleep 20s\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	short := filepath.Join(b.TempDir(), "short.txt")
	if err := os.WriteFile(short, []byte("sleep 0s\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	acksOf := func(recv *proc) int {
		recv.stopWith(syscall.SIGTERM)
		m := acksSentRE.FindStringSubmatch(recv.stderr.String())
		if m == nil {
			b.Fatalf("recv's summary has no ack count:\n%s", recv.stderr)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for b.Loop() {
		base := start(b, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
		began := time.Now()
		start(b, "send", "--to", base.addr, "--script", short, "--quiet").wait(10 * time.Second)
		baseLife, baseAcks := time.Since(began), acksOf(base)

		recv := start(b, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
		began = time.Now()
		send := start(b, "send", "--to", recv.addr, "--script", script, "--quiet")
		time.Sleep(settle) // not waiting for an event: letting start-up pass
		s0, r0 := cpuTime(b, send.cmd.Process.Pid), cpuTime(b, recv.cmd.Process.Pid)
		t0 := time.Now()
		time.Sleep(span) // the measurement itself
		s1, r1 := cpuTime(b, send.cmd.Process.Pid), cpuTime(b, recv.cmd.Process.Pid)
		wall := time.Since(t0)
		send.stopWith(syscall.SIGTERM)
		life, acks := time.Since(began), acksOf(recv)
		pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
		b.ReportMetric(pct(s1-s0), "send-%cpu")
		b.ReportMetric(pct(r1-r0), "recv-%cpu")
		b.ReportMetric(pct(s1-s0+r1-r0), "pair-%cpu")
		b.ReportMetric(float64(acks-baseAcks)/(life-baseLife).Seconds(), "idle-acks/s")
	}
}
