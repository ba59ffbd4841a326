package handshake

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/wire"
	"golang.org/x/crypto/chacha20poly1305"
)

// Timers and limits of a keypair's life (WireGuard paper §6.1). Who does
// what:
//
//   - The sender (initiator) starts a new handshake once its current
//     keypair is RekeyAfterTime old (Keypair.NeedsRekey) and keeps sealing
//     with it meanwhile; it retries an unanswered initiation after
//     RekeyTimeout (a new one: new ephemeral, new timestamp). It seals with
//     the new keypair as soon as the response authenticates (Keyring.Use):
//     the response proves the receiver has it. Its keypair dates from the
//     initiation, the receiver's copy from its arrival, so the sender's
//     timers always run out first.
//   - The receiver (responder) holds three keypairs per peer (Keyring):
//     current, previous, and next, the one of the newest handshake. It
//     never seals with next, and makes it current only when a transport
//     packet under it authenticates (key confirmation: the sender has it);
//     the old current becomes previous. Until then, and after, packets
//     under current and previous still open.
//   - Nobody seals or opens with a keypair RejectAfterTime old, or one that
//     sealed RejectAfterMessages packets: a sender whose handshakes all
//     failed for RejectAfterTime - RekeyAfterTime stops, rather than use
//     old keys.
const (
	RekeyAfterTime  = 120 * time.Second
	RejectAfterTime = 180 * time.Second
	RekeyTimeout    = 5 * time.Second
	// RekeyAfterMessages and RejectAfterMessages bound what one keypair
	// seals (WireGuard's values). The nonce is the session's packet
	// counter, which never repeats within a session, so they are a bound on
	// the key's use, not the guard against nonce reuse; a keyboard never
	// reaches them.
	RekeyAfterMessages  = 1 << 60
	RejectAfterMessages = 1<<64 - 1<<13 - 1
)

// Keypair is the pair of transport keys one handshake made, with the
// indices that name it at both ends and the replay window of what it
// opened. The initiator and the responder each hold one per handshake.
// It is not safe for concurrent use.
type Keypair struct {
	send, recv cipher.AEAD
	// The nonce buffers live here, not on the stack: handed to the AEAD (an
	// interface) a stack nonce escapes, one allocation per packet.
	sendNonce, recvNonce [chacha20poly1305.NonceSize]byte
	// Local is the index packets to this end carry; Remote the index this
	// end puts on its packets.
	Local, Remote uint32
	// Session is the sender's session id the handshake was made for
	// (authenticated by it: part of the prologue).
	Session uint64
	// Peer is the other end's static public key.
	Peer [keyLen]byte
	// Created is when the handshake completed at this end.
	Created time.Time
	// Initiator is whether this end started the handshake (the sender).
	Initiator bool
	filter    replay.Filter
	sealed    uint64
}

// newKeypair makes a keypair from the two keys of Noise's Split: the
// first seals initiator to responder, the second the other way. It builds
// its own AEADs from the keys rather than use flynn/noise's Cipher, whose
// Encrypt(out, n, ad, plaintext) takes the nonce explicitly too: that
// one makes each nonce in a closure that returns a slice of a local array,
// one allocation per packet, and encodes the counter little-endian as the
// Noise spec says, where keyrelay puts it big-endian (PROTOCOL.md §2,
// §8.3), matching the header it comes from.
func newKeypair(k1, k2 [keyLen]byte, initiator bool) *Keypair {
	a1, _ := chacha20poly1305.New(k1[:])
	a2, _ := chacha20poly1305.New(k2[:])
	if initiator {
		return &Keypair{send: a1, recv: a2, Initiator: true}
	}
	return &Keypair{send: a2, recv: a1}
}

// NeedsRekey reports whether the initiator should start a new handshake.
func (k *Keypair) NeedsRekey(now time.Time) bool {
	return now.Sub(k.Created) >= RekeyAfterTime || k.sealed >= RekeyAfterMessages
}

// Expired reports whether k may no longer seal or open.
func (k *Keypair) Expired(now time.Time) bool {
	return now.Sub(k.Created) >= RejectAfterTime || k.sealed >= RejectAfterMessages
}

// Seal appends to dst the transport packet carrying plaintext under h
// (type queue or ack, the session's id and next counter; its flags are
// set to SEALED, its index to k.Remote): the compact header, which names
// the session only through the index (PROTOCOL.md §2), the ciphertext and
// tag. It allocates nothing when dst has room for len(plaintext) +
// MaxTransportOverhead more bytes. plaintext must not overlap dst's free
// space.
func (k *Keypair) Seal(dst []byte, h Header, plaintext []byte, now time.Time) ([]byte, error) {
	if h.Type != TypeQueue && h.Type != TypeAck {
		return dst, fmt.Errorf("seal: %w: %d is no transport packet", wire.ErrType, h.Type)
	}
	if h.Session == 0 || h.Counter == 0 {
		return dst, fmt.Errorf("seal: %w", wire.ErrHeader)
	}
	if h.Session != k.Session {
		return dst, fmt.Errorf("seal: %w", ErrSession)
	}
	if k.Expired(now) {
		return dst, fmt.Errorf("seal: %w", ErrExpired)
	}
	h.Flags, h.Index = FlagSealed, k.Remote
	start := len(dst)
	dst = h.Append(dst)
	binary.BigEndian.PutUint64(k.sendNonce[4:], h.Counter)
	k.sealed++
	return k.send.Seal(dst, k.sendNonce[:], plaintext, dst[start:]), nil
}

// Sealed is how many packets k has sealed. The receiver numbers its acks
// under k with it (the next ack's counter is Sealed()+1): a fresh keypair
// counts from 1, so no two acks share a key and nonce, across receiver
// restarts too (each run's keypairs are its own).
func (k *Keypair) Sealed() uint64 { return k.sealed }

// Open opens t, sealed by the other end of k, appending the plaintext to
// dst, and records its counter in k's replay window. It allocates nothing
// when dst has room. Only a packet that authenticates moves the window.
// The packet's session is k.Session: its compact header carries none, and
// k belongs to one session at both ends (the handshake's prologue
// authenticated it), so the index binds the packet to it.
func (k *Keypair) Open(dst []byte, t Transport, now time.Time) ([]byte, error) {
	if t.Index != k.Local {
		return dst, fmt.Errorf("open: %w", ErrIndex)
	}
	if k.Expired(now) {
		return dst, fmt.Errorf("open: %w", ErrExpired)
	}
	c := t.Header.Counter
	if k.filter.Seen(c) {
		return dst, fmt.Errorf("open: %w: %d", ErrReplay, c)
	}
	binary.BigEndian.PutUint64(k.recvNonce[4:], c)
	out, err := k.recv.Open(dst, k.recvNonce[:], t.sealed(), t.ad())
	if err != nil {
		return dst, fmt.Errorf("open: %w", wire.ErrAuth)
	}
	k.filter.Accept(c)
	return out, nil
}

// MaxNext bounds the unconfirmed keypairs a Keyring keeps: the
// responder's answers to the newest initiations whose keypair no packet
// has confirmed yet.
const MaxNext = 4

// Keyring holds one peer's keypairs as WireGuard does (see
// RekeyAfterTime): current, previous, and next: a responder's, not yet
// confirmed. Unlike WireGuard it keeps up to MaxNext of those, oldest
// first, not only the newest: under heavy loss a sender may take the
// keypair of one response while a later initiation of its is already on
// its way (it wants a new handshake while its newest keypair is
// unacknowledged), and a responder that kept only the newest answer would
// drop the keypair the sender seals with, typing nothing until a later
// handshake completes (a held key released by the silence). The zero
// value holds none. It is not safe for concurrent use.
type Keyring struct {
	current, previous *Keypair
	next              []*Keypair // unconfirmed, oldest first
}

// Begin files the keypair of a handshake this end answered (the
// responder) as the newest next: it seals nothing until a packet under it
// opens. Past MaxNext the oldest unconfirmed one is dropped.
func (r *Keyring) Begin(k *Keypair) {
	if len(r.next) >= MaxNext {
		r.next = append(r.next[:0:0], r.next[len(r.next)-MaxNext+1:]...)
	}
	r.next = append(r.next, k)
}

// Use makes k current at once, the old current previous: for the
// initiator, whose keypair is confirmed by the response.
func (r *Keyring) Use(k *Keypair) {
	r.previous, r.current, r.next = r.current, k, nil
}

// Current is the keypair to seal with, nil if none is live.
func (r *Keyring) Current(now time.Time) *Keypair {
	if r.current == nil || r.current.Expired(now) {
		return nil
	}
	return r.current
}

// Lookup finds the live keypair whose local index is index.
func (r *Keyring) Lookup(index uint32, now time.Time) *Keypair {
	live := func(k *Keypair) bool { return k != nil && k.Local == index && !k.Expired(now) }
	if live(r.current) {
		return r.current
	}
	for _, k := range r.next {
		if live(k) {
			return k
		}
	}
	if live(r.previous) {
		return r.previous
	}
	return nil
}

// Open opens t with the keypair its index names (Keypair.Open). A packet
// that opens under an unconfirmed keypair confirms it: it becomes current
// and current previous (the old previous is dropped), and the unconfirmed
// ones older than it are dropped (the sender has gone past them); newer
// ones stay, as the sender may still take one of them.
func (r *Keyring) Open(dst []byte, t Transport, now time.Time) ([]byte, *Keypair, error) {
	k := r.Lookup(t.Index, now)
	if k == nil {
		return dst, nil, fmt.Errorf("open: %w: %d", ErrIndex, t.Index)
	}
	out, err := k.Open(dst, t, now)
	if err != nil {
		return dst, nil, err
	}
	for i, n := range r.next {
		if n == k {
			r.previous, r.current = r.current, k
			r.next = append(r.next[:0:0], r.next[i+1:]...)
			break
		}
	}
	return out, k, nil
}

// Indices lists the local indices of the keypairs r holds, for the
// caller's index table.
func (r *Keyring) Indices() []uint32 {
	var idx []uint32
	for _, k := range append([]*Keypair{r.current, r.previous}, r.next...) {
		if k != nil {
			idx = append(idx, k.Local)
		}
	}
	return idx
}
