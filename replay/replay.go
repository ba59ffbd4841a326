// Package replay is the per-session window of packet counters (PROTOCOL.md
// §8.5): which counters a session has accepted, so a duplicate or a replay
// is refused, and, read back the other way, which packets did not arrive,
// for the missing bits of an ack (§9). The receiver keeps one per sender session and the
// sender one per receiver's acks. Modelled on wireguard-go's replay package.
//
// The window is an RFC 6479 ring of 64-bit blocks holding one bit per
// recent counter: a duplicate is found in O(1) and the window slides
// without shifting bits.
package replay

const (
	blockBits = 64
	ringLen   = 32 // blocks; a power of two
	// Window is how many counters below the newest are still accepted
	// (once each): the ring less the block being filled.
	Window = (ringLen - 1) * blockBits
)

// Filter rejects counters seen before or too old. The zero value is ready
// to use and has seen nothing (counters start at 1). It is not safe for
// concurrent use. Call Accept only after the packet has authenticated, so
// forged packets cannot move the window.
type Filter struct {
	last uint64
	ring [ringLen]uint64
}

// Seen reports whether counter must be rejected: already accepted, or older
// than the window. It changes nothing.
func (f *Filter) Seen(counter uint64) bool {
	if counter > f.last {
		return false
	}
	if f.last-counter >= Window {
		return true
	}
	return f.has(counter)
}

// has reports whether counter's bit is set; counter must be within the
// window.
func (f *Filter) has(counter uint64) bool {
	return f.ring[counter/blockBits%ringLen]&(1<<(counter%blockBits)) != 0
}

// Accept records counter; it reports false (and records nothing) if Seen.
func (f *Filter) Accept(counter uint64) bool {
	if f.Seen(counter) {
		return false
	}
	if counter > f.last {
		// Clear the blocks the window slides over.
		cur, next := f.last/blockBits, counter/blockBits
		for i, n := cur+1, min(next-cur, ringLen); n > 0; i, n = i+1, n-1 {
			f.ring[i%ringLen] = 0
		}
		f.last = counter
	}
	f.ring[counter/blockBits%ringLen] |= 1 << (counter % blockBits)
	return true
}

// Newest is the newest counter accepted (0: none yet): an ack's newest
// (PROTOCOL.md §9).
func (f *Filter) Newest() uint64 { return f.last }

// Missing is an ack's missing bits (PROTOCOL.md §9): bit i set means counter
// Newest-1-i was not accepted, for the counters from 1 up (Glenn Fiedler's
// ack_bits inverted; the bits of counters below 1 are 0, as the wire
// requires). The 64 counters before the newest always lie inside the window,
// and Accept cleared the blocks a jump of the newest slid over, so the
// counters a gap skipped read as missing.
func (f *Filter) Missing() uint64 {
	var bits uint64
	for i := uint64(0); i < 64 && i+1 < f.last; i++ {
		if !f.has(f.last - 1 - i) {
			bits |= 1 << i
		}
	}
	return bits
}
