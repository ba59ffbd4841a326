package netsim

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// send writes n numbered datagrams from a to b on nw and returns, in
// arrival order, the numbers b read and when (virtual time since the start).
func sendNumbered(t *testing.T, nw *Network, n int, gap time.Duration) (got []int, at []time.Duration) {
	t.Helper()
	a, err := nw.Listen("10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := nw.Listen("10.0.0.2:2")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 16)
		for {
			b.SetReadDeadline(time.Now().Add(time.Minute))
			n, _, err := b.ReadFrom(buf)
			if err != nil {
				return
			}
			got = append(got, int(binary.BigEndian.Uint32(buf[:n])))
			at = append(at, time.Since(start))
		}
	}()
	for i := range n {
		a.WriteTo(binary.BigEndian.AppendUint32(nil, uint32(i)), b.LocalAddr())
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	<-done // the reader's deadline ends it a minute after the last arrival
	return got, at
}

// TestLossRate: the drop fraction of independent loss is within 5 sigma of
// the configured probability over 20,000 datagrams.
func TestLossRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, p = 20000, 0.3
		got, _ := sendNumbered(t, NewNetwork(Config{Loss: p, Seed: 1}), n, time.Microsecond)
		lost := float64(n-len(got)) / n
		if sigma := math.Sqrt(p * (1 - p) / n); math.Abs(lost-p) > 5*sigma {
			t.Errorf("lost %.4f, want %.2f ± %.4f", lost, p, 5*sigma)
		}
	})
}

// meanGap is the mean length of runs of consecutive missing numbers.
func meanGap(got []int, n int) float64 {
	seen := make([]bool, n)
	for _, g := range got {
		seen[g] = true
	}
	runs, lost := 0, 0
	for i := range n {
		if !seen[i] {
			lost++
			if i == 0 || seen[i-1] {
				runs++
			}
		}
	}
	if runs == 0 {
		return 0
	}
	return float64(lost) / float64(runs)
}

// TestBurstLoss: Gilbert–Elliott loss comes in longer runs than independent
// loss of about the same rate.
func TestBurstLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20000
		bursty, _ := sendNumbered(t, NewNetwork(Config{BurstEnter: 0.05, BurstExit: 0.2, Seed: 2}), n, time.Microsecond)
		rate := float64(n-len(bursty)) / n // about 0.05/(0.05+0.2) = 0.2
		indep, _ := sendNumbered(t, NewNetwork(Config{Loss: rate, Seed: 2}), n, time.Microsecond)
		b, i := meanGap(bursty, n), meanGap(indep, n)
		if rate < 0.15 || rate > 0.25 || b < 3*i {
			t.Errorf("bursty: rate %.3f, mean run %.2f; independent: mean run %.2f", rate, b, i)
		}
	})
}

// TestDelayJitterReorderDuplicate: every arrival is within the configured
// delay bounds, exactly, in virtual time; reordering and duplication happen.
func TestDelayJitterReorderDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Config{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Duplicate: 0.1, Reorder: 0.1, Seed: 3}
		const n, gap = 2000, time.Millisecond
		got, at := sendNumbered(t, NewNetwork(c), n, gap)
		seen := map[int]int{}
		outOfOrder := 0
		for k, g := range got {
			seen[g]++
			d := at[k] - time.Duration(g)*gap
			if d < c.Delay-c.Jitter || d > c.Delay+c.Jitter+2*c.Jitter {
				t.Fatalf("datagram %d took %v, outside [%v, %v]", g, d, c.Delay-c.Jitter, c.Delay+3*c.Jitter)
			}
			if k > 0 && g < got[k-1] {
				outOfOrder++
			}
		}
		dups := len(got) - len(seen)
		if len(seen) != n || dups < n/20 || outOfOrder < n/20 {
			t.Errorf("%d distinct of %d, %d duplicates, %d out of order", len(seen), n, dups, outOfOrder)
		}
	})
}

func TestSameSeedSameDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := sendNumbered(t, NewNetwork(Config{Loss: 0.5, Seed: 9}), 500, 0)
		b, _ := sendNumbered(t, NewNetwork(Config{Loss: 0.5, Seed: 9}), 500, 0)
		c, _ := sendNumbered(t, NewNetwork(Config{Loss: 0.5, Seed: 10}), 500, 0)
		if !equal(a, b) || equal(a, c) {
			t.Errorf("seed 9 twice: equal=%v; seeds 9 and 10: equal=%v", equal(a, b), equal(a, c))
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork(Config{})
		nw.Partition("10.0.0.1:1", "10.0.0.2:2", true)
		got, _ := sendNumbered(t, nw, 10, 0)
		if len(got) != 0 {
			t.Errorf("%d datagrams crossed a partition", len(got))
		}
		if s := nw.Stats("10.0.0.1:1", "10.0.0.2:2"); s.Sent != 10 || s.Dropped != 10 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestDeadlineAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := NewNetwork(Config{})
		c, _ := nw.Listen("10.0.0.1:1")
		if _, err := nw.Listen("10.0.0.1:1"); err == nil {
			t.Error("listened twice on one address")
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		start := time.Now()
		_, _, err := c.ReadFrom(make([]byte, 1))
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("ReadFrom = %v after %v, want a deadline error after 1s", err, time.Since(start))
		}
		c.SetReadDeadline(time.Time{})
		go func() { time.Sleep(time.Minute); c.Close() }()
		if _, _, err := c.ReadFrom(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadFrom after Close = %v", err)
		}
		if _, err := c.WriteTo([]byte{1}, c.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("WriteTo after Close = %v", err)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Loss: -0.1}, {Loss: 1.5}, {Duplicate: 2}, {Delay: -time.Second}, {BurstEnter: 0.1}, {Jitter: time.Hour}} {
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := (Config{Loss: 1, BurstEnter: 0.1, BurstExit: 0.5, Delay: time.Second}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestProxyLoopback: the UDP proxy forwards in order on a clean link, drops
// on a lossy one, and relays replies back to the client.
func TestProxyLoopback(t *testing.T) {
	target, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	run := func(c Config, n int) (got int, replies int) {
		p := &Proxy{Listen: "127.0.0.1:0", Target: target.LocalAddr().String(), Forward: c}
		addr, err := p.Start()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error)
		go func() { served <- p.Serve(ctx) }()
		client, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		for i := range n {
			client.WriteTo([]byte{byte(i)}, addr)
		}
		buf := make([]byte, 8)
		last := -1
		for {
			target.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			k, from, err := target.ReadFrom(buf)
			if err != nil {
				break
			}
			if c.Loss == 0 && int(buf[0]) != last+1 {
				t.Errorf("clean link: got %d after %d", buf[0], last)
			}
			last = int(buf[0])
			got++
			target.WriteTo(buf[:k], from)
		}
		for {
			client.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, _, err := client.ReadFrom(buf); err != nil {
				break
			}
			replies++
		}
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		return got, replies
	}
	if got, replies := run(Config{}, 50); got != 50 || replies != 50 {
		t.Errorf("clean link: %d forwarded, %d replies; want 50, 50", got, replies)
	}
	if got, _ := run(Config{Loss: 0.5, Seed: 4}, 200); got < 60 || got > 140 {
		t.Errorf("50%% loss: %d of 200 forwarded", got)
	}
}

// TestProxySetLoss: SetLoss changes the loss from the next datagram on
// (a clean link, then one dropping everything forward), and refuses a
// probability out of 0..1, or a call before Start.
func TestProxySetLoss(t *testing.T) {
	target, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	p := &Proxy{Listen: "127.0.0.1:0", Target: target.LocalAddr().String()}
	if err := p.SetLoss(0.5, 0.5); err == nil {
		t.Error("SetLoss before Start: no error")
	}
	addr, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- p.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	client, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// send writes n datagrams and waits until the proxy decided on each.
	send := func(n int) StatsSnapshot {
		t.Helper()
		before, _ := p.Stats()
		for i := range n {
			client.WriteTo([]byte{byte(i)}, addr)
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			f, _ := p.Stats()
			if f.Sent == before.Sent+int64(n) {
				return StatsSnapshot{Sent: f.Sent - before.Sent, Dropped: f.Dropped - before.Dropped}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the proxy decided on %d of %d datagrams within 10s", f.Sent-before.Sent, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if s := send(50); s.Dropped != 0 {
		t.Errorf("clean link: %d of 50 dropped", s.Dropped)
	}
	if err := p.SetLoss(1, 0); err != nil {
		t.Fatal(err)
	}
	if s := send(50); s.Dropped != 50 {
		t.Errorf("after SetLoss(1, …): %d of 50 dropped, want all", s.Dropped)
	}
	for _, bad := range [][2]float64{{-0.1, 0}, {0, 1.5}} {
		if err := p.SetLoss(bad[0], bad[1]); err == nil {
			t.Errorf("SetLoss(%v, %v): no error", bad[0], bad[1])
		}
	}
}
