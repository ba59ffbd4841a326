package receiver

import (
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
// receiver is under load, and answers an initiation without a valid mac2
// by a cookie reply, with no Diffie-Hellman (handshake.Responder). A
// sender handshakes once at start, retries at most 25 times a second (in
// the first second keys wait for its first keypair, then every 100 ms or
// slower), and rekeys every two minutes: a few dozen a second is no real
// sender load.
// Measured: the responder's half of a handshake (handshake's
// BenchmarkRespond) took 470 µs on a shared 2-core machine, so 32 a
// second cost at most 1.5 % of a core before cookies take over.
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
	r.refused, r.refusedOwn = key, false
	if r.cfg.Identity != nil && key == r.cfg.Identity.Public() {
		if r.local(r.initFrom) {
			return true
		}
		r.refusedOwn = true
		return false
	}
	if r.cfg.Peer != nil {
		if _, ok := r.cfg.Peer(key); ok {
			return true
		}
	}
	return false
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
			if r.refusedOwn {
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

// openOneWay opens a one-way packet (recv --one-way only) into r.pkt,
// checks its wall clock, and returns its session, made now if new.
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
	if r.scratch, err = r.opener.OpenOneWay(b, h, a, r.scratch, &r.pkt); err != nil {
		r.reject(err, from, now)
		return nil
	}
	// A recorded old one-way session replayed to a receiver that has
	// forgotten it carries old wall-clock times (authenticated).
	skew := time.Duration(int64(r.pkt.Wall)-now.UnixMilli()) * time.Millisecond
	if skew > r.cfg.MaxSkew || skew < -r.cfg.MaxSkew {
		r.stats.Skewed++
		r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("sender clock differs from ours by %v, more than --max-skew %v: a replay, or clocks out of sync (use NTP on both machines, or raise --max-skew; a sender with feedback needs no clock: check it can hear this receiver)", skew.Round(time.Millisecond), r.cfg.MaxSkew))
		return nil
	}
	if s == nil {
		s = r.newSession(h.Session, from, oneWay)
		s.oneWay = a
		r.logf("new session %016x from %s (one-way)", s.id, from)
	}
	return s
}
