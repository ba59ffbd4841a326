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

// KeyLen is the length of the pre-shared key; TagLen the AEAD overhead.
const (
	KeyLen = 32
	TagLen = chacha20poly1305.Overhead
)

// Direction separates the keys of the two directions of a session, so a
// packet sealed one way never opens the other way.
type Direction string

const (
	// SenderToReceiver seals queue packets.
	SenderToReceiver Direction = "keyrelay v2 sender-to-receiver"
	// ReceiverToSender seals feedback (acks).
	ReceiverToSender Direction = "keyrelay v2 receiver-to-sender"
)

// SessionAEAD derives the AEAD of one session and direction from the
// pre-shared key: HKDF-SHA256 with the session id as salt and the direction
// as info (PROTOCOL.md §8). Each session thus has its own key, and within it
// the packet counter is a nonce that is never reused.
func SessionAEAD(psk []byte, session uint64, dir Direction) (cipher.AEAD, error) {
	if len(psk) != KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(psk), KeyLen)
	}
	salt := binary.BigEndian.AppendUint64(nil, session)
	key, err := hkdf.Key(sha256.New, psk, salt, string(dir), chacha20poly1305.KeySize)
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

// AppendSealed appends q sealed with aead: the header (with FlagSealed) in
// clear as associated data, then the encrypted body and its tag.
func (q *Queue) AppendSealed(b []byte, aead cipher.AEAD) ([]byte, error) {
	if err := q.validate(); err != nil {
		return b, err
	}
	n := nonce(q.Header.Counter)
	return seal(b, q.Header, aead, n[:], q.appendBody), nil
}

// Sealer seals the packets of one session and direction with no
// allocation. It owns the nonce buffer: a nonce handed to the AEAD (an
// interface, so the compiler cannot see it stay local) escapes to the heap
// when it lives on the stack, one allocation per packet. The sender's send
// path makes none (issue 14).
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

// seal appends the header h with FlagSealed, then the body appendBody
// writes, encrypted in place with aead (nonce n, from the counter;
// associated data: the header), then the tag.
func seal(b []byte, h Header, aead cipher.AEAD, n []byte, appendBody func([]byte) []byte) []byte {
	h.Flags |= FlagSealed
	start := len(b)
	b = h.Append(b)
	bodyStart := len(b)
	b = appendBody(b)
	// Room for the tag, so Seal need not reallocate.
	b = slices.Grow(b, TagLen)
	sealed := aead.Seal(b[bodyStart:bodyStart], n, b[bodyStart:], b[start:bodyStart])
	return b[:bodyStart+len(sealed)]
}

// open checks the header of a sealed packet of type want, then opens its
// body with the AEAD aeadFor returns; the plaintext goes into scratch.
func open(b []byte, want Type, aeadFor func(session uint64) (cipher.AEAD, error), scratch []byte) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, scratch, err
	}
	if h.Type != want {
		return h, scratch, fmt.Errorf("%w: %d where %d was expected", ErrType, h.Type, want)
	}
	if h.Flags&FlagSealed == 0 {
		return h, scratch, ErrNotSealed
	}
	aead, err := aeadFor(h.Session)
	if err != nil {
		return h, scratch, err
	}
	n := nonce(h.Counter)
	hl := h.Len()
	body, err := aead.Open(scratch[:0], n[:], b[hl:], b[:hl])
	if err != nil {
		return h, scratch, ErrAuth
	}
	return h, body, nil
}

// OpenQueue checks, authenticates and decodes a sealed queue packet: the
// cheap header checks first, then the AEAD, then the body. aeadFor returns
// the AEAD of a session (SessionAEAD, or one cached). scratch is reused for
// the plaintext and returned. On error dst must not be used.
func OpenQueue(b []byte, aeadFor func(session uint64) (cipher.AEAD, error), scratch []byte, dst *Queue) ([]byte, error) {
	h, body, err := open(b, TypeQueue, aeadFor, scratch)
	if err != nil {
		return body, err
	}
	return body, parseBody(h, body, dst)
}
