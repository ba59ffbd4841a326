package relaytest_test

import (
	"net"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/flood"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// BenchmarkLoopbackLatency measures, over real loopback UDP sockets, the time
// from a key event entering the sender to the receiver handing it to its
// injector: one key-down then one key-up per iteration. It reports the
// median and 99th percentile of all events. The flood variant does the same
// while another socket sends the receiver hostile datagrams
// (internal/testutil/flood) as fast as it can: the difference is the flood's cost.
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
	injected := make(chan fake.Arrival, 16)
	rl := relaytest.Start(b, relaytest.Config{RecvConn: rc, SendConn: sc, PSK: relayKey,
		Receiver: receiver.Config{Injector: &fake.Recorder{Notify: injected}, Timeout: time.Hour},
		Sender:   sender.Config{Linger: -1}})
	feed := rl.Feed(injected)

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
			lat = append(lat, feed.Latency(b, fake.Event{Key: keys.Key(4 + i%26), Down: down}))
		}
	}
	b.StopTimer()
	if flooded {
		close(stopFlood)
		b.ReportMetric(float64(<-floodDone)/b.Elapsed().Seconds(), "flood-datagrams/s")
	}
	feed.Close()
	p50, p99 := relaytest.Percentiles(lat)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
}
