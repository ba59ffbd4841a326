package wire

// Replay window (RFC 6479): a ring of 64-bit blocks holding one bit per
// recent counter, so a duplicate is found in O(1) and the window slides
// without shifting bits. Modelled on wireguard-go's replay package.
const (
	replayBlockBits = 64
	replayRingLen   = 32 // blocks; a power of two
	// ReplayWindow is how many counters below the newest are still
	// accepted (once each).
	ReplayWindow = (replayRingLen - 1) * replayBlockBits
)

// ReplayFilter rejects counters seen before or too old. The zero value is
// ready to use. It is not safe for concurrent use. Call Accept only after the
// packet has authenticated, so forged packets cannot move the window.
type ReplayFilter struct {
	last uint64
	ring [replayRingLen]uint64
}

// Seen reports whether counter must be rejected: already accepted, or older
// than the window. It changes nothing.
func (f *ReplayFilter) Seen(counter uint64) bool {
	if counter > f.last {
		return false
	}
	if f.last-counter >= ReplayWindow {
		return true
	}
	block := counter / replayBlockBits % replayRingLen
	return f.ring[block]&(1<<(counter%replayBlockBits)) != 0
}

// Accept records counter; it reports false (and records nothing) if Seen.
func (f *ReplayFilter) Accept(counter uint64) bool {
	if f.Seen(counter) {
		return false
	}
	if counter > f.last {
		// Clear the blocks the window slides over.
		cur, next := f.last/replayBlockBits, counter/replayBlockBits
		for i, n := cur+1, min(next-cur, replayRingLen); n > 0; i, n = i+1, n-1 {
			f.ring[i%replayRingLen] = 0
		}
		f.last = counter
	}
	f.ring[counter/replayBlockBits%replayRingLen] |= 1 << (counter % replayBlockBits)
	return true
}
