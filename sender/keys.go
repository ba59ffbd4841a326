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
type sessionKeys struct {
	id      uint64
	sealer  *wire.Sealer // nil: plaintext
	opener  cipher.AEAD
	nonce   uint64 // the counter of the last packet sealed; never reused
	replay  map[string]*replay.Filter
	scratch []byte
}

func newSessionKeys(psk []byte, id uint64) (sessionKeys, error) {
	k := sessionKeys{id: id, replay: map[string]*replay.Filter{}}
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
	k.sealer = &wire.Sealer{AEAD: seal}
	return k, nil
}

// appendQueue numbers q with the next counter and appends it, sealed or
// plain, to b. The counter is used up only when the packet encodes.
func (k *sessionKeys) appendQueue(b []byte, q *wire.Queue) ([]byte, error) {
	q.Header = wire.Header{Type: wire.TypeQueue, Session: k.id, Counter: k.nonce + 1}
	var err error
	if k.sealer != nil {
		b, err = q.AppendSealedBy(b, k.sealer)
	} else {
		b, err = q.Append(b)
	}
	if err == nil {
		k.nonce++
	}
	return b, err
}

var (
	errForeignAck  = errors.New("ack for another session")
	errReplayedAck = errors.New("ack seen before")
	errTooManyAcks = errors.New("ack from one receiver too many")
)

// openAck authenticates (or, plaintext, parses) one ack from the receiver
// at from into a, and accepts it once: a duplicate or replayed ack is
// errReplayedAck. At most maxPeers receivers get a replay window.
func (k *sessionKeys) openAck(b []byte, from string, a *wire.Ack) error {
	var err error
	if k.opener != nil {
		k.scratch, err = wire.OpenAck(b, k.opener, k.scratch, a)
	} else {
		err = wire.ParseAck(b, a)
	}
	if err != nil {
		return err
	}
	if a.Header.Session != k.id {
		return errForeignAck
	}
	f := k.replay[from]
	if f == nil {
		if len(k.replay) >= maxPeers {
			return errTooManyAcks
		}
		f = &replay.Filter{}
		k.replay[from] = f
	}
	if !f.Accept(a.Header.Counter) {
		return errReplayedAck
	}
	return nil
}
