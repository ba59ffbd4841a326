package replay

import (
	"testing"

	"github.com/keyrelay/keyrelay/wire"
)

// TestFilter (PROTOCOL.md §8.5): RFC 6479 behaviour, as numbered steps:
// each counter once; late ones within the window once; older than the
// window never; the window slides.
func TestFilter(t *testing.T) {
	var f Filter
	steps := []struct {
		c    uint64
		want bool
	}{
		{1, true}, {1, false}, {3, true}, {2, true}, {2, false}, {3, false},
		{Window + 3, true}, {3, false}, {4, true}, {Window + 3, false},
		{10 * Window, true}, {Window + 4, false}, {10*Window - 1, true},
		{10*Window - Window + 1, true}, {10*Window - Window, false},
	}
	for i, s := range steps {
		seen := f.Seen(s.c)
		if got := f.Accept(s.c); got != s.want || seen == s.want {
			t.Fatalf("step %d: Accept(%d) = %v (Seen %v), want %v", i, s.c, got, seen, s.want)
		}
	}
	// A long run with random reordering inside the window: every counter
	// accepted exactly once.
	var g Filter
	accepted := map[uint64]int{}
	for base := uint64(1); base < 20000; base += 50 {
		for _, off := range []uint64{49, 0, 25, 1, 48, 2, 47, 3, 24, 26} {
			if g.Accept(base + off) {
				accepted[base+off]++
			}
			if g.Accept(base + off) {
				t.Fatalf("%d accepted twice", base+off)
			}
		}
	}
	if len(accepted) != 400*10 {
		t.Errorf("%d distinct counters accepted, want 4000", len(accepted))
	}
}

// TestAckBits (PROTOCOL.md §9): bit i means packet Newest-1-i arrived
// (seed 001), as the sender reads it back with wire.Ack.Received.
func TestAckBits(t *testing.T) {
	var f Filter
	for _, c := range []uint64{1, 2, 4, 7, 9, 10} {
		f.Accept(c)
	}
	a := wire.Ack{Newest: f.Newest(), Bits: f.AckBits()}
	for c := uint64(1); c <= 12; c++ {
		want := c == 1 || c == 2 || c == 4 || c == 7 || c == 9 || c == 10
		if a.Received(c) != want {
			t.Errorf("Received(%d) = %v, want %v (bits %b)", c, a.Received(c), want, a.Bits)
		}
	}
	if a.Bits != 0b1_1010_0101 { // 9,7,4,2,1 → bits 0,2,5,7,8
		t.Errorf("bits %b", a.Bits)
	}
}

// TestAckBitsWidth: an ack tells about exactly the wire.AckBits packets
// before the newest, across block boundaries of the ring.
func TestAckBitsWidth(t *testing.T) {
	var f Filter
	for c := uint64(1); c <= 200; c++ {
		f.Accept(c)
	}
	if f.Newest() != 200 || f.AckBits() != ^uint64(0) {
		t.Fatalf("newest %d bits %b, want 200 and all %d set", f.Newest(), f.AckBits(), wire.AckBits)
	}
	var g Filter
	g.Accept(1)
	g.Accept(66) // 65 and 2..64 missing: only counter 1 is 65 back, past the bits
	if g.AckBits() != 0 {
		t.Errorf("bits %b, want none", g.AckBits())
	}
}
