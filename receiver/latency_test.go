package receiver_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// chanSource emits the key events it is given.
type chanSource chan struct {
	code keys.Code
	down bool
}

func (c chanSource) Play(ctx context.Context, emit func(keys.Code, bool) error) error {
	for {
		select {
		case ev, ok := <-c:
			if !ok {
				return nil
			}
			if err := emit(ev.code, ev.down); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signalInjector reports every injected key on a channel, stamped.
type signalInjector chan time.Time

func (s signalInjector) Inject(inject.Key) error { s <- time.Now(); return nil }
func (s signalInjector) Close() error            { return nil }

// BenchmarkLoopbackLatency measures, over real loopback UDP sockets, the time
// from a key event entering the sender to the receiver handing it to its
// injector: one key-down then one key-up per iteration. It reports the
// median and 99th percentile of all events.
func BenchmarkLoopbackLatency(b *testing.B) {
	rc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	injected := make(signalInjector, 16)
	r, err := receiver.New(receiver.Config{Conn: rc, Injector: injected, Timeout: time.Hour, PSK: relayKey})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	recvDone := make(chan struct{})
	go func() { defer close(recvDone); r.Run(ctx) }()
	src := make(chanSource)
	s, err := sender.New(sender.Config{Conn: sc, Dests: []net.Addr{rc.LocalAddr()}, Linger: -1, PSK: relayKey})
	if err != nil {
		b.Fatal(err)
	}
	sendDone := make(chan struct{})
	go func() { defer close(sendDone); s.Run(ctx, src) }()

	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		for _, down := range []bool{true, false} {
			t0 := time.Now()
			src <- struct {
				code keys.Code
				down bool
			}{keys.Code(4 + i%26), down}
			select {
			case t1 := <-injected:
				lat = append(lat, t1.Sub(t0))
			case <-time.After(5 * time.Second):
				b.Fatal("a key event did not arrive within 5s on loopback")
			}
		}
	}
	b.StopTimer()
	close(src)
	<-sendDone
	cancel()
	// Drain what shutdown releases.
	go func() {
		for range injected {
		}
	}()
	<-recvDone
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
