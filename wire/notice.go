package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// A version notice (PROTOCOL.md §10) answers a packet of another protocol
// version: it says which versions the notifier speaks. Its layout is the
// same in every version, from this one on, so any two releases can tell
// each other which version they speak:
//
//	 0      2     3     4     5      6                14                22     23
//	+------+-----+-----+-----+------+-----------------+-----------------+------+--------
//	|magic |ver  |type |flags|rsvd  | echoed: bytes 6-13 and 14-21 of   |count | count
//	|"KR"  |own  | 5   | 0   | 0    | the packet that caused the notice |1..255| versions
//	+------+-----+-----+-----+------+-----------------+-----------------+------+--------
//
// It is not sealed: the peer may not share our key derivation.

// TypeNotice is a version notice (PROTOCOL.md §10), in any version.
const TypeNotice Type = 5

// ErrNotice: a notice whose list of versions breaks PROTOCOL.md §10.
var ErrNotice = errors.New("malformed version notice")

// Notice is a version notice.
type Notice struct {
	// Version is the notifier's own protocol version: byte 2, as in every
	// packet it sends.
	Version uint8
	// Session and Counter echo bytes 6–13 and 14–21 of the packet that
	// caused the notice (in every version so far its session id and
	// counter), whatever they are, 0 included.
	Session uint64
	Counter uint64
	// Speaks lists every version the notifier speaks, ascending; Version
	// is one of them.
	Speaks []uint8
}

// Len is the encoded length of n.
func (n *Notice) Len() int { return HeaderLen + 1 + len(n.Speaks) }

func (n *Notice) validate() error {
	if len(n.Speaks) == 0 || len(n.Speaks) > 255 {
		return fmt.Errorf("%w: %d versions listed (1..255)", ErrNotice, len(n.Speaks))
	}
	own := false
	for i, v := range n.Speaks {
		if v == 0 || i > 0 && v <= n.Speaks[i-1] {
			return fmt.Errorf("%w: versions %v not ascending from 1", ErrNotice, n.Speaks)
		}
		own = own || v == n.Version
	}
	if !own {
		return fmt.Errorf("%w: version %d is not among those listed, %v", ErrNotice, n.Version, n.Speaks)
	}
	return nil
}

// Append appends the notice to b.
func (n *Notice) Append(b []byte) ([]byte, error) {
	if err := n.validate(); err != nil {
		return b, err
	}
	b = append(b, Magic0, Magic1, n.Version, byte(TypeNotice), 0, 0)
	b = binary.BigEndian.AppendUint64(b, n.Session)
	b = binary.BigEndian.AppendUint64(b, n.Counter)
	b = append(b, byte(len(n.Speaks)))
	return append(b, n.Speaks...), nil
}

// ParseNotice decodes a version notice of any version into dst (its
// Speaks reuses dst's). Like every decoder here it is strict: PROTOCOL.md
// §10 lists what it rejects.
func ParseNotice(b []byte, dst *Notice) error {
	if len(b) > MaxPacketSize {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(b))
	}
	if len(b) >= offVersion && (b[offMagic] != Magic0 || b[offMagic+1] != Magic1) {
		return ErrMagic
	}
	if len(b) < HeaderLen+2 {
		return fmt.Errorf("%w: %d bytes, a version notice needs at least %d", ErrTruncated, len(b), HeaderLen+2)
	}
	if Type(b[offType]) != TypeNotice {
		return fmt.Errorf("%w: %d where a version notice was expected", ErrType, b[offType])
	}
	if b[offFlags] != 0 || b[offReserved] != 0 {
		return fmt.Errorf("%w: flags %#02x, reserved %#02x in a version notice", ErrFlags, b[offFlags], b[offReserved])
	}
	count := int(b[HeaderLen])
	body := b[HeaderLen+1:]
	switch {
	case len(body) < count:
		return fmt.Errorf("versions: %w", ErrTruncated)
	case len(body) > count:
		return fmt.Errorf("%w: %d bytes", ErrTrailing, len(body)-count)
	}
	dst.Version = b[offVersion]
	dst.Session = binary.BigEndian.Uint64(b[offSession:])
	dst.Counter = binary.BigEndian.Uint64(b[offCounter:])
	dst.Speaks = append(dst.Speaks[:0], body...)
	return dst.validate()
}

// IsNotice reports whether b looks like a version notice of any version:
// magic and type 5 (PROTOCOL.md §10), nothing else checked.
func IsNotice(b []byte) bool {
	return len(b) > offType && b[offMagic] == Magic0 && b[offMagic+1] == Magic1 && Type(b[offType]) == TypeNotice
}

// OtherVersion reports the version byte of a keyrelay packet of another
// protocol version than this one: magic "KR", a version byte that is not
// Version, no larger than MaxPacketSize. Whatever else it holds, its
// sender speaks that version (PROTOCOL.md §10).
func OtherVersion(b []byte) (uint8, bool) {
	if len(b) <= offVersion || len(b) > MaxPacketSize || b[offMagic] != Magic0 || b[offMagic+1] != Magic1 || b[offVersion] == Version {
		return 0, false
	}
	return b[offVersion], true
}

// SpokenBy reports the versions the sender of b speaks, when b is a
// packet of another protocol version than this one answering session
// (PROTOCOL.md §10): a version notice that echoes session and does not
// list Version (or it is no mismatch), or any other keyrelay packet of
// another version whose bytes 6–13 are session (where every version so far
// puts the session id): its version byte. ok is false for anything else,
// which a sender ignores.
func SpokenBy(b []byte, session uint64) (speaks []uint8, ok bool) {
	v, other := OtherVersion(b)
	switch {
	case !other || len(b) < HeaderLen || binary.BigEndian.Uint64(b[offSession:]) != session:
		return nil, false
	case !IsNotice(b):
		return []uint8{v}, true
	}
	var n Notice
	if ParseNotice(b, &n) != nil || slices.Contains(n.Speaks, Version) {
		return nil, false
	}
	return n.Speaks, true
}

// AppendNoticeFor appends this keyrelay's version notice answering cause,
// a packet of another version, to b: it echoes cause's bytes 6–21 and
// lists Version. Following PROTOCOL.md §10 it answers nothing larger than
// what caused it (a notice amplifies nothing) and never a notice (two
// notifiers cannot bounce notices between them): ok is false then, and b
// is returned as it was.
func AppendNoticeFor(b, cause []byte) (_ []byte, ok bool) {
	n := Notice{Version: Version, Speaks: []uint8{Version}}
	if len(cause) < n.Len() || IsNotice(cause) {
		return b, false
	}
	n.Session = binary.BigEndian.Uint64(cause[offSession:])
	n.Counter = binary.BigEndian.Uint64(cause[offCounter:])
	out, err := n.Append(b)
	return out, err == nil
}

// DescribeVersions names versions for people: "version 4", "versions 4
// and 5", "versions 4, 5 and 6".
func DescribeVersions(vs []uint8) string {
	switch len(vs) {
	case 0:
		return "no version"
	case 1:
		return fmt.Sprintf("version %d", vs[0])
	}
	s := "versions "
	for i, v := range vs {
		switch {
		case i == len(vs)-1:
			s += " and "
		case i > 0:
			s += ", "
		}
		s += fmt.Sprint(v)
	}
	return s
}
