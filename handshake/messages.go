package handshake

import (
	"encoding/binary"
	"fmt"

	"github.com/keyrelay/keyrelay/wire"
	"golang.org/x/crypto/chacha20poly1305"
)

// Sizes of the parts of a message.
const (
	keyLen       = 32 // a Curve25519 public key, a BLAKE2s-256 hash
	tagLen       = chacha20poly1305.Overhead
	macLen       = 16
	timestampLen = 12 // TAI64N
	indexLen     = 4
	cookieLen    = 16
	nonceLenX    = chacha20poly1305.NonceSizeX
)

// Initiation layout (package doc).
const (
	offInitSender    = HeaderLen
	offInitEphemeral = offInitSender + indexLen
	offInitStatic    = offInitEphemeral + keyLen
	offInitTimestamp = offInitStatic + keyLen + tagLen
	offInitMAC1      = offInitTimestamp + timestampLen + tagLen
	offInitMAC2      = offInitMAC1 + macLen
	// InitiationLen is the length of an initiation (type 3).
	InitiationLen = offInitMAC2 + macLen
)

// Response layout (package doc).
const (
	offRespSender    = HeaderLen
	offRespReceiver  = offRespSender + indexLen
	offRespEphemeral = offRespReceiver + indexLen
	offRespEmpty     = offRespEphemeral + keyLen
	offRespMAC1      = offRespEmpty + tagLen
	offRespMAC2      = offRespMAC1 + macLen
	// ResponseLen is the length of a response (type 4).
	ResponseLen = offRespMAC2 + macLen
)

// Cookie reply layout (package doc).
const (
	offCookieSender = HeaderLen
	offCookieNonce  = offCookieSender + indexLen
	offCookieSealed = offCookieNonce + nonceLenX
	// CookieReplyLen is the length of a cookie reply (type 6).
	CookieReplyLen = offCookieSealed + cookieLen + tagLen
)

// Transport layout (package doc): the compact header (wire.Header.Compact),
// whose counter is a uvarint, so the ciphertext starts at Header.Len().
const (
	offTransportIndex   = wire.PrefixLen
	offTransportCounter = offTransportIndex + indexLen
	// MaxTransportOverhead is the most sealing adds to a plaintext: the
	// compact header at its longest counter, and the tag.
	MaxTransportOverhead = wire.CompactMaxLen + tagLen
	// TransportMinLen is the length of a transport packet with an empty
	// plaintext and a counter below 128.
	TransportMinLen = wire.CompactMinLen + tagLen
)

// The answers are never larger than what causes them (PROTOCOL.md §10.1's
// rule for notices): a forged source address gets no amplification.
var (
	_ [InitiationLen - ResponseLen]struct{}
	_ [InitiationLen - CookieReplyLen]struct{}
)

// Initiation is a parsed initiation: a view of the datagram, valid while
// its bytes are.
type Initiation struct {
	Header Header
	// Sender is the index the sender chose for this handshake; its
	// response, cookie reply and the receiver's acks carry it.
	Sender uint32
	b      []byte
}

// ParseInitiation checks the layout of an initiation (nothing
// cryptographic) and returns its view.
func ParseInitiation(b []byte) (Initiation, error) {
	h, err := headerOf(b, TypeInitiation)
	if err != nil {
		return Initiation{}, err
	}
	return initiationOf(h, b)
}

func initiationOf(h Header, b []byte) (Initiation, error) {
	if err := checkLen(h, b, InitiationLen); err != nil {
		return Initiation{}, err
	}
	return Initiation{Header: h, Sender: binary.BigEndian.Uint32(b[offInitSender:]), b: b}, nil
}

// Bytes is the whole message.
func (m Initiation) Bytes() []byte { return m.b }

// noise is Noise message 1.
func (m Initiation) noise() []byte { return m.b[offInitEphemeral:offInitMAC1] }

// MAC1 and MAC2 are the message's MACs.
func (m Initiation) MAC1() []byte { return m.b[offInitMAC1:offInitMAC2] }
func (m Initiation) MAC2() []byte { return m.b[offInitMAC2:InitiationLen] }

// Response is a parsed response: a view of the datagram.
type Response struct {
	Header Header
	// Sender echoes the initiation's index; Receiver is the index the
	// receiver chose (the sender's queue packets carry it).
	Sender, Receiver uint32
	b                []byte
}

// ParseResponse checks the layout of a response and returns its view.
func ParseResponse(b []byte) (Response, error) {
	h, err := headerOf(b, TypeResponse)
	if err != nil {
		return Response{}, err
	}
	return responseOf(h, b)
}

func responseOf(h Header, b []byte) (Response, error) {
	if err := checkLen(h, b, ResponseLen); err != nil {
		return Response{}, err
	}
	return Response{
		Header:   h,
		Sender:   binary.BigEndian.Uint32(b[offRespSender:]),
		Receiver: binary.BigEndian.Uint32(b[offRespReceiver:]),
		b:        b,
	}, nil
}

// Bytes is the whole message.
func (m Response) Bytes() []byte { return m.b }

func (m Response) noise() []byte { return m.b[offRespEphemeral:offRespMAC1] }

// MAC1 and MAC2 are the message's MACs.
func (m Response) MAC1() []byte { return m.b[offRespMAC1:offRespMAC2] }
func (m Response) MAC2() []byte { return m.b[offRespMAC2:ResponseLen] }

// CookieReply is a parsed cookie reply: a view of the datagram.
type CookieReply struct {
	Header Header
	// Sender echoes the index of the initiation it answers.
	Sender uint32
	b      []byte
}

// ParseCookieReply checks the layout of a cookie reply and returns its
// view.
func ParseCookieReply(b []byte) (CookieReply, error) {
	h, err := headerOf(b, TypeCookieReply)
	if err != nil {
		return CookieReply{}, err
	}
	return cookieReplyOf(h, b)
}

func cookieReplyOf(h Header, b []byte) (CookieReply, error) {
	if err := checkLen(h, b, CookieReplyLen); err != nil {
		return CookieReply{}, err
	}
	return CookieReply{Header: h, Sender: binary.BigEndian.Uint32(b[offCookieSender:]), b: b}, nil
}

// Bytes is the whole message.
func (m CookieReply) Bytes() []byte { return m.b }

func (m CookieReply) nonce() []byte  { return m.b[offCookieNonce:offCookieSealed] }
func (m CookieReply) sealed() []byte { return m.b[offCookieSealed:CookieReplyLen] }

// Transport is a parsed transport packet (queue or ack): a view of the
// datagram. Its body is still sealed.
type Transport struct {
	Header Header
	// Index is the recipient's index of the keypair that sealed it
	// (Header.Index). Header.Session is 0: the packet does not carry it;
	// the session is the keypair's (Keypair.Session).
	Index uint32
	b     []byte
}

// ParseTransport checks the layout of a queue packet or ack of protocol 5
// and returns its view; Keypair.Open or Keyring.Open opens it.
func ParseTransport(b []byte) (Transport, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Transport{}, err
	}
	if h.Type != TypeQueue && h.Type != TypeAck {
		return Transport{}, fmt.Errorf("%w: %d is no transport packet", wire.ErrType, h.Type)
	}
	return transportOf(h, b)
}

func transportOf(h Header, b []byte) (Transport, error) {
	if h.Flags != FlagSealed {
		return Transport{}, fmt.Errorf("%w: %#02x: not a handshaken link's packet", wire.ErrFlags, h.Flags)
	}
	if n := h.Len() + tagLen; len(b) < n {
		return Transport{}, fmt.Errorf("%w: %d bytes, a sealed packet with this header has at least %d", wire.ErrTruncated, len(b), n)
	}
	return Transport{Header: h, Index: h.Index, b: b}, nil
}

// Bytes is the whole packet.
func (t Transport) Bytes() []byte { return t.b }

// ad is the associated data: the whole compact header, the index and the
// counter's own bytes included.
func (t Transport) ad() []byte { return t.b[:t.Header.Len()] }

// sealed is the ciphertext and its tag.
func (t Transport) sealed() []byte { return t.b[t.Header.Len():] }

// Message is any datagram of protocol 5, parsed once: its header and the
// view of its type; the other views are zero.
type Message struct {
	Header      Header
	Initiation  Initiation  // Header.Type == TypeInitiation
	Response    Response    // TypeResponse
	CookieReply CookieReply // TypeCookieReply
	Transport   Transport   // TypeQueue, TypeAck with flags SEALED
	// OneWay is the whole datagram of a queue packet or ack of no
	// handshake (flag wire.FlagOneWay: one-way sealed, or plaintext), for
	// package wire to open or parse (wire.OpenOneWay, wire.ParseQueueBody
	// after the header).
	OneWay []byte
}

// Parse parses a datagram of any type of protocol 5: what a socket's
// reader calls before it dispatches on m.Header.Type. A packet of another
// version gives wire.ErrVersion (answer it per PROTOCOL.md §10); a version
// notice of this one (type 5), wire.ErrType (read it with
// wire.ParseNotice).
func Parse(b []byte) (m Message, err error) {
	if m.Header, err = ParseHeader(b); err != nil {
		return m, err
	}
	switch m.Header.Type {
	case TypeInitiation:
		m.Initiation, err = initiationOf(m.Header, b)
	case TypeResponse:
		m.Response, err = responseOf(m.Header, b)
	case TypeCookieReply:
		m.CookieReply, err = cookieReplyOf(m.Header, b)
	default: // ParseHeader let only the transport types through
		if m.Header.Flags&wire.FlagOneWay != 0 {
			m.OneWay = b
			return m, nil
		}
		m.Transport, err = transportOf(m.Header, b)
	}
	return m, err
}
