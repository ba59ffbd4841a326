// Package wire encodes and decodes keyrelay packets (PROTOCOL.md). Decoding
// is strict and total: every malformed input is an error wrapping one of the
// sentinel errors below, never a panic, and anything that decodes re-encodes
// to the same bytes.
//
// Every packet starts with the same 22-byte header, big-endian:
//
//	 0      2     3     4     5      6                14                22
//	+------+-----+-----+-----+------+-----------------+-----------------+------
//	|magic |ver  |type |flags|rsvd  | session id      | packet counter  | body
//	|"KR"  | 4   |     |     | 0    | u64, non-zero   | u64, non-zero   |
//	+------+-----+-----+-----+------+-----------------+-----------------+------
//
// A queue packet or ack of a handshaken session (flag TICKET) carries the
// receiver's 12-byte ticket right after, in clear: part of the header.
//
// Magic and version come first so that anything else is rejected cheaply.
// A sealed packet (flag SEALED) carries its body encrypted with
// ChaCha20-Poly1305 under a per-session key, with the header as associated
// data and the counter as nonce (seal.go).
//
// The body of a queue packet (type 1), before sealing:
//
//	clock  uvarint   sender's session clock, ms since the session started
//	wall   uvarint   one-way (no ticket): sender's wall clock, Unix ms
//	 or since        handshaken (ticket): the stamp a joining receiver types after
//	locks  u8        Caps/Num Lock the receiver should have: bit 7 known, bit 0 caps, bit 1 num
//	n      u8        queue length N, 1..255
//	top    uvarint   stamp of entry 0 (the newest)
//	N entries, newest first:
//	  kind u8        0 none, 1 key-down, 2 key-up, 3 char-down, 4 char-up
//	  code u16       kinds 0-2: USB HID usage (keyboard page); 0 for none
//	    or uvarint   kinds 3-4: a Unicode scalar value, not a control character
//	  back uvarint   entries 1..N-1 only: stamp[i] = stamp[i-1] - back
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header layout (PROTOCOL.md §2).
const (
	offMagic    = 0
	offVersion  = 2
	offType     = 3
	offFlags    = 4
	offReserved = 5
	offSession  = 6
	offCounter  = 14
	HeaderLen   = 22
)

const (
	Magic0  = 'K'
	Magic1  = 'R'
	Version = 4
	// MaxPacketSize is the largest datagram keyrelay sends or accepts: it
	// stays below the IPv6 minimum MTU, so packets are never fragmented.
	MaxPacketSize = 1200
	// MaxEvents is the largest queue a packet carries (one-byte N).
	MaxEvents = 255
)

// Type is the packet type.
type Type uint8

const (
	// TypeQueue carries the sender's queue (sender to receiver).
	TypeQueue Type = 1
	// TypeAck is reserved for acknowledgements (receiver to sender).
	TypeAck Type = 2
	// TypeHello asks a receiver for a ticket (sender to receiver, §8.3).
	TypeHello Type = 3
	// TypeTicket carries a receiver's ticket (receiver to sender, §8.3).
	TypeTicket Type = 4
)

// Flag bits.
const (
	// FlagSealed marks a body sealed with the session's AEAD.
	FlagSealed uint8 = 1 << 0
	// FlagTicket marks a queue packet or ack of a handshaken session: the
	// receiver's ticket follows the 22 bytes, in clear, as part of the
	// header (PROTOCOL.md §2, §8.3).
	FlagTicket uint8 = 1 << 1
	knownFlags       = FlagSealed | FlagTicket
)

// TicketLen is the length of a receiver's ticket (PROTOCOL.md §8.3).
const TicketLen = 12

// Ticket is what a receiver hands a sender's session in the handshake:
// when it was issued and a MAC under the receiver instance's own secret
// (ticket.go). The keys of a handshaken session are derived from it.
type Ticket [TicketLen]byte

// Sentinel errors; every decoding error wraps exactly one of them.
var (
	ErrTooLarge  = errors.New("packet larger than 1200 bytes")
	ErrTruncated = errors.New("packet truncated")
	ErrMagic     = errors.New("not a keyrelay packet (bad magic)")
	ErrVersion   = errors.New("unsupported protocol version")
	ErrType      = errors.New("unknown packet type")
	ErrFlags     = errors.New("unknown flags or non-zero reserved byte")
	ErrSealed    = errors.New("packet is sealed (encrypted) and no key is configured")
	ErrNotSealed = errors.New("packet is not sealed (plaintext) but a key is configured")
	ErrAuth      = errors.New("packet does not authenticate (wrong key, or tampered)")
	ErrHeader    = errors.New("zero session id or packet counter")
	ErrVarint    = errors.New("malformed varint")
	ErrQueue     = errors.New("malformed queue")
	ErrTrailing  = errors.New("trailing bytes after the packet")
)

// Header is the fixed part of every packet.
type Header struct {
	Type    Type
	Flags   uint8
	Session uint64
	Counter uint64
	// Ticket follows the fixed header when Flags has FlagTicket.
	Ticket Ticket
}

// Len is the encoded length of the header: HeaderLen, and the ticket if
// it has one.
func (h Header) Len() int {
	if h.Flags&FlagTicket != 0 {
		return HeaderLen + TicketLen
	}
	return HeaderLen
}

// Append appends the encoded header to b.
func (h Header) Append(b []byte) []byte {
	b = append(b, Magic0, Magic1, Version, byte(h.Type), h.Flags, 0)
	b = binary.BigEndian.AppendUint64(b, h.Session)
	b = binary.BigEndian.AppendUint64(b, h.Counter)
	if h.Flags&FlagTicket != 0 {
		b = append(b, h.Ticket[:]...)
	}
	return b
}

// check reports why a header is not valid to send or accept.
func (h Header) check() error {
	if h.Type < TypeQueue || h.Type > TypeTicket {
		return fmt.Errorf("%w: %d", ErrType, h.Type)
	}
	if h.Flags&^knownFlags != 0 {
		return fmt.Errorf("%w: %#02x", ErrFlags, h.Flags)
	}
	if h.Flags&FlagTicket != 0 && h.Type != TypeQueue && h.Type != TypeAck {
		return fmt.Errorf("%w: ticket flag on a packet of type %d", ErrFlags, h.Type)
	}
	if h.Session == 0 || h.Counter == 0 {
		return ErrHeader
	}
	return nil
}

// ParseHeader decodes and checks the header of b: only the cheap checks
// (size, magic, version, type, flags, ids), nothing of the body.
func ParseHeader(b []byte) (Header, error) {
	if len(b) > MaxPacketSize {
		return Header{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(b))
	}
	if len(b) >= offVersion && (b[offMagic] != Magic0 || b[offMagic+1] != Magic1) {
		return Header{}, ErrMagic
	}
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrTruncated, len(b), HeaderLen)
	}
	if b[offVersion] != Version {
		return Header{}, fmt.Errorf("%w: %d (this keyrelay speaks %d; update both ends to the same release)", ErrVersion, b[offVersion], Version)
	}
	if b[offReserved] != 0 {
		return Header{}, fmt.Errorf("%w: reserved byte %#02x", ErrFlags, b[offReserved])
	}
	h := Header{
		Type:    Type(b[offType]),
		Flags:   b[offFlags],
		Session: binary.BigEndian.Uint64(b[offSession:]),
		Counter: binary.BigEndian.Uint64(b[offCounter:]),
	}
	if err := h.check(); err != nil {
		return h, err
	}
	if h.Flags&FlagTicket != 0 {
		if len(b) < HeaderLen+TicketLen {
			return h, fmt.Errorf("%w: %d bytes, header with ticket needs %d", ErrTruncated, len(b), HeaderLen+TicketLen)
		}
		copy(h.Ticket[:], b[HeaderLen:])
	}
	return h, nil
}

// uvarint decodes a canonical uvarint from b: the shortest encoding, at most
// 10 bytes, no overflow. It returns the value and the bytes used.
func uvarint(b []byte) (uint64, int, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, 0, ErrTruncated
	case n < 0:
		return 0, 0, fmt.Errorf("%w: overflow", ErrVarint)
	case n > 1 && b[n-1] == 0:
		// A final zero byte adds nothing: an overlong encoding, which would
		// let two byte strings mean the same packet.
		return 0, 0, fmt.Errorf("%w: overlong encoding", ErrVarint)
	}
	return v, n, nil
}

// uvarintLen is the encoded length of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
