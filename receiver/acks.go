package receiver

import (
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/wire"
)

// ack answers a packet of the session (PROTOCOL.md §9). A packet that
// typed something (applied: new events, or keys the diff released) is
// acked now. Another packet with news is acked now, or when
// Config.AckInterval (MinAckInterval) has passed since the last ack
// (pending; Expire sends it). A packet without (the next counter, nothing
// new applied, at the sender's idle pace) is acked only if the last ack is
// IdleAckInterval old: the sender heard from us recently enough. The ack
// gives our wall clock when the last that gave it is WallInterval old.
//
// Why the applied packet is not held back: its sender re-sends it every
// burst gap (sender.MinBurstGap, 1 ms on a LAN) until this ack comes, so an
// ack held back for the rest of AckInterval lets a re-send go, and draws an
// ack of its own: a key-up typed within a millisecond of its key-down's ack
// (a tap) would cost a burst packet and often a second ack (figures in
// PROTOCOL.md §9). The acks this adds are at most one per event typed, and
// the events come no faster than the sender's packets: the re-sends, which
// carry nothing new, are still coalesced.
func (r *Receiver) ack(s *session, now time.Time, news, applied bool) {
	// An ack says "typed"; with the injector gone nothing is, and the
	// sender must see the receiver fall silent.
	// A one-way session is never acked: nothing goes back (PROTOCOL.md
	// §9): an ack keyed by the key file and the session id alone could
	// repeat a nonce across receivers.
	if r.cfg.NoAcks || s.from == nil || r.gone != nil || s.mode == oneWay {
		return
	}
	if !news && !s.ackPending && !s.lastAck.IsZero() && now.Sub(s.lastAck) < IdleAckInterval {
		return
	}
	if !applied && !s.lastAck.IsZero() && now.Sub(s.lastAck) < r.cfg.AckInterval {
		s.ackPending = true
		return
	}
	s.ackPending = false
	s.lastAck = now
	a := wire.Ack{
		Header:  wire.Header{Type: wire.TypeAck, Flags: wire.FlagOneWay, Session: s.id},
		Newest:  s.window.Newest(),
		Missing: s.window.Missing(),
		Stamp:   s.tracker.Newest(),
		Delay:   uint64(now.Sub(s.newestAt) / time.Microsecond),
		Nowhere: s.nowhere,
		Why:     wire.Why(s.why),
	}
	wall := s.wallAt.IsZero() || now.Sub(s.wallAt) >= WallInterval
	if wall {
		// Unix ms are never 0 after 1970: 0 is free to mean "not given".
		a.Wall = max(uint64(now.UnixMilli()), 1)
	}
	b, err := r.appendAck(s, &a, now)
	if err != nil {
		return
	}
	r.ackBuf = b
	if _, err := r.out.WriteTo(b, s.from); err == nil {
		r.stats.Acks++
		if wall {
			s.wallAt = now
		}
	}
}

// appendAck encodes a for session s into r.ackBuf: a handshaken session's
// sealed by the keypair its newest queue packet came under, the counter
// the receiver's own count of acks under that keypair (from 1: a fresh
// keypair, a fresh count, so no key and nonce ever repeat, across
// restarts too); a plaintext session's in plaintext (flags ONEWAY).
func (r *Receiver) appendAck(s *session, a *wire.Ack, now time.Time) ([]byte, error) {
	if s.mode == plaintext {
		s.acks++
		a.Header.Flags, a.Header.Counter = wire.FlagOneWay, s.acks
		return a.Append(r.ackBuf[:0])
	}
	k := s.ackBy
	if k == nil {
		return nil, handshake.ErrIndex
	}
	a.Header.Flags, a.Header.Counter = wire.FlagSealed, k.Sealed()+1
	body, err := a.AppendBody(r.ackBody[:0])
	if err != nil {
		return nil, err
	}
	r.ackBody = body
	return k.Seal(r.ackBuf[:0], handshake.Header{Type: handshake.TypeAck, Session: s.id, Counter: a.Header.Counter}, body, now)
}
