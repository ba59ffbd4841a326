package eventqueue

import (
	"errors"
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// MaxLen is the longest queue this package makes; it matches the one-byte
// length of the wire format.
const MaxLen = 255

// Errors Add returns for events it cannot take; callers test them with errors.Is.
var (
	ErrStamp = errors.New("event stamp is not newer than the queue's newest event")
	ErrEvent = errors.New("event is not a key-down or key-up of a key")
)

// Result says what Add did with an event.
type Result uint8

const (
	// Added: the event is at the front of the queue.
	Added Result = iota
	// Dropped: the queue is full of lone key-downs of other keys (the seed's
	// step 5), so the event was dropped.
	Dropped
	// Repeat: a key-down for a key the queue already holds (auto-repeat); no event.
	Repeat
	// Unheld: a key-up for a key the queue does not hold; no event.
	Unheld
)

func (r Result) String() string {
	switch r {
	case Added:
		return "added"
	case Dropped:
		return "dropped"
	case Repeat:
		return "repeat"
	case Unheld:
		return "unheld"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Queue is the sender's fixed-length balanced queue, newest event at index 0.
// It is not safe for concurrent use.
type Queue struct {
	ev   []Event
	seen codeSet
	// nchar counts the character events in ev: with none, step 4 needs
	// no test for characters.
	nchar int
	// evicted is the newest stamp of a real event Add pushed out (Evicted).
	evicted uint64
}

// New returns a queue of n events, all None and stamped 0.
func New(n int) (*Queue, error) {
	if n < 1 || n > MaxLen {
		return nil, fmt.Errorf("queue length %d out of range 1..%d", n, MaxLen)
	}
	return &Queue{ev: make([]Event, n)}, nil
}

// Events returns the queue, newest first. The slice is the queue's own: it is
// valid until the next Add and must not be modified.
func (q *Queue) Events() []Event { return q.ev }

// Newest is the stamp of the event at index 0.
func (q *Queue) Newest() uint64 { return q.ev[0].Stamp }

// NextStamp turns a session clock reading (milliseconds) into the stamp of the
// next event: the clock, or one more than the newest stamp if the clock has not
// moved past it.
func (q *Queue) NextStamp(clockMillis uint64) uint64 {
	return max(clockMillis, q.ev[0].Stamp+1)
}

// Held reports whether the queue holds code down: its newest event for code is
// a key-down.
func (q *Queue) Held(code keys.Key) bool {
	for _, e := range q.ev {
		if e.Key == code && e.Kind != None {
			return e.Kind == Down
		}
	}
	return false
}

// HeldKeys appends the keys the queue holds down to dst, oldest press first.
func (q *Queue) HeldKeys(dst []keys.Key) []keys.Key {
	return heldKeys(dst, q.ev)
}

// heldKeys lists the keys whose newest event in queue is a key-down, oldest
// first.
func heldKeys(dst []keys.Key, queue []Event) []keys.Key {
	for i := len(queue) - 1; i >= 0; i-- {
		e := queue[i]
		if e.Kind == Down && newestOf(queue, e.Key) == i {
			dst = append(dst, e.Key)
		}
	}
	return dst
}

// newestOf is the index of the newest real event for code in queue, or -1.
func newestOf(queue []Event, code keys.Key) int {
	for i, e := range queue {
		if e.Key == code && e.Kind != None {
			return i
		}
	}
	return -1
}

// Add puts e at the front of the queue following the seed's sender steps 1–7,
// after filtering repeats and unheld key-ups (see the package doc). It returns
// an error, and changes nothing, for an event that is not a key-down or key-up
// of a non-zero key, or whose stamp is not newer than the queue's newest.
func (q *Queue) Add(e Event) (Result, error) {
	if (e.Kind != Down && e.Kind != Up) || e.Key == 0 {
		return 0, fmt.Errorf("%w: %v of key %v", ErrEvent, e.Kind, e.Key)
	}
	if e.Stamp <= q.ev[0].Stamp {
		return 0, fmt.Errorf("%w: %d <= %d", ErrStamp, e.Stamp, q.ev[0].Stamp)
	}
	held := q.Held(e.Key)
	if e.Kind == Down && held {
		return Repeat, nil
	}
	if e.Kind == Up && !held {
		return Unheld, nil
	}

	// 1.–5. (lastShiftIndex)
	last := q.lastShiftIndex(e)
	if last < 0 {
		return Dropped, nil
	}
	// 6. Shift the events at 0 .. last-1 over by one (overwriting the event at
	//    the last shift index).
	if out := q.ev[last]; out.Kind != None {
		q.evicted = max(q.evicted, out.Stamp)
		if out.Key.IsChar() {
			q.nchar--
		}
	}
	copy(q.ev[1:last+1], q.ev[:last])
	// 7. Put the event at index 0.
	q.ev[0] = e
	if e.Key.IsChar() {
		q.nchar++
	}
	return Added, nil
}

// lastShiftIndex is the seed's sender steps 1–5 for e: the index whose
// event Add overwrites, or -1 when the event is dropped for want of room.
func (q *Queue) lastShiftIndex(e Event) int {
	n := len(q.ev)
	// 1. Set the last shift index to N - 1.
	last := n - 1
	// 2. While the event at the last shift index is a key-down of a different
	//    key, subtract one from the last shift index.
	for last >= 0 && q.ev[last].Kind == Down && q.ev[last].Key != e.Key {
		last--
	}
	// 3. Set the seen keycodes set to the empty set. (It is empty between
	//    calls: it is cleared right after step 4.)
	// 4. For each index i from 0 to N - 1: if the keycode at i was seen and i
	//    is past the last shift index, move the last shift index to i; then
	//    add the keycode at i to the seen set.
	//    The set is a bitmap of physical keys and a list of characters
	//    (codeSet), written out here because this loop runs N times per
	//    event; a queue without characters, the usual one, skips the test
	//    for them.
	if q.nchar == 0 {
		for i := range n {
			c := uint16(q.ev[i].Key) // every key physical: 16 bits
			w, bit := &q.seen.bits[c/64], uint64(1)<<(c%64)
			if *w&bit != 0 && i > last {
				last = i
			}
			*w |= bit
		}
	} else {
		for i := range n {
			var seen bool
			if k := q.ev[i].Key; k < 1<<16 {
				c := uint16(k)
				w, bit := &q.seen.bits[c/64], uint64(1)<<(c%64)
				seen = *w&bit != 0
				*w |= bit
			} else {
				seen = q.seen.testAndSetChar(k)
			}
			if seen && i > last {
				last = i
			}
		}
	}
	q.seen.clear(q.ev)
	// 5. If the last shift index is below zero there is no room: the event
	//    is dropped (the caller's step 5).
	return last
}

// Evicted is the newest stamp of a real event Add has pushed out of the
// queue (0: none yet). While Evicted is at most a stamp s, every event
// added after the queue's newest was s is still in the queue: what an
// abridged packet relies on (Rebuild, PROTOCOL.md §3.3).
func (q *Queue) Evicted() uint64 { return q.evicted }

// Victim returns the event Add(e) would push out of the queue, and whether
// Add would add e at all (it does not for a repeat, an unheld key-up, an
// invalid event or a full queue). A None victim loses nothing. Victim
// changes nothing; a sender uses it to hold e back rather than lose an event
// a receiver has not acknowledged.
func (q *Queue) Victim(e Event) (Event, bool) {
	if (e.Kind != Down && e.Kind != Up) || e.Key == 0 || e.Stamp <= q.ev[0].Stamp {
		return Event{}, false
	}
	held := q.Held(e.Key)
	if e.Kind == Down && held || e.Kind == Up && !held {
		return Event{}, false
	}
	last := q.lastShiftIndex(e)
	if last < 0 {
		return Event{}, false
	}
	return q.ev[last], true
}

// codeSet is the set of keys of step 3: a bitmap for physical keys (16-bit
// codes, the keys.Key values below 1<<16) and a short list for characters,
// cleared by removing the keys of the queue that filled it, so step 3 costs
// O(N) and Add allocates nothing.
type codeSet struct {
	bits  [1 << 16 / 64]uint64
	nchar int
	chars [MaxLen]keys.Key
}

// testAndSetChar adds a character to the set and reports whether it was
// there already.
func (s *codeSet) testAndSetChar(k keys.Key) bool {
	for _, x := range s.chars[:s.nchar] {
		if x == k {
			return true
		}
	}
	if s.nchar < len(s.chars) {
		s.chars[s.nchar] = k
		s.nchar++
	}
	return false
}

// clear empties the set, which must hold no keys but those of queue.
func (s *codeSet) clear(queue []Event) {
	for _, e := range queue {
		// A character's low bits name a word too: zeroing it is harmless
		// (every word set is a physical key's of queue, and all are
		// zeroed), and cheaper than a test per event.
		s.bits[uint16(e.Key)/64] = 0
	}
	s.nchar = 0
}
