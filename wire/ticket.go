package wire

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// The handshake (PROTOCOL.md §8.3): a sender asks each receiver for a
// ticket (hello), the receiver answers with one it made from its own
// secret (ticket), and the session's keys are derived from the pre-shared
// key, the session id and that ticket. The receiver's secret is drawn when
// it starts, so a recording is useless at any other receiver and at the
// same one after a restart: no clock has to be trusted (WireGuard's
// responder ephemeral plays this part there).
//
// Hello and ticket messages are authenticated with HMAC-SHA256, not the
// AEAD: they carry nothing secret, and a receiver answers hellos without
// keeping state, so it could not keep a nonce from repeating (two answers
// to one duplicated hello would reuse a ChaCha20-Poly1305 nonce).

// MACLen is the length of a hello's or ticket's MAC: HMAC-SHA256 truncated
// to 128 bits (RFC 2104 §5).
const MACLen = 16

// HelloLen and TicketMsgLen are the sizes of the handshake messages with a
// key (without: MACLen less). A hello is padded to a ticket's size, so a
// receiver's answer is never larger than what asked for it.
const (
	TicketMsgLen = HeaderLen + TicketLen + MACLen
	HelloLen     = TicketMsgLen
)

// handshakeInfo is the HKDF info of the key that authenticates hellos and
// tickets; the header's type byte, part of every MAC, keeps the two apart.
const handshakeInfo = "keyrelay v4 handshake"

// HandshakeKey derives the key that authenticates one session's hellos and
// tickets from the pre-shared key and the session id.
func HandshakeKey(psk []byte, session uint64) ([]byte, error) {
	if len(psk) != KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(psk), KeyLen)
	}
	salt := binary.BigEndian.AppendUint64(nil, session)
	return hkdf.Key(sha256.New, psk, salt, handshakeInfo, sha256.Size)
}

// TicketAEAD derives the AEAD of one direction of a handshaken session:
// HKDF-SHA256 with the session id and the receiver's ticket as salt. The
// 20-byte salt never equals a one-way session's 8-byte one (SessionAEAD).
func TicketAEAD(psk []byte, session uint64, t Ticket, dir Direction) (cipher.AEAD, error) {
	if len(psk) != KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(psk), KeyLen)
	}
	salt := binary.BigEndian.AppendUint64(make([]byte, 0, 8+TicketLen), session)
	salt = append(salt, t[:]...)
	key, err := hkdf.Key(sha256.New, psk, salt, string(dir), chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	return chacha20poly1305.New(key)
}

// mac is the truncated HMAC-SHA256 of msg under key.
func mac(key, msg []byte) [MACLen]byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	var out [MACLen]byte
	copy(out[:], m.Sum(nil))
	return out
}

// AppendHello appends a hello of session id with counter: the header,
// TicketLen zero bytes (padding), and with a key (key non-nil, from
// HandshakeKey) the MAC of all that, flag SEALED.
func AppendHello(b []byte, session, counter uint64, key []byte) []byte {
	h := Header{Type: TypeHello, Session: session, Counter: counter}
	if key != nil {
		h.Flags = FlagSealed
	}
	start := len(b)
	b = h.Append(b)
	b = append(b, make([]byte, TicketLen)...)
	if key != nil {
		m := mac(key, b[start:])
		b = append(b, m[:]...)
	}
	return b
}

// ParseHello checks a hello: its header, and its MAC with keyFor's key for
// the session it names (keyFor is called only when the packet is sealed;
// nil: the receiver has no key, and a sealed hello is ErrSealed).
func ParseHello(b []byte, keyFor func(session uint64) ([]byte, error)) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Type != TypeHello {
		return h, fmt.Errorf("%w: %d where a hello was expected", ErrType, h.Type)
	}
	body := b[HeaderLen:]
	if err := checkHandshake(b, h, keyFor); err != nil {
		return h, err
	}
	for _, c := range body[:TicketLen] {
		if c != 0 {
			return h, fmt.Errorf("%w: non-zero padding in a hello", ErrQueue)
		}
	}
	return h, nil
}

// AppendTicket appends a receiver's ticket for session, answering the
// sender's packet counter echo: header (its counter is echo), the ticket,
// and with a key its MAC.
func AppendTicket(b []byte, session, echo uint64, t Ticket, key []byte) []byte {
	h := Header{Type: TypeTicket, Session: session, Counter: echo}
	if key != nil {
		h.Flags = FlagSealed
	}
	start := len(b)
	b = h.Append(b)
	b = append(b, t[:]...)
	if key != nil {
		m := mac(key, b[start:])
		b = append(b, m[:]...)
	}
	return b
}

// ParseTicket checks a ticket message and returns its header (the counter
// is the echoed one) and the ticket.
func ParseTicket(b []byte, keyFor func(session uint64) ([]byte, error)) (Header, Ticket, error) {
	var t Ticket
	h, err := ParseHeader(b)
	if err != nil {
		return h, t, err
	}
	if h.Type != TypeTicket {
		return h, t, fmt.Errorf("%w: %d where a ticket was expected", ErrType, h.Type)
	}
	if err := checkHandshake(b, h, keyFor); err != nil {
		return h, t, err
	}
	copy(t[:], b[HeaderLen:])
	return h, t, nil
}

// checkHandshake checks the size of a hello or ticket (each has TicketLen
// bytes after the header: padding or the ticket), and its MAC when it is
// sealed.
func checkHandshake(b []byte, h Header, keyFor func(uint64) ([]byte, error)) error {
	const n = TicketLen
	want := HeaderLen + n
	if h.Flags&FlagSealed != 0 {
		want += MACLen
	}
	switch {
	case len(b) < want:
		return fmt.Errorf("%w: %d bytes, want %d", ErrTruncated, len(b), want)
	case len(b) > want:
		return fmt.Errorf("%w: %d bytes", ErrTrailing, len(b)-want)
	}
	if h.Flags&FlagSealed == 0 {
		if keyFor != nil {
			return ErrNotSealed
		}
		return nil
	}
	if keyFor == nil {
		return ErrSealed
	}
	key, err := keyFor(h.Session)
	if err != nil {
		return err
	}
	m := mac(key, b[:HeaderLen+n])
	if subtle.ConstantTimeCompare(m[:], b[HeaderLen+n:]) != 1 {
		return ErrAuth
	}
	return nil
}

// ticketLabel separates a ticket's MAC from anything else the receiver's
// secret might ever authenticate.
const ticketLabel = "keyrelay v4 ticket"

// MintTicket makes the ticket a receiver instance with secret hands
// session at epoch (seconds since the instance started): the epoch,
// big-endian, and the first 8 bytes of HMAC-SHA256(secret, label ‖ session
// ‖ epoch). Only the instance that holds secret can make or check it.
func MintTicket(secret []byte, session uint64, epoch uint32) Ticket {
	var t Ticket
	binary.BigEndian.PutUint32(t[:4], epoch)
	copy(t[4:], ticketMAC(secret, session, epoch))
	return t
}

func ticketMAC(secret []byte, session uint64, epoch uint32) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ticketLabel))
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], session)
	binary.BigEndian.PutUint32(b[8:], epoch)
	m.Write(b[:])
	return m.Sum(nil)[:TicketLen-4]
}

// Epoch is when the ticket was issued, in seconds since its receiver
// instance started.
func (t Ticket) Epoch() uint32 { return binary.BigEndian.Uint32(t[:4]) }

// Minted reports whether the instance with secret made t for session.
func (t Ticket) Minted(secret []byte, session uint64) bool {
	return subtle.ConstantTimeCompare(ticketMAC(secret, session, t.Epoch()), t[4:]) == 1
}

// IsZero reports whether t is the zero ticket (none yet).
func (t Ticket) IsZero() bool { return t == Ticket{} }
