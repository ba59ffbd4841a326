package relaytest_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// BenchmarkLossyLoopback is what a lost packet costs on a short-RTT link
// (BENCHMARKS.md, The sender's targets: p99 extra delay ≤ 3 ms at 10 % loss
// on loopback with no added delay). Real UDP sockets on 127.0.0.1, sealed,
// feedback on (keyrelay's defaults), each socket dropping the given share of
// the datagrams it writes, in both directions. One key event every 10 ms (a
// fast typist), from entering the sender to its injection. It reports the
// median, the 99th percentile, and extra-p99: p99 minus the median, the
// delay loss adds to the slowest 1 % of events (at 10 % loss most events
// lose nothing, so the median is the lossless latency of the same run).
func BenchmarkLossyLoopback(b *testing.B) {
	for _, loss := range []float64{0, 0.10} {
		b.Run(fmt.Sprintf("loss=%.0f%%", 100*loss), func(b *testing.B) { lossyLoopback(b, loss) })
	}
}

func lossyLoopback(b *testing.B, loss float64) {
	// netsim.Wrap drops the writes of a real socket (with no delay, the
	// others go out at once, from the writer's goroutine).
	listen := func(seed uint64) net.PacketConn {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		return netsim.Wrap(pc, netsim.Config{Loss: loss, Seed: seed})
	}
	injected := make(chan fake.Arrival, 16)
	rl := relaytest.Start(b, relaytest.Config{RecvConn: listen(1), SendConn: listen(2), PSK: relayKey, Feedback: true,
		Receiver: receiver.Config{Injector: &fake.Recorder{Notify: injected}, Timeout: time.Hour},
		Sender:   sender.Config{Linger: -1}})
	feed := rl.Feed(injected)
	pace := time.NewTicker(10 * time.Millisecond)
	defer pace.Stop()
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		for _, down := range []bool{true, false} {
			<-pace.C
			lat = append(lat, feed.Latency(b, fake.Event{Key: keys.Key(4 + i%26), Down: down}))
		}
	}
	b.StopTimer()
	feed.Close()
	p50, p99 := relaytest.Percentiles(lat)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64((p99 - p50).Microseconds()), "extra-p99-µs")
}
