package sender_test

import (
	"context"
	"net"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/sender"
)

// discard is a Writer that drops every packet (counting them), so a
// benchmark measures the sender, not a socket.
type discard struct{ n int }

func (d *discard) WriteTo(b []byte, _ net.Addr) (int, error) { d.n++; return len(b), nil }

// BenchmarkKeyEvent is the sender's CPU and allocations per key event
// (BENCHMARKS.md, The sender's targets): a source's event through Run into
// the queue, the packet sealed, signed by this machine's identity (a one-way
// session, PROTOCOL.md §8.6) and handed to the socket (each event sends
// one), no feedback. The figure per op is per key event.
func BenchmarkKeyEvent(b *testing.B) {
	w := &discard{}
	id, err := identity.Generate()
	if err != nil {
		b.Fatal(err)
	}
	s, err := sender.New(sender.Config{Conn: w, Dests: []sender.Dest{{UDP: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7575}, OneWay: true}},
		PSK: key, Linger: -1, Identity: id})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	// b.N key events: taps of rotating letters, back to back.
	if _, err := s.Run(context.Background(), fake.Taps{N: (b.N + 1) / 2}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(w.n)/float64(b.N), "packets/event")
}
