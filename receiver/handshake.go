package receiver

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/wire"
)

// The answers to initiations (responses, cookie replies) are limited per
// source (handshake.RateLimiter): a sender retries every 100 ms or slower,
// or every 40 ms for at most a second while keys wait for its first
// keypair (PROTOCOL.md §8.2: 25, within the burst of 20 and 20 a
// second), so these never hold one back, and a flood from one address
// gets no more. The table forgets the source heard least
// recently past limiterSources.
const (
	answersPerSecond = 20
	answersBurst     = 20
	limiterSources   = 4096
)

// underLoadAbove: with more initiations than this in the last second the
// receiver is under load, and answers an initiation without a valid mac2 by
// a cookie reply, with no Diffie-Hellman (handshake.Responder). A sender
// handshakes once at start, retries at most 25 times a second (in the first
// second keys wait for its first keypair, then every 100 ms or slower), and
// rekeys every two minutes: a few dozen a second is no real sender load.
// Each answer costs the responder's half of a handshake (handshake's
// BenchmarkRespond, in BENCHMARKS.md), so the answers before cookies take
// over cost a percent or two of a core at most.
const underLoadAbove = 32

// loadMeter counts initiations over the last second in two halves: the
// count of the current half and of the one before.
type loadMeter struct {
	start       time.Time
	prev, count int
}

// note counts an initiation at now and reports whether the receiver is
// under load.
func (l *loadMeter) note(now time.Time) bool {
	const half = 500 * time.Millisecond
	switch d := now.Sub(l.start); {
	case d >= 2*half || d < 0:
		l.start, l.prev, l.count = now, 0, 0
	case d >= half:
		l.start, l.prev, l.count = l.start.Add(half), l.count, 0
	}
	l.count++
	return l.prev+l.count > underLoadAbove
}

// paired is the responder's test of an initiator's static key: a peer of
// the peers file, or this machine's own identity from this machine (its
// own send: send and recv on one machine share it). The own identity
// from any other address is refused, even if the peers file lists it: it
// is a copy of this machine's identity file used elsewhere (PROTOCOL.md
// §8.1). r.initFrom is the source of the initiation being answered.
func (r *Receiver) paired(key [identity.KeyLen]byte) bool {
	r.refused = key
	return r.accepts(key, r.initFrom)
}

// accepts reports whether the machine of key may type here from the
// address from: a peer of the peers file, or this machine's own identity
// from this machine (PROTOCOL.md §8.1). The handshake (paired) and
// one-way packets (§8.6) ask it.
func (r *Receiver) accepts(key [identity.KeyLen]byte, from netip.Addr) bool {
	if r.own(key) {
		return r.local(from)
	}
	if r.cfg.Peer != nil {
		if _, ok := r.cfg.Peer(key); ok {
			return true
		}
	}
	return false
}

// own reports whether key is this machine's own identity.
func (r *Receiver) own(key [identity.KeyLen]byte) bool {
	return r.cfg.Identity != nil && key == r.cfg.Identity.Public()
}

// local reports whether a is an address of this machine: loopback, or
// one Config.Local names.
func (r *Receiver) local(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || r.cfg.Local != nil && a.IsValid() && r.cfg.Local(a)
}

// peerName names a paired sender for the log: its name and fingerprint.
func (r *Receiver) peerName(key [identity.KeyLen]byte) (string, string) {
	fp := identity.Fingerprint(key)
	if r.cfg.Identity != nil && key == r.cfg.Identity.Public() {
		return "", "this machine (" + fp + ")"
	}
	if r.cfg.Peer != nil {
		if name, ok := r.cfg.Peer(key); ok {
			return name, name + " (" + fp + ")"
		}
	}
	return "", fp
}

func addrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// initiation answers a sender's handshake (PROTOCOL.md §8.3): rate-limited
// per source; under load, a cookie reply to one without a valid mac2;
// else, from a paired peer, a response, and the new keypair filed as the
// session's next (it becomes current when a packet under it opens). No
// answer is larger than the initiation.
func (r *Receiver) initiation(m handshake.Initiation, from net.Addr, now time.Time) {
	if r.responder == nil {
		r.reject(errors.New("a handshake to a receiver run --insecure (plaintext only): run both ends with the same security"), from, now)
		return
	}
	underLoad := r.load.note(now)
	src := addrPort(from)
	if !r.limiter.Allow(src.Addr(), now) {
		r.stats.Flood++
		return
	}
	r.initFrom = src.Addr()
	ans, err := r.responder.ConsumeInitiation(r.ackBuf[:0], m, src, underLoad, now)
	if err != nil {
		r.initiationRefused(err, from, now)
		return
	}
	if ans.Cookie {
		r.stats.Cookies++
		r.write(ans.Packet, from)
		return
	}
	k := ans.Keypair
	s := r.sessions[k.Session]
	if s != nil && (s.mode != handshaken || s.peer != k.Peer) {
		// The keypair binds the session id to its peer: another peer (or
		// a one-way sender) owns this id.
		r.stats.Refused++
		r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("a handshake for session %016x, which another sender holds: refused", k.Session))
		return
	}
	if s == nil {
		s = r.newSession(k.Session, from, handshaken)
		s.peer = k.Peer
		s.name, s.who = r.peerName(k.Peer)
	}
	if s.counter == 0 {
		s.inits.heard(m.Header.Counter)
	}
	s.ring.Begin(k)
	r.syncIndices(s)
	r.ackBuf = ans.Packet
	if r.write(ans.Packet, from) {
		r.stats.Responses++
	}
}

// initiationRefused counts an initiation the responder refused, by
// reason; an unpaired sender is logged with its fingerprint and the fix,
// at most once a minute.
func (r *Receiver) initiationRefused(err error, from net.Addr, now time.Time) {
	switch {
	case errors.Is(err, handshake.ErrMAC1):
		r.stats.MAC1++
	case errors.Is(err, handshake.ErrUnpaired):
		r.stats.Unpaired++
		if r.unpaired.due(now) {
			if r.own(r.refused) {
				r.logf("refused a handshake from %v: its identity %s is this machine's own, which is accepted from this machine only: a copy of this machine's identity file is used there (give that machine an identity of its own, and pair it); %d refused since last said", from, identity.Fingerprint(r.refused), r.unpaired.take(now))
			} else {
				r.logf("refused a handshake from %v: its identity %s is not paired here (keyrelay peers add NAME KEY, or keyrelay pair); %d refused since last said", from, identity.Fingerprint(r.refused), r.unpaired.take(now))
			}
		}
		return
	case errors.Is(err, handshake.ErrReplayedInitiation):
		r.stats.ReplayedInit++
	case errors.Is(err, handshake.ErrFlood):
		r.stats.Flood++
	case errors.Is(err, handshake.ErrHandshake):
		r.stats.HandshakeBad++
		err = fmt.Errorf("%w: if this is your sender, both ends need the same --key-file, or none", err)
	default:
		r.stats.Malformed++
	}
	r.rejects.note(r.cfg.Logf, now, from, err)
}

// write sends an answer; it reports whether it went.
func (r *Receiver) write(b []byte, to net.Addr) bool {
	_, err := r.out.WriteTo(b, to)
	return err == nil
}

var errUnknownIndex = errors.New("sealed for a keypair this receiver does not have (it restarted since, or a replay): dropped")

// openTransport opens a handshaken queue packet with the keypair its
// index names into r.pkt, and returns its session and keypair; nil when
// it does not open (counted). An unknown index is dropped and not
// answered: the sender notices the silence and handshakes again.
func (r *Receiver) openTransport(t handshake.Transport, from net.Addr, now time.Time) (*session, *handshake.Keypair) {
	if r.cfg.Insecure {
		r.reject(wire.ErrSealed, from, now)
		return nil, nil
	}
	s := r.index[t.Index]
	if s == nil {
		r.stats.UnknownIdx++
		r.rejects.note(r.cfg.Logf, now, from, errUnknownIndex)
		return nil, nil
	}
	body, k, err := s.ring.Open(r.scratch[:0], t, now)
	switch {
	case errors.Is(err, handshake.ErrReplay):
		r.stats.Replayed++
		return nil, nil
	case errors.Is(err, handshake.ErrIndex):
		r.stats.UnknownIdx++
		r.rejects.note(r.cfg.Logf, now, from, errUnknownIndex)
		return nil, nil
	case err != nil:
		r.reject(err, from, now)
		return nil, nil
	}
	if k != s.opened {
		s.opened = k
		r.syncIndices(s) // a packet under next confirmed it
	}
	// The compact header carries no session id: the packet's session is
	// its keypair's (PROTOCOL.md §2), s's.
	h := t.Header
	h.Session = k.Session
	if err := wire.ParseQueueBody(h, body, &r.pkt); err != nil {
		r.reject(err, from, now)
		return nil, nil
	}
	return s, k
}

var errDowngrade = errors.New("a one-way packet for a handshaken session (a replay?): refused")

// openPlain parses a plaintext queue packet (--insecure only) into r.pkt
// and returns its session, made now if new.
func (r *Receiver) openPlain(b []byte, h wire.Header, from net.Addr, now time.Time) *session {
	if !r.cfg.Insecure {
		r.reject(wire.ErrNotSealed, from, now)
		return nil
	}
	if err := wire.ParseQueueBody(h, b[wire.HeaderLen:], &r.pkt); err != nil {
		r.reject(err, from, now)
		return nil
	}
	s := r.sessions[h.Session]
	if s == nil {
		s = r.newSession(h.Session, from, plaintext)
		r.logf("new session %016x from %s (plaintext)", s.id, from)
	}
	return s
}

var (
	errOtherSigner  = errors.New("a one-way packet signed by another machine than the one its session's packets were: refused")
	errBadSignature = errors.New("a one-way packet whose signature does not hold (forged by a holder of the key file, or damaged): refused")
)

// openOneWay opens a one-way packet (recv --one-way only) into r.pkt,
// checks who signed it (a machine paired here, the session's own), its
// wall clock and its signature, and returns its session, made now if new
// (PROTOCOL.md §8.6, §8.8 step 4). The key file's key opens it; the
// signature alone says which machine sent it: a holder of the key file
// that is not paired types nothing.
func (r *Receiver) openOneWay(b []byte, h wire.Header, from net.Addr, now time.Time) *session {
	if r.cfg.Insecure {
		r.reject(wire.ErrSealed, from, now)
		return nil
	}
	if !r.cfg.OneWay {
		r.stats.Refused++
		r.refusals.note(r.cfg.Logf, now, from)
		return nil
	}
	s := r.sessions[h.Session]
	if s != nil && s.mode != oneWay {
		r.stats.Refused++
		r.rejects.note(r.cfg.Logf, now, from, errDowngrade)
		return nil
	}
	a := r.lastOneWay
	if s != nil {
		a = s.oneWay
	} else if r.lastOneWayID != h.Session || a == nil {
		var err error
		if a, err = wire.OneWayAEAD(r.cfg.PSK, h.Session); err != nil {
			r.reject(err, from, now)
			return nil
		}
		r.lastOneWay, r.lastOneWayID = a, h.Session
	}
	var err error
	if r.scratch, err = r.opener.OpenOneWay(b, h, a, r.scratch, &r.pkt, &r.signed); err != nil {
		r.reject(err, from, now)
		return nil
	}
	// Who signed it, before the signature is checked (a lookup, no
	// crypto): its session's machine, or for a new session a machine
	// paired here.
	signer := r.signed.Signer
	switch {
	case s != nil && signer != s.peer:
		r.stats.Forged++
		r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("session %016x: %w", h.Session, errOtherSigner))
		return nil
	case s == nil && !r.accepts(signer, addrPort(from).Addr()):
		r.stats.UnpairedOneWay++
		if r.unpairedOneWay.due(now) {
			if r.own(signer) {
				r.logf("refused one-way packets from %v: signed by the identity %s, this machine's own, which is accepted from this machine only: a copy of this machine's identity file is used there (give that machine an identity of its own, and pair it); %d refused since last said", from, identity.Fingerprint(signer), r.unpairedOneWay.take(now))
			} else {
				r.logf("refused one-way packets from %v: signed by the identity %s, which is not paired here: a key file alone types nothing (keyrelay peers add NAME KEY, or keyrelay pair, for that machine; PROTOCOL.md §8.6); %d refused since last said", from, identity.Fingerprint(signer), r.unpairedOneWay.take(now))
			}
		}
		return nil
	case s != nil && s.window.Seen(h.Counter):
		r.stats.Replayed++
		return nil
	}
	// A recorded old one-way session replayed to a receiver that has
	// forgotten it carries old wall-clock times (signed).
	skew := time.Duration(int64(r.pkt.Wall)-now.UnixMilli()) * time.Millisecond
	if skew > r.cfg.MaxSkew || skew < -r.cfg.MaxSkew {
		r.stats.Skewed++
		r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("sender clock differs from ours by %v, more than --max-skew %v: a replay, or clocks out of sync (use NTP on both machines, or raise --max-skew; a sender with feedback needs no clock: check it can hear this receiver)", skew.Round(time.Millisecond), r.cfg.MaxSkew))
		return nil
	}
	key := r.signingKey(s, signer)
	if key == nil || !identity.Verify(key, r.signed.Message, r.signed.Signature[:]) {
		r.stats.Forged++
		r.rejects.note(r.cfg.Logf, now, from, errBadSignature)
		return nil
	}
	if s == nil {
		s = r.newSession(h.Session, from, oneWay)
		s.oneWay, s.peer, s.verify = a, signer, key
		s.name, s.who = r.peerName(signer)
		r.logf("new session %016x from %s (one-way): %s", s.id, from, s.who)
	}
	return s
}

// signingKey is the key a one-way packet signed by signer verifies under
// (identity.EdwardsPublic): its session's, or, for a packet that starts
// one, the last one worked out (a new session's first packets cost one
// conversion, not one each). Nil for a key that has none.
func (r *Receiver) signingKey(s *session, signer [identity.KeyLen]byte) ed25519.PublicKey {
	if s != nil {
		return s.verify
	}
	if r.lastSignerKey == nil || r.lastSigner != signer {
		k, err := identity.EdwardsPublic(signer)
		if err != nil {
			return nil
		}
		r.lastSigner, r.lastSignerKey = signer, k
	}
	return r.lastSignerKey
}
