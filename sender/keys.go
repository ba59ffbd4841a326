package sender

import (
	"errors"

	"crypto/cipher"

	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/wire"
)

// sessionKeys are one session's keys on the sender's side, owned together
// as wireguard-go's device/keypair.go owns them: the nonce counter and the
// AEAD that seal queue packets, the AEAD that opens acks, and the replay
// window of each receiver's acks (a receiver numbers its acks itself, so
// each has its own window). With no pre-shared key (--insecure) packets go
// in plaintext and acks are parsed, but counters and replay windows work
// the same.
//
// One counter numbers every packet of the session, whatever its
// destination and keys: each destination sees consecutive counters (its
// ack bits and loss figures need them), and no key ever seals two packets
// with one nonce, a handshaken link's keys included (PROTOCOL.md §8.2).
type sessionKeys struct {
	id        uint64
	psk       []byte
	sealer    *wire.Sealer // one-way; nil: plaintext
	opener    cipher.AEAD
	handshake []byte // authenticates hellos and tickets; nil: plaintext
	nonce     uint64 // the counter of the last packet sent; never reused
	replay    map[string]*replay.Filter
	scratch   []byte
}

func newSessionKeys(psk []byte, id uint64) (sessionKeys, error) {
	k := sessionKeys{id: id, psk: psk, replay: map[string]*replay.Filter{}}
	if psk == nil {
		return k, nil
	}
	seal, err := wire.SessionAEAD(psk, id, wire.SenderToReceiver)
	if err != nil {
		return k, err
	}
	if k.opener, err = wire.SessionAEAD(psk, id, wire.ReceiverToSender); err != nil {
		return k, err
	}
	if k.handshake, err = wire.HandshakeKey(psk, id); err != nil {
		return k, err
	}
	k.sealer = &wire.Sealer{AEAD: seal}
	return k, nil
}

// take gives link l the ticket t (which answered packet echo): the keys
// derived from it, and fresh ack state (a restarted receiver counts its
// acks from 1 again).
func (k *sessionKeys) take(l *link, t wire.Ticket, echo, since uint64) error {
	l.sealer, l.opener = nil, nil
	if k.psk != nil {
		seal, err := wire.TicketAEAD(k.psk, k.id, t, wire.SenderToReceiver)
		if err != nil {
			return err
		}
		if l.opener, err = wire.TicketAEAD(k.psk, k.id, t, wire.ReceiverToSender); err != nil {
			return err
		}
		l.sealer = &wire.Sealer{AEAD: seal}
	}
	l.has, l.ticket, l.echo, l.since = true, t, echo, since
	l.acks = replay.Filter{}
	l.newest, l.stamp, l.first = 0, 0, k.nonce+1 // the next packet is its first
	return nil
}

// appendQueue appends q as packet counter, one-way (l nil) or sealed for
// link l's ticket, sealed or plain, to b.
func (k *sessionKeys) appendQueue(b []byte, q *wire.Queue, counter uint64, l *link) ([]byte, error) {
	q.Header = wire.Header{Type: wire.TypeQueue, Session: k.id, Counter: counter}
	sealer := k.sealer
	if l != nil {
		q.Header.Flags, q.Header.Ticket, q.Since = wire.FlagTicket, l.ticket, l.since
		sealer = l.sealer
	}
	if k.psk != nil {
		return q.AppendSealedBy(b, sealer)
	}
	return q.Append(b)
}

// appendHello appends a hello as packet counter.
func (k *sessionKeys) appendHello(b []byte, counter uint64) []byte {
	return wire.AppendHello(b, k.id, counter, k.handshake)
}

var (
	errForeignAck  = errors.New("ack for another session")
	errReplayedAck = errors.New("ack seen before")
	errTooManyAcks = errors.New("ack from one receiver too many")
)

// openAck authenticates (or, plaintext, parses) one ack from the receiver
// at from into a, and accepts it once: a duplicate or replayed ack is
// errReplayedAck. At most maxPeers receivers get a replay window.
//
// An ack of a handshaken link carries its ticket: it opens with that
// link's keys and passes that link's window, so a restarted receiver's
// acks, counted from 1 under its new ticket, are taken at once.
func (k *sessionKeys) openAck(b []byte, h wire.Header, from string, a *wire.Ack, links []*link) (l *link, err error) {
	if h.Flags&wire.FlagTicket != 0 {
		for _, c := range links {
			if c.has && c.ticket == h.Ticket {
				l = c
				break
			}
		}
		if l == nil {
			return nil, errStaleTicket
		}
	}
	opener := k.opener
	if l != nil {
		opener = l.opener
	}
	if k.psk != nil {
		k.scratch, err = wire.OpenAck(b, opener, k.scratch, a)
	} else {
		err = wire.ParseAck(b, a)
	}
	if err != nil {
		return l, err
	}
	if a.Header.Session != k.id {
		return l, errForeignAck
	}
	// In plaintext anyone can forge any ack: a replay window would only
	// let one forged ack with a huge counter shut the real ones out
	// (issue 15). A duplicate changes nothing (handleAck).
	if k.psk != nil {
		f, err := k.window(from, l)
		if err != nil {
			return l, err
		}
		if !f.Accept(a.Header.Counter) {
			return l, errReplayedAck
		}
	}
	if l != nil {
		l.newest, l.stamp = max(l.newest, a.Newest), max(l.stamp, a.Stamp)
	}
	return l, nil
}

// window is the replay window an ack passes: its link's, under the
// link's current ticket; for a one-way session's acks, the window of the
// receiver at from (each numbers its acks itself), at most maxPeers.
func (k *sessionKeys) window(from string, l *link) (*replay.Filter, error) {
	if l != nil {
		return &l.acks, nil
	}
	f := k.replay[from]
	if f == nil {
		if len(k.replay) >= maxPeers {
			return nil, errTooManyAcks
		}
		f = &replay.Filter{}
		k.replay[from] = f
	}
	return f, nil
}
