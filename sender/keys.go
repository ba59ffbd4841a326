package sender

import (
	"errors"
	"fmt"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/wire"
)

// sessionKeys are what one session's packets share on the sender's side:
// the counter that numbers every packet, whatever its destination and
// keys, and the one-way key. Each destination sees consecutive counters
// (its ack bits and loss figures need them); a handshaken link's keypair
// is its own (link), so no key ever seals two packets with one nonce
// (PROTOCOL.md §8.2).
type sessionKeys struct {
	id      uint64
	oneWay  *wire.Sealer // nil: no one-way destination
	nonce   uint64       // the counter of the last packet sent; never reused
	scratch []byte       // an opened ack's body
}

// newSessionKeys makes session id's keys; with oneWay, the one-way
// sealer: the key file's key for the session, and this machine's identity
// to sign (PROTOCOL.md §8.6).
func newSessionKeys(psk []byte, id uint64, oneWay bool, self *identity.Identity) (sessionKeys, error) {
	k := sessionKeys{id: id, scratch: make([]byte, 0, wire.MaxPacketSize)}
	if !oneWay {
		return k, nil
	}
	a, err := wire.OneWayAEAD(psk, id)
	if err != nil {
		return k, fmt.Errorf("one-way destinations need the key file (--key-file): %w", err)
	}
	if self == nil {
		return k, errors.New("one-way destinations need this machine's identity (--identity): their packets are signed by it")
	}
	k.oneWay = &wire.Sealer{AEAD: a, Signer: self}
	return k, nil
}

var (
	errForeignAck  = errors.New("ack for another session")
	errPlainAck    = errors.New("plaintext ack to a sender that is not --insecure")
	errUnknownAck  = errors.New("ack under no keypair of this session (another run's, or forged)")
	errOneWayAcked = errors.New("ack flags of no kind")
)

// openAck authenticates (or, --insecure, parses) one ack, already parsed
// as m, into a. A handshaken link's ack is opened by the keypair its
// index names, whose replay window refuses a duplicate or a replay; it
// returns that link. A plaintext ack has no window: in plaintext anyone
// can forge any ack, and a duplicate changes nothing (handleAck).
//
// since is what the keypair's packets carry as Since (0 in plaintext):
// the receiver instance behind it types only newer events (ledger.go).
// c.ackedBy is the keypair that opened it (nil in plaintext).
func (c *Core) openAck(m handshake.Message, a *wire.Ack, now time.Time) (l *link, since uint64, err error) {
	c.ackedBy = nil
	h := m.Header
	switch {
	case m.OneWay != nil:
		if !c.cfg.Insecure {
			return nil, 0, errPlainAck
		}
		if err := wire.ParseAckBody(h, m.OneWay[wire.HeaderLen:], a); err != nil {
			return nil, 0, err
		}
	case m.Header.Flags == handshake.FlagSealed:
		l, k := c.keypairOf(m.Transport.Index)
		if k == nil {
			return nil, 0, errUnknownAck
		}
		body, err := k.Open(c.keys.scratch[:0], m.Transport, now)
		if err != nil {
			return nil, 0, err
		}
		// The compact header carries no session id: the ack's session is
		// its keypair's, and every keypair of c's links is c's session's
		// (PROTOCOL.md §2), so it needs no check here.
		h.Session = k.Session
		if err := wire.ParseAckBody(h, body, a); err != nil {
			return nil, 0, err
		}
		c.ackedBy = k
		since := l.prevSince
		if k == l.current {
			l.acked, l.ackedAt = true, now
			since = l.since
			// Only the receiver that holds this keypair applied what the
			// ack says: the base of its abridged packets (PROTOCOL.md §3.3).
			l.base = max(l.base, a.Stamp)
		}
		l.stamp = max(l.stamp, a.Stamp)
		return l, since, nil
	default:
		return nil, 0, errOneWayAcked
	}
	if a.Header.Session != c.keys.id {
		return nil, 0, errForeignAck
	}
	return nil, 0, nil
}

// keypairOf finds the keypair whose local index is i, and its link.
func (c *Core) keypairOf(i uint32) (*link, *handshake.Keypair) {
	for _, l := range c.links {
		for _, k := range [...]*handshake.Keypair{l.current, l.previous} {
			if k != nil && k.Local == i {
				return l, k
			}
		}
	}
	return nil, nil
}
