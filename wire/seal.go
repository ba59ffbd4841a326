package wire

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeyLen is the length of the pre-shared key; TagLen the AEAD overhead;
// IndexLen the recipient's index a handshaken link's packets carry after
// the header. A one-way packet's body is followed, inside the ciphertext,
// by its sending machine's public key (SignerLen) and signature
// (SignatureLen): SignedLen bytes (PROTOCOL.md §8.6).
const (
	KeyLen       = 32
	TagLen       = chacha20poly1305.Overhead
	IndexLen     = 4
	SignerLen    = 32
	SignatureLen = 64
	SignedLen    = SignerLen + SignatureLen
)

// oneWayInfo labels the one-way key: only sender-to-receiver exists, as
// one-way sessions are never acked (PROTOCOL.md §8.6, §9).
const oneWayInfo = "keyrelay v5 one-way sender-to-receiver"

// SignedContext starts what a one-way packet's signature covers
// (SignedMessage): it keeps the signature from standing for anything but
// a one-way packet of protocol 5.
const SignedContext = "keyrelay protocol 5 one-way packet"

// A Signer signs one-way packets: the sending machine's identity
// (identity.Identity).
type Signer interface {
	// Public is the machine's public key: what receivers pair it by.
	Public() [SignerLen]byte
	// Sign is its signature of msg.
	Sign(msg []byte) [SignatureLen]byte
}

// AppendSignedMessage appends to dst what the signature of a one-way
// packet covers: SignedContext, the header as sent (its 22 bytes) and the
// plaintext body.
func AppendSignedMessage(dst, header, body []byte) []byte {
	dst = append(dst, SignedContext...)
	dst = append(dst, header...)
	return append(dst, body...)
}

// OneWayAEAD derives the AEAD that seals one one-way session's packets
// from the pre-shared key file: HKDF-SHA256 with the session id as salt
// (PROTOCOL.md §8.6). Within the session the packet counter is the nonce,
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

// AppendSealed appends q one-way sealed with aead and signed by signer
// (flags SEALED|ONEWAY|SIGNED): the header in clear as associated data,
// then the encrypted body, signer's public key and signature, and the tag.
func (q *Queue) AppendSealed(b []byte, aead cipher.AEAD, signer Signer) ([]byte, error) {
	s := Sealer{AEAD: aead, Signer: signer}
	return q.AppendSealedBy(b, &s)
}

// Sealer seals and signs the packets of one one-way session with no
// allocation once its buffers have grown. It owns the nonce buffer (a
// nonce handed to the AEAD, an interface, escapes to the heap when it
// lives on the stack: one allocation per packet) and the signed message's.
// Not safe for concurrent use.
type Sealer struct {
	AEAD   cipher.AEAD
	Signer Signer
	nonce  [chacha20poly1305.NonceSize]byte
	msg    []byte
}

// AppendSealedBy is AppendSealed with s's AEAD and signer, allocating
// nothing once b has room.
func (q *Queue) AppendSealedBy(b []byte, s *Sealer) ([]byte, error) {
	sq := *q
	sq.Header.Flags = OneWaySealed
	if err := sq.validate(); err != nil {
		return b, err
	}
	if s.Signer == nil {
		return b, errors.New("a one-way packet needs its sending machine's identity to sign it")
	}
	s.nonce = nonce(sq.Header.Counter)
	start := len(b)
	b = sq.Header.Append(b)
	bodyStart := len(b)
	b = sq.appendBody(b)
	s.msg = AppendSignedMessage(s.msg[:0], b[start:bodyStart], b[bodyStart:])
	pub, sig := s.Signer.Public(), s.Signer.Sign(s.msg)
	b = append(b, pub[:]...)
	b = append(b, sig[:]...)
	// Room for the tag, so Seal need not reallocate.
	b = slices.Grow(b, TagLen)
	sealed := s.AEAD.Seal(b[bodyStart:bodyStart], s.nonce[:], b[bodyStart:], b[start:bodyStart])
	return b[:bodyStart+len(sealed)], nil
}

// Signed is what a one-way packet says of who sent it, once opened: the
// machine's public key, its signature, and the message it signs
// (AppendSignedMessage). Nothing in it is checked yet: the receiver looks
// the key up among the machines it pairs, then checks the signature
// (identity.Verify).
type Signed struct {
	Signer    [SignerLen]byte
	Signature [SignatureLen]byte
	Message   []byte
}

// OpenOneWay authenticates (with the key file's key) and decodes the
// one-way queue packet b whose header h was parsed already (flags
// SEALED|ONEWAY|SIGNED), with aead (OneWayAEAD of its session), into dst,
// and who signed it into sig. scratch is reused for the plaintext and
// returned. On error dst and sig must not be used.
func OpenOneWay(b []byte, h Header, aead cipher.AEAD, scratch []byte, dst *Queue, sig *Signed) ([]byte, error) {
	var o Opener
	return o.OpenOneWay(b, h, aead, scratch, dst, sig)
}

// Opener opens one-way packets with no allocation, as Sealer seals them:
// it owns the nonce buffer, which on the stack would escape to the heap
// through the AEAD's interface, one allocation per packet. Not safe for
// concurrent use.
type Opener struct {
	nonce [chacha20poly1305.NonceSize]byte
}

// OpenOneWay is the package's OpenOneWay with o's nonce buffer,
// allocating nothing once scratch and sig.Message have room.
func (o *Opener) OpenOneWay(b []byte, h Header, aead cipher.AEAD, scratch []byte, dst *Queue, sig *Signed) ([]byte, error) {
	if h.Type != TypeQueue || h.Flags != OneWaySealed {
		return scratch, fmt.Errorf("%w: type %d flags %#02x is no one-way queue packet", ErrFlags, h.Type, h.Flags)
	}
	o.nonce = nonce(h.Counter)
	plain, err := aead.Open(scratch[:0], o.nonce[:], b[HeaderLen:], b[:HeaderLen])
	if err != nil {
		return scratch, ErrAuth
	}
	if len(plain) < SignedLen {
		return plain, fmt.Errorf("%w: %d bytes opened, the signer and signature alone are %d", ErrTruncated, len(plain), SignedLen)
	}
	body := plain[:len(plain)-SignedLen]
	copy(sig.Signer[:], plain[len(body):])
	copy(sig.Signature[:], plain[len(body)+SignerLen:])
	sig.Message = AppendSignedMessage(sig.Message[:0], b[:HeaderLen], body)
	return plain, ParseQueueBody(h, body, dst)
}

// OpenQueue parses the header of b, then opens it as OpenOneWay does.
func OpenQueue(b []byte, aead cipher.AEAD, scratch []byte, dst *Queue, sig *Signed) ([]byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return scratch, err
	}
	if h.Flags&FlagSealed == 0 {
		return scratch, ErrNotSealed
	}
	return OpenOneWay(b, h, aead, scratch, dst, sig)
}
