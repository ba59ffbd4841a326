package sender_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// tapSource taps n keys, one every gap, holding each for hold, and records
// when each key-down was emitted.
type tapSource struct {
	n         int
	gap, hold time.Duration
	mu        *sync.Mutex
	emitted   map[keys.Key][]time.Time
}

func (s tapSource) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for i := range s.n {
		c := keys.Key(keys.KeyA) + keys.Key(i%26)
		s.mu.Lock()
		s.emitted[c] = append(s.emitted[c], time.Now())
		s.mu.Unlock()
		emit(c, true)
		time.Sleep(s.hold)
		emit(c, false)
		time.Sleep(s.gap - s.hold)
	}
	return nil
}

// downTimes is an Injector recording when each key-down arrives.
type downTimes struct {
	mu      *sync.Mutex
	arrived map[keys.Key][]time.Time
}

func (d downTimes) Inject(k inject.Event) error {
	if k.Down && k.Cause == 0 {
		d.mu.Lock()
		d.arrived[k.Key] = append(d.arrived[k.Key], time.Now())
		d.mu.Unlock()
	}
	return nil
}
func (downTimes) Close() error { return nil }

// keyDownLatencies relays 200 taps over link (both directions), with or
// without feedback, and returns the sorted key-down delivery latencies and
// how many key-downs never arrived.
func keyDownLatencies(t *testing.T, link netsim.Config, feedback bool) (lat []time.Duration, lost int) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(link)
		rc, _ := nw.Listen("10.0.0.2:7575")
		sc, _ := nw.Listen("10.0.0.1:40000")
		mu := &sync.Mutex{}
		arrived := map[keys.Key][]time.Time{}
		r, _ := receiver.New(receiver.Config{Conn: rc, Injector: downTimes{mu, arrived}, PSK: key, Timeout: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		cfg := sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, PSK: key, Linger: 300 * time.Millisecond}
		if feedback {
			cfg.Feedback = []net.PacketConn{sc}
		}
		s, _ := sender.New(cfg)
		src := tapSource{n: 200, gap: 150 * time.Millisecond, hold: 50 * time.Millisecond, mu: mu, emitted: map[keys.Key][]time.Time{}}
		s.Run(context.Background(), src)
		time.Sleep(time.Second)
		sc.Close()
		cancel()
		<-done
		for c, sent := range src.emitted {
			got := arrived[c]
			lost += len(sent) - len(got)
			for i := range min(len(sent), len(got)) {
				lat = append(lat, got[i].Sub(sent[i]))
			}
		}
	})
	slices.Sort(lat)
	return lat, lost
}

// TestBurstsCutLatency (issue 5 target): with 10 % loss both ways and a
// 20 ms ± 5 ms one-way delay, the p99 key-down latency with feedback and
// bursts is at most the one-way delay + 25 ms; the plain queue (no
// feedback, one-way) is well above it. Virtual time: exact and repeatable.
func TestBurstsCutLatency(t *testing.T) {
	link := netsim.Config{Loss: 0.10, Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 11}
	withBursts, lostB := keyDownLatencies(t, link, true)
	plain, lostP := keyDownLatencies(t, link, false)
	p99 := func(l []time.Duration) time.Duration { return l[len(l)*99/100] }
	t.Logf("key-down latency p50/p99/max: bursts %v/%v/%v (lost %d); plain %v/%v/%v (lost %d)",
		withBursts[len(withBursts)/2], p99(withBursts), withBursts[len(withBursts)-1], lostB,
		plain[len(plain)/2], p99(plain), plain[len(plain)-1], lostP)
	if got := p99(withBursts); got > 20*time.Millisecond+25*time.Millisecond {
		t.Errorf("with bursts p99 %v, want at most 45ms (the 20ms one-way delay + 25ms)", got)
	}
	if p99(plain) <= p99(withBursts)+20*time.Millisecond {
		t.Errorf("plain p99 %v is not clearly above the bursts' %v: the comparison shows nothing", p99(plain), p99(withBursts))
	}
	if lostB != 0 || lostP != 0 {
		t.Errorf("lost key-downs: %d with bursts, %d plain", lostB, lostP)
	}
}
