package replay

import (
	"testing"

	"github.com/keyrelay/keyrelay/wire"
	"pgregory.net/rapid"
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

// TestMissing (PROTOCOL.md §9): an ack's missing bits, bit i set ⇔
// packet Newest-1-i did not arrive, for the packets from 1 up: with the
// newest below 65 (the bits of counters below 1 are 0), across the ring's
// block boundaries, and after gaps of more than the 64 bits and more than
// the window. The sender reads them back with wire.Ack.Received.
func TestMissing(t *testing.T) {
	seq := func(from, to uint64) []uint64 {
		var s []uint64
		for c := from; c <= to; c++ {
			s = append(s, c)
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		accepted []uint64
		newest   uint64
		missing  uint64
	}{
		{"none yet", nil, 0, 0},
		{"only the first", []uint64{1}, 1, 0},
		{"the first four lost, newest below 65", []uint64{5}, 5, 0b1111},
		{"scattered loss", []uint64{1, 2, 4, 7, 9, 10}, 10, 0b101_1010}, // 8,6,5,3 → bits 1,3,4,6
		{"none lost, newest 64: no bit for counter 0", seq(1, 64), 64, 0},
		{"none lost, newest 65: all 64 bits name packets", seq(1, 65), 65, 0},
		{"none lost, across blocks", seq(1, 200), 200, 0},
		{"counter 1 lost, newest 65: the top bit", seq(2, 65), 65, 1 << 63},
		{"counter 1 lost, newest 66: past the bits", seq(2, 66), 66, 0},
		{"a gap of 64", []uint64{1, 66}, 66, ^uint64(0)},
		{"a gap of more than 64", append(seq(1, 10), 100), 100, ^uint64(0)},
		{"a gap of more than 64, the bits reach back before it", append(seq(1, 10), 70), 70, 1<<59 - 1}, // 6..10 → bits 63..59
		{"a gap of more than the window", append(seq(1, 10), 10*Window), 10 * Window, ^uint64(0)},
		{"a late packet after a gap", append(seq(1, 10), 100, 50), 100, ^uint64(0) &^ (1 << 49)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Filter
			in := map[uint64]bool{}
			for _, c := range tc.accepted {
				f.Accept(c)
				in[c] = true
			}
			if f.Newest() != tc.newest || f.Missing() != tc.missing {
				t.Fatalf("newest %d missing %#x, want %d and %#x", f.Newest(), f.Missing(), tc.newest, tc.missing)
			}
			if tc.newest == 0 {
				return
			}
			a := wire.Ack{Header: wire.Header{Type: wire.TypeAck, Flags: wire.FlagOneWay, Session: 1, Counter: 1}, Newest: f.Newest(), Missing: f.Missing()}
			if _, err := a.Append(nil); err != nil {
				t.Fatalf("the wire refuses the filter's ack: %v", err)
			}
			for c := tc.newest - min(tc.newest, wire.AckBits); c <= tc.newest; c++ {
				if a.Received(c) != in[c] {
					t.Errorf("Received(%d) = %v, want %v (missing %#x)", c, a.Received(c), in[c], a.Missing)
				}
			}
		})
	}
}

// TestMissingMatchesModel (PROTOCOL.md §9): for any pattern of loss,
// reordering and jumps, the missing bits are exactly the counters from 1 up
// among the 64 before the newest that were not accepted, and the wire
// accepts them as they are.
func TestMissingMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f Filter
		in := map[uint64]bool{}
		var last uint64
		for range rapid.IntRange(1, 200).Draw(t, "packets") {
			var c uint64
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0: // the next, or a few later (loss)
				c = last + rapid.Uint64Range(1, 4).Draw(t, "ahead")
			case 1: // a jump past the bits
				c = last + rapid.Uint64Range(1, 200).Draw(t, "jump")
			default: // late (reordered) or a duplicate
				c = max(1, last-min(last, rapid.Uint64Range(0, 70).Draw(t, "back")))
			}
			if f.Accept(c) {
				in[c] = true
				last = max(last, c)
			}
			var want uint64
			for i := uint64(0); i < 64 && i+1 < last; i++ {
				if !in[last-1-i] {
					want |= 1 << i
				}
			}
			if f.Newest() != last || f.Missing() != want {
				t.Fatalf("after %d: newest %d missing %#x, want %d and %#x", c, f.Newest(), f.Missing(), last, want)
			}
			if want&^wire.MissingMask(last) != 0 {
				t.Fatalf("missing %#x names counters below 1 (newest %d)", want, last)
			}
		}
	})
}
