package handshake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/flynn/noise"
	"github.com/keyrelay/keyrelay/wire"
	"golang.org/x/crypto/curve25519"
)

// prologueLabel starts every handshake's prologue. The prologue goes on
// with the initiation's header and sender index (its first 26 bytes): the
// Noise messages then authenticate them, which mac1 (keyed with a public
// value) does not, so nobody on the path can move a handshake to another
// session id or index without it failing.
const prologueLabel = "keyrelay protocol 5"

// errInitiationMAC1 is made once: the cheapest rejection allocates
// nothing, as a flood of forged initiations is what it is for.
var errInitiationMAC1 = fmt.Errorf("initiation: %w", ErrMAC1)

// InitiationInterval is the least time between two initiations a
// responder accepts from one peer (WireGuard's 50 a second): a flood of
// valid replays or retries cannot churn keys.
const InitiationInterval = time.Second / 50

var cipherSuite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

// PublicKey is the Curve25519 public key of a private key.
func PublicKey(private [keyLen]byte) [keyLen]byte {
	pub, err := curve25519.X25519(private[:], curve25519.Basepoint)
	if err != nil {
		// Only a low-order point fails, and the base point is not one.
		panic(err)
	}
	return [keyLen]byte(pub)
}

func dhKey(private [keyLen]byte) noise.DHKey {
	pub := PublicKey(private)
	return noise.DHKey{Private: bytes.Clone(private[:]), Public: pub[:]}
}

func prologue(initiation []byte) []byte {
	return append([]byte(prologueLabel), initiation[:offInitEphemeral]...)
}

func randomIndex(rand io.Reader, taken func(uint32) bool) (uint32, error) {
	var b [indexLen]byte
	for range 64 {
		if _, err := io.ReadFull(rand, b[:]); err != nil {
			return 0, fmt.Errorf("unable to draw an index: %w", err)
		}
		if i := binary.BigEndian.Uint32(b[:]); i != 0 && (taken == nil || !taken(i)) {
			return i, nil
		}
	}
	return 0, errors.New("unable to draw a free index: 64 draws all taken")
}

// InitiatorConfig configures the sender's end of handshakes with one
// receiver.
type InitiatorConfig struct {
	// Private is the sender's static private key.
	Private [keyLen]byte
	// Peer is the receiver's static public key (from the peers file).
	Peer [keyLen]byte
	// PSK is the pre-shared key (the second factor), or zeros without one.
	PSK [keyLen]byte
	// Random supplies ephemeral keys and indices (crypto/rand.Reader in
	// production; a seeded reader in tests).
	Random io.Reader
	// IndexTaken reports whether an index is in use by another keypair of
	// the sender (nil: none is); a new handshake gets a free one.
	IndexTaken func(uint32) bool
}

// Initiator runs the sender's handshakes with one receiver. It keeps the
// handshakes of its last MaxNext initiations pending, oldest first: a
// sender may retry sooner than a round trip (while keys wait for the
// first keypair, PROTOCOL.md §8.2), and the response to an earlier
// initiation then still completes the handshake. A responder keeps the
// keypairs of its last MaxNext answers (Keyring) and answers initiations
// in the order they were made (their timestamps rise), so whichever of
// the pending ones the sender takes, the receiver still holds its
// keypair. It is not safe for concurrent use.
type Initiator struct {
	cfg     InitiatorConfig
	static  noise.DHKey
	cookies cookieGenerator
	// respMAC1 checks the mac1 of responses: keyed with this end's own
	// public key, the one they are addressed to.
	respMAC1 macer
	pending  []*pending // oldest first, at most MaxNext
}

// pending is the handshake of an initiation sent and not yet answered.
type pending struct {
	ephemeral  [keyLen]byte
	initiation [InitiationLen]byte
	timestamp  [timestampLen]byte
	index      uint32
	sentAt     time.Time
	// hs is ready to read message 2, nil after a message 2 failed: flynn's
	// ReadMessage does not roll back all it changed, so the state is made
	// again from the inputs kept here.
	hs *noise.HandshakeState
}

// NewInitiator makes an initiator.
func NewInitiator(c InitiatorConfig) *Initiator {
	i := &Initiator{cfg: c, static: dhKey(c.Private), cookies: newCookieGenerator(c.Peer)}
	i.respMAC1 = newMacer(labelKeySlice(labelMAC1, [keyLen]byte(i.static.Public)))
	return i
}

// state starts the Noise handshake state of p and writes message 1 into
// out (nil: discarded).
func (i *Initiator) state(p *pending, out []byte) (*noise.HandshakeState, error) {
	hs, err := noise.NewHandshakeState(noise.Config{
		CipherSuite:           cipherSuite,
		Random:                bytes.NewReader(p.ephemeral[:]),
		Pattern:               noise.HandshakeIK,
		Initiator:             true,
		Prologue:              prologue(p.initiation[:]),
		PresharedKey:          i.cfg.PSK[:],
		PresharedKeyPlacement: 2,
		StaticKeypair:         i.static,
		PeerStatic:            i.cfg.Peer[:],
	})
	if err != nil {
		return nil, err
	}
	msg, _, _, err := hs.WriteMessage(out[:0], p.timestamp[:])
	if err != nil {
		return nil, err
	}
	if out != nil && len(msg) != offInitMAC1-offInitEphemeral {
		return nil, fmt.Errorf("noise message 1 is %d bytes", len(msg))
	}
	return hs, nil
}

// Initiate appends a new initiation to b: for the sender's session and
// its next packet counter, stamped now. Past MaxNext pending it forgets
// the oldest.
func (i *Initiator) Initiate(b []byte, session, counter uint64, now time.Time) ([]byte, error) {
	if session == 0 || counter == 0 {
		return b, fmt.Errorf("initiation: %w", wire.ErrHeader)
	}
	p := &pending{timestamp: timestamp(now), sentAt: now}
	if _, err := io.ReadFull(i.cfg.Random, p.ephemeral[:]); err != nil {
		return b, fmt.Errorf("unable to draw an ephemeral key: %w", err)
	}
	idx, err := randomIndex(i.cfg.Random, i.cfg.IndexTaken)
	if err != nil {
		return b, err
	}
	p.index = idx
	m := p.initiation[:]
	putHeader(Header{Type: TypeInitiation, Session: session, Counter: counter}, m)
	binary.BigEndian.PutUint32(m[offInitSender:], idx)
	if p.hs, err = i.state(p, m[offInitEphemeral:offInitMAC1]); err != nil {
		return b, fmt.Errorf("initiation: %w", err)
	}
	i.cookies.addMACs(m, offInitMAC1, now)
	if len(i.pending) >= MaxNext {
		i.drop(len(i.pending) - MaxNext + 1)
	}
	i.pending = append(i.pending, p)
	return append(b, m...), nil
}

// Pending reports whether an initiation awaits its response.
func (i *Initiator) Pending() bool { return len(i.pending) > 0 }

// answers returns the pending handshake a message with header h and
// sender index idx answers, nil if none.
func (i *Initiator) answers(h Header, idx uint32) *pending {
	for _, p := range i.pending {
		m := p.initiation[:]
		if idx == p.index && h.Session == binary.BigEndian.Uint64(m[offSession:]) && h.Counter == binary.BigEndian.Uint64(m[offCounter:]) {
			return p
		}
	}
	return nil
}

// ConsumeResponse completes a pending handshake with a response to its
// initiation: the keypair, confirmed (the sender may seal with it at
// once: Keyring.Use); the other pending handshakes are forgotten. A
// response that fails leaves them pending.
func (i *Initiator) ConsumeResponse(m Response, now time.Time) (*Keypair, error) {
	p := i.answers(m.Header, m.Sender)
	if p == nil {
		return nil, fmt.Errorf("response: %w", ErrNoHandshake)
	}
	if !i.respMAC1.check(m.b[:offRespMAC1], m.MAC1()) {
		return nil, fmt.Errorf("response: %w", ErrMAC1)
	}
	if now.Sub(p.sentAt) >= RejectAfterTime {
		// Its keypair would be born expired (it dates from the
		// initiation), and so would every older one's.
		i.forgetThrough(p)
		return nil, fmt.Errorf("response: %w", ErrExpired)
	}
	if p.hs == nil {
		hs, err := i.state(p, nil)
		if err != nil {
			return nil, fmt.Errorf("response: %w", err)
		}
		p.hs = hs
	}
	_, cs1, cs2, err := p.hs.ReadMessage(nil, m.noise())
	if err != nil || cs1 == nil {
		p.hs = nil
		return nil, fmt.Errorf("response: %w", ErrHandshake)
	}
	k := newKeypair(cs1.UnsafeKey(), cs2.UnsafeKey(), true)
	k.Local, k.Remote = p.index, m.Receiver
	// The sender's keypair dates from its initiation, not from the
	// response: the receiver made its own copy in between, so the sender
	// then always rekeys and stops sealing before the receiver drops it,
	// however long the response took.
	k.Session, k.Peer, k.Created = m.Header.Session, i.cfg.Peer, p.sentAt
	i.drop(len(i.pending))
	return k, nil
}

// forgetThrough drops p and the handshakes pending before it.
func (i *Initiator) forgetThrough(p *pending) {
	for n, q := range i.pending {
		if q == p {
			i.drop(n + 1)
			return
		}
	}
}

// drop forgets the n oldest pending handshakes, leaving no pointer to
// their ephemeral keys behind in the slice.
func (i *Initiator) drop(n int) {
	k := copy(i.pending, i.pending[n:])
	clear(i.pending[k:])
	i.pending = i.pending[:k]
}

// ConsumeCookieReply takes the cookie of a reply to the newest pending
// initiation (a cookie reply opens only with its mac1): the next
// initiations carry mac2 for CookieLife. The pending handshakes stay (the
// responder did nothing with it); the caller sends a new initiation when
// its retry timer allows.
func (i *Initiator) ConsumeCookieReply(m CookieReply, now time.Time) error {
	if len(i.pending) == 0 || i.answers(m.Header, m.Sender) != i.pending[len(i.pending)-1] {
		return fmt.Errorf("cookie reply: %w", ErrNoHandshake)
	}
	return i.cookies.consume(m, now)
}

// ResponderConfig configures the receiver's end of handshakes.
type ResponderConfig struct {
	// Private is the receiver's static private key.
	Private [keyLen]byte
	// PSK is the pre-shared key (the second factor), or zeros without one.
	PSK [keyLen]byte
	// Paired reports whether an initiator's static public key is a paired
	// peer; only those get keys.
	Paired func(pub [keyLen]byte) bool
	// IndexTaken reports whether an index is in use by another keypair of
	// the receiver (nil: none is); a new keypair gets a free one.
	IndexTaken func(uint32) bool
	// Random supplies ephemeral keys, indices, cookie secrets and nonces.
	Random io.Reader
}

// Responder answers initiations: the receiver's end. It keeps, per paired
// peer heard, the newest timestamp and when it last accepted an
// initiation (bounded by the number of paired peers). It is not safe for
// concurrent use.
type Responder struct {
	cfg     ResponderConfig
	static  noise.DHKey
	cookies cookieChecker
	peers   map[[keyLen]byte]*peerState
}

type peerState struct {
	newest       [timestampLen]byte
	lastAccepted time.Time
	respMAC1     macer
}

// NewResponder makes a responder.
func NewResponder(c ResponderConfig) *Responder {
	r := &Responder{cfg: c, static: dhKey(c.Private), peers: make(map[[keyLen]byte]*peerState)}
	r.cookies = newCookieChecker([keyLen]byte(r.static.Public))
	return r
}

// Answer is what a responder makes of an initiation.
type Answer struct {
	// Packet is the datagram to send back to the initiation's source: a
	// response, or a cookie reply. It is appended to the caller's buffer.
	Packet []byte
	// Cookie is set when Packet is a cookie reply: under load, the
	// initiation had no valid mac2 and nothing else was done.
	Cookie bool
	// Keypair is the new keypair with the initiator (Keyring.Begin), nil
	// with a cookie reply.
	Keypair *Keypair
}

// ConsumeInitiation checks an initiation from src in WireGuard's order
// (cheapest first, each step only for what passed the last): mac1 (is it
// for this key?); under load, mac2 (has the source proved its address?),
// else a cookie reply; the Noise message (two Diffie-Hellmans); the
// initiator paired; its timestamp newer than any before and the last
// initiation at least InitiationInterval ago. Then it writes the response
// into b and returns the new keypair. underLoad is the caller's judgement
// (WireGuard: a queue of handshakes backing up).
func (r *Responder) ConsumeInitiation(b []byte, m Initiation, src netip.AddrPort, underLoad bool, now time.Time) (Answer, error) {
	if !r.cookies.checkMAC1(m.b, offInitMAC1) {
		return Answer{Packet: b}, errInitiationMAC1
	}
	if underLoad && !r.cookies.checkMAC2(m.b, offInitMAC2, src, now) {
		out, err := r.cookies.appendReply(b, m, src, now, r.cfg.Random)
		if err != nil {
			return Answer{Packet: b}, err
		}
		return Answer{Packet: out, Cookie: true}, nil
	}
	hs, err := noise.NewHandshakeState(noise.Config{
		CipherSuite:           cipherSuite,
		Random:                r.cfg.Random,
		Pattern:               noise.HandshakeIK,
		Prologue:              prologue(m.b),
		PresharedKey:          r.cfg.PSK[:],
		PresharedKeyPlacement: 2,
		StaticKeypair:         r.static,
	})
	if err != nil {
		return Answer{Packet: b}, fmt.Errorf("initiation: %w", err)
	}
	var tsBuf [timestampLen]byte
	ts, _, _, err := hs.ReadMessage(tsBuf[:0], m.noise())
	if err != nil || len(ts) != timestampLen {
		return Answer{Packet: b}, fmt.Errorf("initiation: %w", ErrHandshake)
	}
	peer := [keyLen]byte(hs.PeerStatic())
	if r.cfg.Paired == nil || !r.cfg.Paired(peer) {
		return Answer{Packet: b}, fmt.Errorf("initiation from %x: %w", peer[:4], ErrUnpaired)
	}
	ps := r.peers[peer]
	if ps != nil {
		if bytes.Compare(ts, ps.newest[:]) <= 0 {
			return Answer{Packet: b}, fmt.Errorf("initiation: %w", ErrReplayedInitiation)
		}
		if now.Sub(ps.lastAccepted) < InitiationInterval {
			return Answer{Packet: b}, fmt.Errorf("initiation: %w", ErrFlood)
		}
	}
	idx, err := randomIndex(r.cfg.Random, r.cfg.IndexTaken)
	if err != nil {
		return Answer{Packet: b}, err
	}
	start := len(b)
	b = append(b, make([]byte, ResponseLen)...)
	resp := b[start:]
	h := m.Header
	h.Type = TypeResponse
	putHeader(h, resp)
	binary.BigEndian.PutUint32(resp[offRespSender:], m.Sender)
	binary.BigEndian.PutUint32(resp[offRespReceiver:], idx)
	msg, cs1, cs2, err := hs.WriteMessage(resp[offRespEphemeral:offRespEphemeral], nil)
	if err != nil || cs1 == nil || len(msg) != offRespMAC1-offRespEphemeral {
		return Answer{Packet: b[:start]}, fmt.Errorf("response: unable to write noise message 2: %v", err)
	}
	if ps == nil {
		ps = &peerState{respMAC1: newMacer(labelKeySlice(labelMAC1, peer))}
		r.peers[peer] = ps
	}
	copy(ps.newest[:], ts)
	ps.lastAccepted = now
	// mac2 of a response stays zero: a sender is never under load (it
	// reads only responses to its own pending initiation).
	ps.respMAC1.put(resp[:offRespMAC1], resp[offRespMAC1:offRespMAC2])
	k := newKeypair(cs1.UnsafeKey(), cs2.UnsafeKey(), false)
	k.Local, k.Remote = idx, m.Sender
	k.Session, k.Peer, k.Created = m.Header.Session, peer, now
	return Answer{Packet: b, Keypair: k}, nil
}

func labelKeySlice(label []byte, pub [keyLen]byte) []byte {
	k := labelKey(label, pub)
	return k[:]
}

// TAI64N: the timestamp an initiation carries (WireGuard paper §5.4.2).
const tai64Base = 1<<62 + 10

// timestamp is now as TAI64N, the nanoseconds rounded down to 2^24 ns
// (about 17 ms) as WireGuard does, so the responder learns nothing finer
// of the sender's clock; InitiationInterval is longer, so two initiations
// it accepts never share a stamp.
func timestamp(now time.Time) [timestampLen]byte {
	var t [timestampLen]byte
	binary.BigEndian.PutUint64(t[:], uint64(tai64Base+now.Unix()))
	binary.BigEndian.PutUint32(t[8:], uint32(now.Nanosecond())&^(1<<24-1))
	return t
}
