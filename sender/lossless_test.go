package sender_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// downLog records the key-downs a receiver injects because the sender sent
// them.
type downLog struct {
	mu    sync.Mutex
	downs []keys.Key
}

func (d *downLog) Inject(k inject.Event) error {
	if k.Down && k.Cause == eventqueue.Sent {
		d.mu.Lock()
		d.downs = append(d.downs, k.Key)
		d.mu.Unlock()
	}
	return nil
}
func (d *downLog) Close() error { return nil }

type tap struct {
	wait time.Duration
	code keys.Key
}

type taps []tap

func (ts taps) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for _, t := range ts {
		time.Sleep(t.wait)
		emit(t.code, true)
		emit(t.code, false)
	}
	return nil
}

// TestLosslessTyping (issue 5): with feedback, typing bursts much longer than
// the queue, through 0–30 % loss both ways, duplication, reordering and
// outages of up to 1 s,
// lose no key-down: every one arrives, in order, unless the backlog
// overflowed (then the test says so and checks only the order).
func TestLosslessTyping(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		loss := float64(rapid.IntRange(0, 30).Draw(rt, "loss%")) / 100
		outageAt := time.Duration(rapid.IntRange(0, 2000).Draw(rt, "outageAtMs")) * time.Millisecond
		outage := time.Duration(rapid.IntRange(0, 1000).Draw(rt, "outageMs")) * time.Millisecond
		seed := rapid.Uint64().Draw(rt, "seed")
		dup := float64(rapid.IntRange(0, 20).Draw(rt, "dup%")) / 100
		reorder := float64(rapid.IntRange(0, 30).Draw(rt, "reorder%")) / 100
		var ts taps
		for range rapid.IntRange(1, 120).Draw(rt, "taps") {
			ts = append(ts, tap{time.Duration(rapid.IntRange(0, 40).Draw(rt, "waitMs")) * time.Millisecond,
				keys.Key(keys.KeyA) + keys.Key(rapid.IntRange(0, 25).Draw(rt, "key"))})
		}
		var sent []keys.Key
		for _, x := range ts {
			sent = append(sent, x.code)
		}
		var got []keys.Key
		var st sender.Stats
		synctest.Test(t, func(t *testing.T) {
			nw := netsim.NewNetwork(netsim.Config{Loss: loss, Delay: 10 * time.Millisecond, Jitter: 3 * time.Millisecond,
				Duplicate: dup, Reorder: reorder, Seed: seed})
			rc, _ := nw.Listen("10.0.0.2:7575")
			sc, _ := nw.Listen("10.0.0.1:40000")
			log := &downLog{}
			r, _ := receiver.New(receiver.Config{Conn: rc, Injector: log, PSK: key, Timeout: 2 * time.Second})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.Run(ctx); close(done) }()
			// The link comes back outage after it went (chained, so the two
			// never fire in the wrong order).
			time.AfterFunc(outageAt, func() {
				nw.Partition("10.0.0.1:40000", "10.0.0.2:7575", true)
				nw.Partition("10.0.0.2:7575", "10.0.0.1:40000", true)
				time.AfterFunc(outage, func() {
					nw.Partition("10.0.0.1:40000", "10.0.0.2:7575", false)
					nw.Partition("10.0.0.2:7575", "10.0.0.1:40000", false)
				})
			})
			s, _ := sender.New(sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, PSK: key, QueueLen: 4,
				Feedback: []net.PacketConn{sc}, Linger: 500 * time.Millisecond})
			st, _ = s.Run(context.Background(), ts)
			time.Sleep(3 * time.Second)
			sc.Close()
			cancel()
			<-done
			got = log.downs
		})
		if st.Overflow > 0 {
			rt.Logf("backlog overflowed %d times", st.Overflow)
		} else if !slices.Equal(got, sent) {
			rt.Fatalf("key-downs arrived %v\nsent %v\n(stats %v, held %d)", show(got), show(sent), st, st.Held)
		}
	})
}

func show(cs []keys.Key) string { return fmt.Sprint(cs) }
