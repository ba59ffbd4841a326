package wire

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeyLen is the length of the pre-shared key; TagLen the AEAD overhead;
// IndexLen the recipient's index a handshaken link's packets carry after
// the header.
const (
	KeyLen   = 32
	TagLen   = chacha20poly1305.Overhead
	IndexLen = 4
)

// oneWayInfo labels the one-way key: only sender-to-receiver exists, as
// one-way sessions are never acked (PROTOCOL.md §8.4, §9).
const oneWayInfo = "keyrelay v5 one-way sender-to-receiver"

// OneWayAEAD derives the AEAD that seals one one-way session's packets
// from the pre-shared key file: HKDF-SHA256 with the session id as salt
// (PROTOCOL.md §8.4). Within the session the packet counter is the nonce,
// never reused. Nothing seals the other way under it: an ack keyed only by
// the key file and the session id would repeat nonces across receivers.
func OneWayAEAD(psk []byte, session uint64) (cipher.AEAD, error) {
	if len(psk) != KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(psk), KeyLen)
	}
	salt := binary.BigEndian.AppendUint64(nil, session)
	key, err := hkdf.Key(sha256.New, psk, salt, oneWayInfo, chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	return chacha20poly1305.New(key)
}

// nonce is the 96-bit nonce of a packet: four zero bytes, then the counter.
func nonce(counter uint64) [chacha20poly1305.NonceSize]byte {
	var n [chacha20poly1305.NonceSize]byte
	binary.BigEndian.PutUint64(n[4:], counter)
	return n
}

// AppendSealed appends q one-way sealed with aead (flags SEALED|ONEWAY):
// the header in clear as associated data, then the encrypted body and its
// tag.
func (q *Queue) AppendSealed(b []byte, aead cipher.AEAD) ([]byte, error) {
	if err := q.validate(); err != nil {
		return b, err
	}
	n := nonce(q.Header.Counter)
	return seal(b, q.Header, aead, n[:], q.appendBody), nil
}

// Sealer seals the packets of one one-way session with no allocation. It
// owns the nonce buffer: a nonce handed to the AEAD (an interface, so the
// compiler cannot see it stay local) escapes to the heap when it lives on
// the stack, one allocation per packet.
type Sealer struct {
	AEAD  cipher.AEAD
	nonce [chacha20poly1305.NonceSize]byte
}

// AppendSealedBy is AppendSealed with s's AEAD, allocating nothing once b
// has room.
func (q *Queue) AppendSealedBy(b []byte, s *Sealer) ([]byte, error) {
	if err := q.validate(); err != nil {
		return b, err
	}
	s.nonce = nonce(q.Header.Counter)
	return seal(b, q.Header, s.AEAD, s.nonce[:], q.appendBody), nil
}

// seal appends the header h with flags SEALED|ONEWAY, then the body
// appendBody writes, encrypted in place with aead (nonce n, from the
// counter; associated data: the header), then the tag.
func seal(b []byte, h Header, aead cipher.AEAD, n []byte, appendBody func([]byte) []byte) []byte {
	h.Flags = FlagSealed | FlagOneWay
	start := len(b)
	b = h.Append(b)
	bodyStart := len(b)
	b = appendBody(b)
	// Room for the tag, so Seal need not reallocate.
	b = slices.Grow(b, TagLen)
	sealed := aead.Seal(b[bodyStart:bodyStart], n, b[bodyStart:], b[start:bodyStart])
	return b[:bodyStart+len(sealed)]
}

// OpenOneWay authenticates and decodes the one-way queue packet b whose
// header h was parsed already (flags SEALED|ONEWAY), with aead
// (OneWayAEAD of its session). scratch is reused for the plaintext and
// returned. On error dst must not be used.
func OpenOneWay(b []byte, h Header, aead cipher.AEAD, scratch []byte, dst *Queue) ([]byte, error) {
	var o Opener
	return o.OpenOneWay(b, h, aead, scratch, dst)
}

// Opener opens one-way packets with no allocation, as Sealer seals them:
// it owns the nonce buffer, which on the stack would escape to the heap
// through the AEAD's interface, one allocation per packet. Not safe for
// concurrent use.
type Opener struct {
	nonce [chacha20poly1305.NonceSize]byte
}

// OpenOneWay is the package's OpenOneWay with o's nonce buffer,
// allocating nothing once scratch has room for the plaintext.
func (o *Opener) OpenOneWay(b []byte, h Header, aead cipher.AEAD, scratch []byte, dst *Queue) ([]byte, error) {
	if h.Type != TypeQueue || h.Flags != FlagSealed|FlagOneWay {
		return scratch, fmt.Errorf("%w: type %d flags %#02x is no one-way queue packet", ErrFlags, h.Type, h.Flags)
	}
	o.nonce = nonce(h.Counter)
	body, err := aead.Open(scratch[:0], o.nonce[:], b[HeaderLen:], b[:HeaderLen])
	if err != nil {
		return scratch, ErrAuth
	}
	return body, ParseQueueBody(h, body, dst)
}

// OpenQueue parses the header of b, then opens it as OpenOneWay does.
func OpenQueue(b []byte, aead cipher.AEAD, scratch []byte, dst *Queue) ([]byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return scratch, err
	}
	if h.Flags&FlagSealed == 0 {
		return scratch, ErrNotSealed
	}
	return OpenOneWay(b, h, aead, scratch, dst)
}
