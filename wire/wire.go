// Package wire encodes and decodes keyrelay packets (PROTOCOL.md). Decoding
// is strict and total: every malformed input is an error wrapping one of the
// sentinel errors below, never a panic, and anything that decodes re-encodes
// to the same bytes.
//
// Every packet starts with the same six bytes, then, on all but a
// handshaken link's transport packets, the 22-byte header's session id and
// packet counter, big-endian:
//
//	 0      2     3     4     5      6                14                22
//	+------+-----+-----+-----+------+-----------------+-----------------+------
//	|magic |ver  |type |flags|rsvd  | session id      | packet counter  | body
//	|"KR"  | 5   |     |     | 0    | u64, non-zero   | u64, non-zero   |
//	+------+-----+-----+-----+------+-----------------+-----------------+------
//
// A handshaken link's queue packets and acks (flags SEALED alone) have the
// compact header instead (PROTOCOL.md §2): the recipient's keypair index,
// which stands for the session id (each keypair belongs to one session at
// both ends), and the counter as a uvarint, 11 bytes up to counter 127:
//
//	 0      2     3     4     5      6        10
//	+------+-----+-----+-----+------+--------+-----------------+-----------
//	|magic |ver  |type |flags|rsvd  | index  | packet counter  | ciphertext
//	|"KR"  | 5   | 1,2 | 1   | 0    | u32    | uvarint, not 0  | and tag
//	+------+-----+-----+-----+------+--------+-----------------+-----------
//
// Magic and version come first so that anything else is rejected cheaply.
// The flags say which of three kinds a queue packet is:
//
//	SEALED         handshaken: the compact header, then the body sealed
//	               by the link's keypair (package handshake seals and
//	               opens it; Queue.AppendBody, ParseQueueBody make and
//	               read the plaintext body)
//	SEALED|ONEWAY|SIGNED
//	               one-way (send and recv --one-way): the body, then the
//	               sending machine's public key and its XEdDSA signature of
//	               the header and body, sealed with ChaCha20-Poly1305 under
//	               a key derived from the key file and the session id, the
//	               header as associated data and the counter as nonce
//	               (seal.go); never acked
//	ONEWAY         plaintext (--insecure): the body in clear; acked in
//	               plaintext (flags ONEWAY)
//
// The body of a queue packet (type 1), before sealing:
//
//	clock  uvarint   sender's session clock, ms since the session started
//	wall   uvarint   one-way and plaintext: sender's wall clock, Unix ms
//	 or since        handshaken (SEALED alone): the stamp a joining receiver types after
//	locks  u8        Caps/Num Lock the receiver should have: bit 7 known, bit 0 caps, bit 1 num
//	n      u8        queue length N, 1..255
//	c      u8        handshaken only: entries carried, C, 0..N; C < N: abridged
//	top    uvarint   stamp of entry 0 (the newest); abridged with C = 0: the base
//	N (or C) entries, newest first:
//	  kind u8        0 none, 1 key-down, 2 key-up, 3 char-down, 4 char-up
//	  code u16       kinds 0-2: USB HID usage (keyboard page); 0 for none
//	    or uvarint   kinds 3-4: a Unicode scalar value, not a control character
//	  back uvarint   entries 1..N-1 only: stamp[i] = stamp[i-1] - back
//	base   uvarint   abridged with C >= 1 only: base = stamp[C-1] - back, back >= 1
//
// An abridged packet (PROTOCOL.md §3.3) carries only the entries newer than
// the base, which its receiver acknowledged; the receiver takes the others
// from the queue it applied last (eventqueue.Rebuilder).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header layout (PROTOCOL.md §2). PrefixLen is the six bytes every packet
// starts with; HeaderLen the header of every packet but a handshaken
// link's transport packets, whose compact header (Header.Compact) has the
// index at offIndex and the counter as a uvarint after it: CompactMinLen
// to CompactMaxLen bytes.
const (
	offMagic      = 0
	offVersion    = 2
	offType       = 3
	offFlags      = 4
	offReserved   = 5
	offSession    = 6
	offCounter    = 14
	offIndex      = 6
	PrefixLen     = 6
	HeaderLen     = 22
	CompactMinLen = PrefixLen + IndexLen + 1
	CompactMaxLen = PrefixLen + IndexLen + 10
)

const (
	Magic0  = 'K'
	Magic1  = 'R'
	Version = 5
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
	// TypeAck acknowledges queue packets (receiver to sender, §9).
	TypeAck Type = 2
	// Types 3 (initiation), 4 (response) and 6 (cookie reply) are the
	// handshake's, package handshake's to make and read; 5 is the version
	// notice (notice.go).
)

// Flag bits (PROTOCOL.md §2).
const (
	// FlagSealed marks a body sealed: by a handshaken link's keypair, or,
	// with FlagOneWay, by the one-way key.
	FlagSealed uint8 = 1 << 0
	// FlagOneWay marks a packet of no handshake: one-way sealed (with
	// FlagSealed and FlagSigned) or plaintext (alone).
	FlagOneWay uint8 = 1 << 1
	// FlagSigned marks a one-way packet signed by its sending machine's
	// identity (PROTOCOL.md §8.6): with FlagSealed and FlagOneWay, the
	// only one-way sealed packet there is.
	FlagSigned uint8 = 1 << 2
	// OneWaySealed are the flags of a one-way sealed packet.
	OneWaySealed = FlagSealed | FlagOneWay | FlagSigned
)

// Handshaken reports whether flags are those of a handshaken link's
// transport packet (an index follows the header; field 2 is since).
func Handshaken(flags uint8) bool { return flags == FlagSealed }

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
	// ErrUnsigned is a one-way packet of the layout before one-way packets
	// were signed (flags SEALED|ONEWAY without SIGNED, PROTOCOL.md §8.6):
	// its sender runs an older keyrelay build.
	ErrUnsigned = errors.New("one-way packet not signed by its sending machine: the sender runs a keyrelay build from before one-way packets were signed (PROTOCOL.md §8.6); install the same release on both machines")
)

// Header is the fixed part of every packet.
type Header struct {
	Type  Type
	Flags uint8
	// Index is the recipient's keypair index, carried by a compact header
	// only (a handshaken link's queue packet or ack). It shares Type's
	// word: a Header stays 24 bytes.
	Index uint32
	// Session is the sender's session id. A compact header does not carry
	// it: its parser leaves it 0, and whoever opens the packet takes it
	// from the keypair Index names; its encoder ignores it.
	Session uint64
	Counter uint64
}

// Compact reports whether h is a handshaken link's queue packet or ack
// (flags SEALED alone), whose header is the compact one: the index in the
// session id's place, the counter a uvarint (PROTOCOL.md §2).
func (h Header) Compact() bool { return compact(h.Type, h.Flags) }

func compact(t Type, flags uint8) bool {
	return flags == FlagSealed && (t == TypeQueue || t == TypeAck)
}

// Len is the encoded length of h: HeaderLen, or a compact header's
// CompactMinLen to CompactMaxLen by its counter.
func (h Header) Len() int {
	if h.Compact() {
		return PrefixLen + IndexLen + uvarintLen(h.Counter)
	}
	return HeaderLen
}

// Append appends the encoded header to b.
func (h Header) Append(b []byte) []byte {
	b = append(b, Magic0, Magic1, Version, byte(h.Type), h.Flags, 0)
	if h.Compact() {
		b = binary.BigEndian.AppendUint32(b, h.Index)
		return binary.AppendUvarint(b, h.Counter)
	}
	b = binary.BigEndian.AppendUint64(b, h.Session)
	return binary.BigEndian.AppendUint64(b, h.Counter)
}

// check reports why a header is not valid to send or accept.
func (h Header) check() error {
	if err := h.checkKind(); err != nil {
		return err
	}
	return h.checkIDs()
}

func (h Header) checkKind() error { return CheckKind(h.Type, h.Flags) }

// CheckKind checks the type and flags of a queue packet or ack
// (PROTOCOL.md §2, §4 rules 4 and 5): package handshake's parser asks it
// too, so one rule holds for every reader.
func CheckKind(t Type, flags uint8) error {
	if t != TypeQueue && t != TypeAck {
		return fmt.Errorf("%w: %d", ErrType, t)
	}
	// Three kinds of queue packet, two of ack: an ack is never one-way
	// sealed (one-way sessions are never acked, PROTOCOL.md §9).
	switch {
	case flags == FlagSealed, flags == FlagOneWay, t == TypeQueue && flags == OneWaySealed:
		return nil
	case t == TypeQueue && flags == FlagSealed|FlagOneWay:
		return ErrUnsigned
	}
	return fmt.Errorf("%w: %#02x", ErrFlags, flags)
}

// checkIDs is PROTOCOL.md §4 rule 6: no zero counter, and no zero
// session id where the header carries one (a compact header's session is
// its keypair's, non-zero by construction).
func (h Header) checkIDs() error {
	if h.Counter == 0 || h.Session == 0 && !h.Compact() {
		return ErrHeader
	}
	return nil
}

// ParseHeader decodes and checks the header of b: only the cheap checks
// (size, magic, version, type, flags, ids), nothing of the body; the body
// starts at h.Len().
func ParseHeader(b []byte) (Header, error) {
	t, flags, err := ParsePrefix(b)
	if err != nil {
		return Header{}, err
	}
	if err := CheckKind(t, flags); err != nil {
		return Header{Type: t, Flags: flags}, err
	}
	return ReadIDs(b, t, flags)
}

// ParsePrefix checks the six bytes every packet starts with (PROTOCOL.md
// §4 rules 1–3 and the reserved byte), cheapest first, and returns the
// type and flags they hold, for the caller to check against what it reads
// (rules 4 and 5) before ReadIDs. They are two scalars, not a Header: a
// Header written a field at a time and then copied whole stalls the copy
// (store forwarding), which would make the receive path's header parse
// (handshake.Parse) markedly slower (BENCHMARKS.md, Header prefix).
func ParsePrefix(b []byte) (Type, uint8, error) {
	if len(b) > MaxPacketSize {
		return 0, 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(b))
	}
	if len(b) >= offVersion && (b[offMagic] != Magic0 || b[offMagic+1] != Magic1) {
		return 0, 0, ErrMagic
	}
	if len(b) < PrefixLen {
		return 0, 0, fmt.Errorf("%w: %d bytes, header needs at least %d", ErrTruncated, len(b), PrefixLen)
	}
	if b[offVersion] != Version {
		return 0, 0, fmt.Errorf("%w: %d (this keyrelay speaks %d; update both ends to the same release)", ErrVersion, b[offVersion], Version)
	}
	if b[offReserved] != 0 {
		return 0, 0, fmt.Errorf("%w: reserved byte %#02x", ErrFlags, b[offReserved])
	}
	return Type(b[offType]), b[offFlags], nil
}

// ReadIDs reads the rest of b's header, whose type t and flags ParsePrefix
// read and the caller checked: the session id and counter of a 22-byte
// header, or a compact header's index and uvarint counter (shortest form,
// PROTOCOL.md §4 rule 7); and checks rule 6.
func ReadIDs(b []byte, t Type, flags uint8) (Header, error) {
	if !compact(t, flags) {
		if len(b) < HeaderLen {
			return Header{Type: t, Flags: flags}, fmt.Errorf("%w: %d bytes, header needs %d", ErrTruncated, len(b), HeaderLen)
		}
		h := Header{Type: t, Flags: flags, Session: binary.BigEndian.Uint64(b[offSession:]), Counter: binary.BigEndian.Uint64(b[offCounter:])}
		if h.Session == 0 || h.Counter == 0 {
			return h, ErrHeader
		}
		return h, nil
	}
	if len(b) < CompactMinLen {
		return Header{Type: t, Flags: flags}, fmt.Errorf("%w: %d bytes, a handshaken packet's header needs at least %d", ErrTruncated, len(b), CompactMinLen)
	}
	index := binary.BigEndian.Uint32(b[offIndex:])
	c, _, err := uvarint(b[offIndex+IndexLen:])
	h := Header{Type: t, Flags: flags, Index: index, Counter: c}
	switch {
	case err != nil:
		return h, fmt.Errorf("packet counter: %w", err)
	case c == 0:
		return h, ErrHeader
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
