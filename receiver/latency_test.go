package receiver_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/flood"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/sink"
)

// chanSource emits the key events it is given.
type chanSource chan struct {
	code keys.Key
	down bool
}

func (c chanSource) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
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

func (s signalInjector) Inject(sink.Event) error { s <- time.Now(); return nil }
func (s signalInjector) Close() error            { return nil }

// BenchmarkLoopbackLatency measures, over real loopback UDP sockets, the time
// from a key event entering the sender to the receiver handing it to its
// injector: one key-down then one key-up per iteration. It reports the
// median and 99th percentile of all events. The flood variant does the same
// while another socket sends the receiver hostile datagrams
// (internal/flood) as fast as it can: the difference is the flood's cost.
func BenchmarkLoopbackLatency(b *testing.B) {
	b.Run("quiet", func(b *testing.B) { loopbackLatency(b, false) })
	b.Run("flood", func(b *testing.B) { loopbackLatency(b, true) })
}

func loopbackLatency(b *testing.B, flooded bool) {
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

	floodDone := make(chan int)
	stopFlood := make(chan struct{})
	if flooded {
		go func() {
			fc, err := net.Dial("udp", rc.LocalAddr().String())
			if err != nil {
				panic(err)
			}
			defer fc.Close()
			dgrams := flood.Datagrams(10_000, 7)
			n := 0
			for {
				select {
				case <-stopFlood:
					floodDone <- n
					return
				default:
				}
				fc.Write(dgrams[n%len(dgrams)])
				n++
			}
		}()
	}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		for _, down := range []bool{true, false} {
			t0 := time.Now()
			src <- struct {
				code keys.Key
				down bool
			}{keys.Key(4 + i%26), down}
			select {
			case t1 := <-injected:
				lat = append(lat, t1.Sub(t0))
			case <-time.After(5 * time.Second):
				b.Fatal("a key event did not arrive within 5s on loopback")
			}
		}
	}
	b.StopTimer()
	if flooded {
		close(stopFlood)
		b.ReportMetric(float64(<-floodDone)/b.Elapsed().Seconds(), "flood-datagrams/s")
	}
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
