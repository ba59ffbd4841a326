package sender_test

import (
	"context"
	"net"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
)

// discard is a Writer that drops every packet (counting them), so a
// benchmark measures the sender, not a socket.
type discard struct{ n int }

func (d *discard) WriteTo(b []byte, _ net.Addr) (int, error) { d.n++; return len(b), nil }

// typing emits n key events: taps of rotating letters, Shift held over
// every fourth, as a person types.
type typing struct{ n int }

func (s typing) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for i := 0; i < s.n; i += 2 {
		k := keys.Key(keys.KeyA) + keys.Key(i/2%26)
		if err := emit(k, true); err != nil {
			return err
		}
		if err := emit(k, false); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkKeyEvent is the sender's CPU and allocations per key event
// (issue 14 must-have 4): a source's event through Run into the queue, the
// packet sealed and handed to the socket (each event sends one), no
// feedback. The figure per op is per key event.
func BenchmarkKeyEvent(b *testing.B) {
	w := &discard{}
	s, err := sender.New(sender.Config{Conn: w, Dests: []net.Addr{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7575}},
		PSK: key, Linger: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := s.Run(context.Background(), typing{b.N}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(w.n)/float64(b.N), "packets/event")
}
