package eventqueue

import (
	"fmt"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// typing fills a queue of n with a typing pattern: taps of rotating letters
// while one modifier stays held, the common case on a real keyboard.
func typing(b *testing.B, n int) *Queue {
	q, err := New(n)
	if err != nil {
		b.Fatal(err)
	}
	stamp := uint64(1)
	add := func(c keys.Key, k Kind) {
		if _, err := q.Add(Event{Key: c, Kind: k, Stamp: stamp}); err != nil {
			b.Fatal(err)
		}
		stamp++
	}
	add(0xE1, Down)
	for i := range 2 * n {
		c := keys.Key(4 + i%26)
		add(c, Down)
		add(c, Up)
	}
	return q
}

func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typing(b, n)
			stamp := q.Newest()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c := keys.Key(4 + i%26)
				stamp++
				_, _ = q.Add(Event{Key: c, Kind: Down, Stamp: stamp})
				stamp++
				_, _ = q.Add(Event{Key: c, Kind: Up, Stamp: stamp})
			}
		})
	}
}

func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typing(b, n)
			prev := append([]Event(nil), q.Events()...)
			s := q.Newest()
			_, _ = q.Add(Event{Key: 0x04, Kind: Down, Stamp: s + 1})
			_, _ = q.Add(Event{Key: 0x04, Kind: Up, Stamp: s + 2})
			in := q.Events()
			dst := make([]Dispatch, 0, 2*n)
			b.ReportAllocs()
			for b.Loop() {
				dst = Diff(dst[:0], prev, in, true)
			}
			if len(dst) != 2 {
				b.Fatalf("diff dispatched %d events, want 2", len(dst))
			}
		})
	}
}
