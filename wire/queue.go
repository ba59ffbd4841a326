package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
)

// Entry kinds on the wire (PROTOCOL.md §3). A key entry's code is a u16 HID
// usage; a character entry's is a uvarint Unicode scalar value.
const (
	kindNone     = 0
	kindKeyDown  = 1
	kindKeyUp    = 2
	kindCharDown = 3
	kindCharUp   = 4
)

// keyEntryLen is the kind byte and the two code bytes of a key entry;
// maxEntryLen the longest entry before its back: a kind byte and a
// character of up to 3 varint bytes (U+10FFFF needs 21 bits).
const (
	keyEntryLen = 3
	maxEntryLen = 4
)

// Queue is a queue packet (PROTOCOL.md §3).
type Queue struct {
	Header Header
	// Clock is the sender's session clock in milliseconds when it sent the
	// packet; a receiver uses it to tell a fresh session from one it joins.
	Clock uint64
	// Wall is the sender's wall clock (Unix milliseconds) when it sent the
	// packet; a receiver rejects packets too far from its own clock, which
	// defeats the replay of a recorded old session (PROTOCOL.md §8).
	Wall uint64
	// Since replaces Wall in a handshaken session's packets (flags SEALED alone):
	// a receiver that creates the session from this packet types only the
	// events newer than Since and presses the keys held then (a receiver
	// that restarted joins where it came in: PROTOCOL.md §8.3).
	Since uint64
	// Locks is the Caps Lock and Num Lock state the sender wants the
	// receiver to have, or unknown (0): PROTOCOL.md §3.2.
	Locks keys.Locks
	// Events is the queue, newest first; in an abridged packet only the
	// entries newer than Base.
	Events []eventqueue.Event
	// Abridged (handshaken packets only, PROTOCOL.md §3.3): the sender's
	// queue is N entries long, and Events are only those newer than Base,
	// every one a real event (possibly none at all: an idle packet). The
	// receiver takes the older entries from the queue it applied last
	// (eventqueue.Rebuilder). A packet carrying all N entries is never
	// abridged: it decodes as a whole queue, with N and Base 0.
	Abridged bool
	N        int
	Base     uint64
}

// MaxQueueLen is the largest encoding of a handshaken or plaintext queue
// packet of n entries, sealed: every varint at its longest (10 bytes),
// every entry a character beyond U+FFFF (4 bytes), plus the AEAD tag. The
// longer is a handshaken one, 20+10+10+1+1+1+10+64*4+63*10+16 = 955 bytes
// for n = 64 (the compact header at its longest, and its count of entries
// carried; a plaintext packet has the 22-byte header and no tag), so any
// 64-entry queue fits in MaxPacketSize. An abridged packet carries fewer
// entries and one more back: never longer. A one-way packet is longer by
// its signer and signature (MaxOneWayLen).
func MaxQueueLen(n int) int {
	const (
		plain      = HeaderLen + 10 + 10 + 1 + 1
		handshaken = CompactMaxLen + 10 + 10 + 1 + 1 + 1 + TagLen
	)
	return max(plain, handshaken) + entriesMaxLen(n)
}

// MaxOneWayLen is the largest encoding of a one-way sealed packet of n
// entries (PROTOCOL.md §5, §8.6): the 22-byte header, the body at its
// longest as for MaxQueueLen, the sending machine's public key and
// signature, and the tag: 1,052 bytes for n = 64.
func MaxOneWayLen(n int) int {
	return HeaderLen + 10 + 10 + 1 + 1 + SignedLen + TagLen + entriesMaxLen(n)
}

// entriesMaxLen is the most n entries take, with top and the backs.
func entriesMaxLen(n int) int {
	if n <= 0 {
		return 0
	}
	return 10 + n*maxEntryLen + (n-1)*10
}

// MaxSafeEvents is the longest queue whose handshaken or plaintext packet
// fits in MaxPacketSize whatever its stamps and keys; MaxSafeOneWayEvents
// the longest whose one-way packet does. Senders keep N at or below them.
const (
	MaxSafeEvents       = 80
	MaxSafeOneWayEvents = 74
)

// SealedLen is the length of q sealed as its flags say: Len, the tag, and
// a one-way packet's signer and signature. For a plaintext packet, which
// has no tag, it is TagLen longer than the packet.
func (q *Queue) SealedLen() int {
	n := q.Len() + TagLen
	if q.Header.Flags == OneWaySealed {
		n += SignedLen
	}
	return n
}

// Len is the encoded length of q in plaintext (add TagLen when sealed); it
// assumes q is valid (Append checks).
func (q *Queue) Len() int {
	n := q.Header.Len() + uvarintLen(q.Clock) + uvarintLen(q.second()) + 1 + 1
	for i, e := range q.Events {
		n += entryLen(e.Key)
		if i == 0 {
			n += uvarintLen(e.Stamp)
		} else {
			n += uvarintLen(q.Events[i-1].Stamp - e.Stamp)
		}
	}
	if Handshaken(q.Header.Flags) {
		n++ // the count of entries carried
	}
	if q.Abridged {
		if c := len(q.Events); c == 0 {
			n += uvarintLen(q.Base)
		} else {
			n += uvarintLen(q.Events[c-1].Stamp - q.Base)
		}
	}
	return n
}

// validate checks q against the decoding rules (PROTOCOL.md §4), so the
// encoder never produces a packet the decoder would reject.
func (q *Queue) validate() error {
	if q.Header.Type != TypeQueue {
		return fmt.Errorf("%w: queue packet with type %d", ErrType, q.Header.Type)
	}
	if err := q.Header.check(); err != nil {
		return err
	}
	if !q.Locks.Valid() {
		return fmt.Errorf("%w: locks %#02x", ErrQueue, uint8(q.Locks))
	}
	if q.Abridged {
		if err := q.checkAbridged(); err != nil {
			return err
		}
	} else if len(q.Events) < 1 || len(q.Events) > MaxEvents {
		return fmt.Errorf("%w: %d entries, want 1..%d", ErrQueue, len(q.Events), MaxEvents)
	}
	for i, e := range q.Events {
		if e.Key >= 1<<16 { // not a physical key: a valid character?
			if err := checkChar(i, e); err != nil {
				return err
			}
		}
		if err := checkEntry(q.Events, i, e); err != nil {
			return err
		}
	}
	// Up to MaxSafeEvents entries always fit (MaxQueueLen), or
	// MaxSafeOneWayEvents one-way (MaxOneWayLen): only a longer queue needs
	// its size computed, which is a pass over every entry.
	if len(q.Events) > MaxSafeOneWayEvents && (q.Header.Flags == OneWaySealed || len(q.Events) > MaxSafeEvents) {
		if n := q.SealedLen(); n > MaxPacketSize {
			return fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
		}
	}
	return nil
}

// checkAbridged checks what only an abridged packet must be (PROTOCOL.md
// §4 rule 8): handshaken, fewer entries than N, every one real and newer
// than the base.
func (q *Queue) checkAbridged() error {
	c := len(q.Events)
	switch {
	case !Handshaken(q.Header.Flags):
		return fmt.Errorf("%w: an abridged queue in a packet that is not handshaken (flags %#02x)", ErrQueue, q.Header.Flags)
	case q.N < 1 || q.N > MaxEvents:
		return fmt.Errorf("%w: abridged queue of %d entries, want 1..%d", ErrQueue, q.N, MaxEvents)
	case c >= q.N:
		return fmt.Errorf("%w: abridged queue carrying %d of its %d entries (a whole queue is not abridged)", ErrQueue, c, q.N)
	}
	for i, e := range q.Events {
		if e.Kind == eventqueue.None {
			return fmt.Errorf("%w: entry %d: none entry in an abridged queue", ErrQueue, i)
		}
	}
	if c > 0 && q.Events[c-1].Stamp <= q.Base {
		return fmt.Errorf("%w: entry %d: stamp %d not newer than the base %d", ErrQueue, c-1, q.Events[c-1].Stamp, q.Base)
	}
	return nil
}

// entryLen is the encoded length of an entry for k, before its back.
func entryLen(k keys.Key) int {
	if k < 1<<16 { // a physical key (or none): the common case, one test
		return keyEntryLen
	}
	r, _ := k.Char()
	return 1 + uvarintLen(uint64(r))
}

// checkChar checks that a non-physical entry is a valid character; the
// decoder checks it where it decodes a character (parseEntry), so its
// common path, keys, pays nothing for characters.
func checkChar(i int, e eventqueue.Event) error {
	r, ok := e.Key.Char()
	if !ok {
		return fmt.Errorf("%w: entry %d: %v of key %#x", ErrQueue, i, e.Kind, uint32(e.Key))
	}
	if !keys.ValidChar(r) {
		return fmt.Errorf("%w: entry %d: %v of character %U, not a typable Unicode character", ErrQueue, i, e.Kind, r)
	}
	return nil
}

// checkEntry checks entry i given the entries before it (checkChar checks
// a character's code).
func checkEntry(events []eventqueue.Event, i int, e eventqueue.Event) error {
	switch e.Kind {
	case eventqueue.None:
		if e.Key != 0 {
			return fmt.Errorf("%w: entry %d: none entry with key %v", ErrQueue, i, e.Key)
		}
	case eventqueue.Down, eventqueue.Up:
		if e.Key == 0 {
			return fmt.Errorf("%w: entry %d: %v of key 0", ErrQueue, i, e.Kind)
		}
		if i > 0 && events[i-1].Kind == eventqueue.None {
			return fmt.Errorf("%w: entry %d: %v after a none entry", ErrQueue, i, e.Kind)
		}
	default:
		return fmt.Errorf("%w: entry %d: kind %d", ErrQueue, i, uint8(e.Kind))
	}
	if i > 0 {
		prev := events[i-1].Stamp
		if e.Stamp > prev {
			return fmt.Errorf("%w: entry %d: stamp %d newer than the entry before it (%d)", ErrQueue, i, e.Stamp, prev)
		}
		if e.Kind != eventqueue.None && e.Stamp == prev {
			return fmt.Errorf("%w: entry %d: stamp %d not older than the entry before it", ErrQueue, i, e.Stamp)
		}
	}
	return nil
}

// Append appends the encoded plaintext packet (--insecure: flags ONEWAY)
// to b, or returns an error, and b unchanged, if q is not a valid packet.
func (q *Queue) Append(b []byte) ([]byte, error) {
	if err := q.validate(); err != nil {
		return b, err
	}
	if q.Header.Flags != FlagOneWay {
		return b, fmt.Errorf("%w: %#02x on a plaintext queue packet (want ONEWAY)", ErrFlags, q.Header.Flags)
	}
	b = q.Header.Append(b)
	return q.appendBody(b), nil
}

// AppendBody appends only the plaintext body of q (PROTOCOL.md §3), for a
// handshaken link's keypair to seal: q.Header says its kind (flags SEALED:
// field 2 is Since).
func (q *Queue) AppendBody(b []byte) ([]byte, error) {
	if err := q.validate(); err != nil {
		return b, err
	}
	return q.appendBody(b), nil
}

// second is the body's second field: Since in a handshaken session's
// packet, Wall in a one-way packet (PROTOCOL.md §3).
func (q *Queue) second() uint64 {
	if Handshaken(q.Header.Flags) {
		return q.Since
	}
	return q.Wall
}

// appendBody appends the body of PROTOCOL.md §3 (§3.3: a handshaken
// packet's count of entries carried, and an abridged packet's base).
func (q *Queue) appendBody(b []byte) []byte {
	b = binary.AppendUvarint(b, q.Clock)
	b = binary.AppendUvarint(b, q.second())
	b = append(b, byte(q.Locks))
	c := len(q.Events)
	switch {
	case q.Abridged:
		b = append(b, byte(q.N), byte(c))
		if c == 0 {
			// An idle packet: the base in top's place.
			return binary.AppendUvarint(b, q.Base)
		}
	case Handshaken(q.Header.Flags):
		b = append(b, byte(c), byte(c))
	default:
		b = append(b, byte(c))
	}
	for i, e := range q.Events {
		if i == 0 {
			b = binary.AppendUvarint(b, e.Stamp)
		}
		if e.Key < 1<<16 { // a key or none, inline: the common case
			b = append(b, byte(e.Kind), byte(e.Key>>8), byte(e.Key))
		} else {
			b = appendChar(b, e)
		}
		if i > 0 {
			b = binary.AppendUvarint(b, q.Events[i-1].Stamp-e.Stamp)
		}
	}
	if q.Abridged {
		// The base as one more back, from the oldest entry carried.
		b = binary.AppendUvarint(b, q.Events[c-1].Stamp-q.Base)
	}
	return b
}

// appendChar appends a character entry's kind and code (PROTOCOL.md §3);
// appendBody appends key entries itself.
func appendChar(b []byte, e eventqueue.Event) []byte {
	r, _ := e.Key.Char()
	kind := byte(kindCharDown)
	if e.Kind == eventqueue.Up {
		kind = kindCharUp
	}
	return binary.AppendUvarint(append(b, kind), uint64(r))
}

// parseEntry decodes an entry's kind and code (PROTOCOL.md §3) and returns
// the bytes it used; the caller checks the event (checkEntry).
func parseEntry(p []byte) (eventqueue.Event, int, error) {
	if len(p) < 1 {
		return eventqueue.Event{}, 0, ErrTruncated
	}
	switch kind := p[0]; kind {
	case kindCharDown, kindCharUp:
		r, n, err := uvarint(p[1:])
		if err != nil {
			return eventqueue.Event{}, 0, err
		}
		if r > utf8.MaxRune {
			return eventqueue.Event{}, 0, fmt.Errorf("%w: character %#x beyond U+10FFFF", ErrQueue, r)
		}
		if !keys.ValidChar(rune(r)) {
			return eventqueue.Event{}, 0, fmt.Errorf("%w: character %U, not a typable Unicode character", ErrQueue, r)
		}
		k := eventqueue.Down
		if kind == kindCharUp {
			k = eventqueue.Up
		}
		return eventqueue.Event{Kind: k, Key: keys.Char(rune(r))}, 1 + n, nil
	case kindNone, kindKeyDown, kindKeyUp:
		if len(p) < keyEntryLen {
			return eventqueue.Event{}, 0, ErrTruncated
		}
		return eventqueue.Event{Kind: eventqueue.Kind(kind), Key: keys.Key(binary.BigEndian.Uint16(p[1:3]))}, keyEntryLen, nil
	default:
		return eventqueue.Event{}, 0, fmt.Errorf("%w: kind %d", ErrQueue, kind)
	}
}

// ParseQueue decodes a plaintext queue packet (flags ONEWAY) into dst,
// reusing dst.Events' storage (no allocation once it is large enough). On
// error dst is left in an unspecified state and must not be used.
func ParseQueue(b []byte, dst *Queue) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Type != TypeQueue {
		return fmt.Errorf("%w: %d where a queue packet was expected", ErrType, h.Type)
	}
	if h.Flags&FlagSealed != 0 {
		return ErrSealed
	}
	return ParseQueueBody(h, b[HeaderLen:], dst)
}

// ParseQueueBody decodes the plaintext body of PROTOCOL.md §3 into dst,
// under header h, already parsed (once, by whoever dispatched the
// datagram) and, for a sealed packet, opened: h's flags say what field 2
// is.
func ParseQueueBody(h Header, p []byte, dst *Queue) error {
	dst.Header = h
	var n int
	var err error
	if dst.Clock, n, err = uvarint(p); err != nil {
		return fmt.Errorf("clock: %w", err)
	}
	p = p[n:]
	second, n, err := uvarint(p)
	if err != nil {
		return fmt.Errorf("wall clock or since: %w", err)
	}
	dst.Wall, dst.Since = second, 0
	if Handshaken(h.Flags) {
		dst.Wall, dst.Since = 0, second
	}
	p = p[n:]
	if len(p) < 1 {
		return fmt.Errorf("locks: %w", ErrTruncated)
	}
	if dst.Locks = keys.Locks(p[0]); !dst.Locks.Valid() {
		return fmt.Errorf("%w: locks %#02x", ErrQueue, p[0])
	}
	p = p[1:]
	if len(p) < 1 {
		return fmt.Errorf("queue length: %w", ErrTruncated)
	}
	count := int(p[0])
	p = p[1:]
	if count == 0 {
		return fmt.Errorf("%w: zero entries", ErrQueue)
	}
	dst.Abridged, dst.N, dst.Base = false, 0, 0
	dst.Events = dst.Events[:0]
	carried := count
	if Handshaken(h.Flags) {
		// The count of entries carried (PROTOCOL.md §3.3): all of them,
		// or fewer, in an abridged packet.
		if len(p) < 1 {
			return fmt.Errorf("entries carried: %w", ErrTruncated)
		}
		carried = int(p[0])
		p = p[1:]
		if carried > count {
			return fmt.Errorf("%w: %d entries carried of a queue of %d", ErrQueue, carried, count)
		}
		dst.Abridged = carried < count
		if dst.Abridged {
			dst.N = count
		}
		if carried == 0 {
			if dst.Base, n, err = uvarint(p); err != nil {
				return fmt.Errorf("base stamp: %w", err)
			}
			if len(p) > n {
				return fmt.Errorf("%w: %d bytes", ErrTrailing, len(p)-n)
			}
			return nil
		}
	}
	top, n, err := uvarint(p)
	if err != nil {
		return fmt.Errorf("top stamp: %w", err)
	}
	p = p[n:]
	stamp := top
	for i := range carried {
		var e eventqueue.Event
		if len(p) >= keyEntryLen && p[0] <= kindKeyUp {
			// A key or none entry, the common case, decoded inline.
			e = eventqueue.Event{Kind: eventqueue.Kind(p[0]), Key: keys.Key(binary.BigEndian.Uint16(p[1:3]))}
			p = p[keyEntryLen:]
		} else {
			var n int
			if e, n, err = parseEntry(p); err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
			p = p[n:]
		}
		if i > 0 {
			back, n, err := uvarint(p)
			if err != nil {
				return fmt.Errorf("entry %d stamp: %w", i, err)
			}
			p = p[n:]
			if back > stamp {
				return fmt.Errorf("%w: entry %d: stamp goes below zero", ErrQueue, i)
			}
			stamp -= back
		}
		e.Stamp = stamp
		if dst.Abridged && e.Kind == eventqueue.None {
			return fmt.Errorf("%w: entry %d: none entry in an abridged queue", ErrQueue, i)
		}
		if err := checkEntry(dst.Events, i, e); err != nil {
			return err
		}
		dst.Events = append(dst.Events, e)
	}
	if dst.Abridged {
		// The base, as a back from the oldest entry carried: every entry
		// carried is newer than it.
		back, n, err := uvarint(p)
		if err != nil {
			return fmt.Errorf("base stamp: %w", err)
		}
		p = p[n:]
		if back == 0 || back > stamp {
			return fmt.Errorf("%w: base back %d from stamp %d (want 1..%d)", ErrQueue, back, stamp, stamp)
		}
		dst.Base = stamp - back
	}
	if len(p) > 0 {
		return fmt.Errorf("%w: %d bytes", ErrTrailing, len(p))
	}
	return nil
}
