package handshake

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/keyrelay/keyrelay/wire"
)

// Header layout of the handshake messages (PROTOCOL.md §2); the same
// offsets as protocol 4's. Transport packets have the compact header
// (wire.Header.Compact).
const (
	offMagic    = 0
	offVersion  = 2
	offType     = 3
	offFlags    = 4
	offReserved = 5
	offSession  = 6
	offCounter  = 14
	// HeaderLen is the length of the header every message starts with.
	HeaderLen = 22
)

// Version is the protocol version this package speaks.
const Version = wire.Version

// Types of protocol 5 (PROTOCOL.md §2). Type 5 is the version notice of
// every version (§10), read with wire.ParseNotice, not here.
const (
	TypeQueue       wire.Type = 1
	TypeAck         wire.Type = 2
	TypeInitiation  wire.Type = 3
	TypeResponse    wire.Type = 4
	TypeCookieReply wire.Type = 6
)

// FlagSealed marks a handshaken link's transport packet: ciphertext after
// the index. Handshake messages carry no flag. The queue packets and acks
// of no handshake carry wire.FlagOneWay (one-way sealed and signed, or
// plaintext):
// Parse passes them on whole (Message.OneWay) for package wire to read.
const FlagSealed uint8 = wire.FlagSealed

// Sentinel errors of this package; every error it returns wraps exactly one
// of them or one of wire's (ErrTooLarge, ErrTruncated, ErrMagic,
// ErrVersion, ErrType, ErrFlags, ErrHeader, ErrTrailing, ErrAuth).
var (
	// ErrMAC1: the message was not made for this end's public key (or was
	// damaged): rejected before any Diffie-Hellman.
	ErrMAC1 = errors.New("handshake message not addressed to this key (mac1 does not match)")
	// ErrHandshake: the Noise message does not authenticate: another
	// pre-shared key, a forged or damaged message.
	ErrHandshake = errors.New("handshake does not authenticate (other pre-shared key, or forged)")
	// ErrUnpaired: the initiator proved a static key that is not paired.
	ErrUnpaired = errors.New("initiator's key is not a paired peer")
	// ErrReplayedInitiation: the initiation's timestamp is not newer than
	// the newest accepted from that peer.
	ErrReplayedInitiation = errors.New("initiation not newer than one already accepted from this peer (a replay, or the sender's clock went back)")
	// ErrFlood: a valid initiation came less than InitiationInterval after
	// the last one accepted from the same peer.
	ErrFlood = errors.New("initiations from this peer too frequent")
	// ErrNoHandshake: a response or cookie reply that answers no
	// initiation in progress.
	ErrNoHandshake = errors.New("answers no handshake in progress")
	// ErrIndex: a transport packet for an index no live keypair has.
	ErrIndex = errors.New("unknown or expired keypair index")
	// ErrSession: a packet to seal for another session than its
	// keypair's. (A packet opened needs no such check: its compact header
	// names its session only through the keypair's index.)
	ErrSession = errors.New("session id does not match the keypair's")
	// ErrReplay: a transport counter already accepted, or older than the
	// replay window (PROTOCOL.md §8.5).
	ErrReplay = errors.New("packet counter replayed or too old")
	// ErrExpired: the keypair is older than RejectAfterTime or has sealed
	// RejectAfterMessages packets: a new handshake is needed.
	ErrExpired = errors.New("keypair expired: a new handshake is needed")
)

// Header is the fixed part of every protocol 5 message: wire's header
// (PROTOCOL.md §2), one type for both packages, so a datagram parsed here
// is handed to wire's body parsers as it is.
type Header = wire.Header

// putHeader writes h into b[:HeaderLen], in place (the messages are built
// in buffers of their final length).
func putHeader(h Header, b []byte) {
	_ = b[HeaderLen-1]
	b[offMagic], b[offMagic+1], b[offVersion] = wire.Magic0, wire.Magic1, Version
	b[offType], b[offFlags], b[offReserved] = byte(h.Type), h.Flags, 0
	binary.BigEndian.PutUint64(b[offSession:], h.Session)
	binary.BigEndian.PutUint64(b[offCounter:], h.Counter)
}

// ParseHeader decodes and checks the header of b: size, magic, version,
// type, flags, ids; nothing of the body, which starts at h.Len(). A
// handshaken link's queue packet or ack has the compact header (its index,
// no session id: PROTOCOL.md §2). A packet of another version gives
// wire.ErrVersion: the caller answers it per PROTOCOL.md §10.
func ParseHeader(b []byte) (Header, error) {
	t, flags, err := wire.ParsePrefix(b)
	if err != nil {
		return Header{}, err
	}
	switch t {
	case TypeQueue, TypeAck:
		// SEALED (handshaken), ONEWAY (plaintext), and for a queue packet
		// SEALED|ONEWAY|SIGNED (one-way): PROTOCOL.md §2.
		if err := wire.CheckKind(t, flags); err != nil {
			return Header{Type: t, Flags: flags}, err
		}
	case TypeInitiation, TypeResponse, TypeCookieReply:
		if flags != 0 {
			return Header{Type: t, Flags: flags}, fmt.Errorf("%w: %#02x on a handshake message", wire.ErrFlags, flags)
		}
	default:
		return Header{Type: t, Flags: flags}, fmt.Errorf("%w: %d", wire.ErrType, t)
	}
	return wire.ReadIDs(b, t, flags)
}

// checkLen checks that a message of header h is exactly n bytes. Its
// errors name the type.
func checkLen(h Header, b []byte, n int) error {
	if len(b) < n {
		return fmt.Errorf("%w: %d bytes, type %d has %d", wire.ErrTruncated, len(b), h.Type, n)
	}
	if len(b) > n {
		return fmt.Errorf("%w: %d bytes, type %d has %d", wire.ErrTrailing, len(b), h.Type, n)
	}
	return nil
}

// headerOf parses b's header and checks it is of type want. The
// commonest rejection, garbage without the magic, is wire.ErrMagic
// itself, so it allocates nothing.
func headerOf(b []byte, want wire.Type) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Type != want {
		return h, fmt.Errorf("%w: %d where %d was expected", wire.ErrType, h.Type, want)
	}
	return h, nil
}
