package receiver

import (
	"crypto/cipher"
	"crypto/ed25519"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/sink"
)

// mode is how a session's packets are keyed (PROTOCOL.md §2, §8).
type mode uint8

const (
	handshaken mode = iota // SEALED: a keypair of a handshake with a paired peer
	oneWay                 // SEALED|ONEWAY: the key file and the session id
	plaintext              // ONEWAY: nothing (--insecure)
)

// session is one sender session: what it holds here, its keys, its
// liveness and its acks.

type session struct {
	id   uint64
	addr string // where its first packet came from, for the log and Status
	// key is its entry in Receiver.bySource: its source address and its
	// machine, once its first packet is applied.
	key  sourceKey
	mode mode
	// A handshaken session's peer: its static key and its name in the
	// peers file ("" for this machine's own identity), and its keypairs
	// (current, previous, next: handshake.Keyring), each bound to this
	// session id. A one-way session's peer is the machine that signs its
	// packets (PROTOCOL.md §8.6).
	peer    [identity.KeyLen]byte
	name    string
	who     string // name and fingerprint, for the log
	ring    handshake.Keyring
	indices []uint32           // the local indices of ring, in Receiver.index
	opened  *handshake.Keypair // the keypair of the last packet opened
	// ackBy seals acks: the keypair the newest queue packet came under.
	ackBy *handshake.Keypair
	// oneWay opens a one-way session's packets, and verify checks their
	// signatures: its peer's key, in Edwards form (PROTOCOL.md §8.6).
	oneWay cipher.AEAD
	verify ed25519.PublicKey
	// window: the counters accepted across its keypairs (PROTOCOL.md
	// §8.5); also what the acks report.
	window replay.Filter
	acks   uint64 // plaintext acks sent: the next one's counter is acks+1
	// inits is the pace of its initiations heard before its first queue
	// packet: its loss counts on from there (liveness.go).
	inits     initPace
	tracker   eventqueue.Tracker
	held      map[keys.Key]bool // keys this session holds in the OS
	counter   uint64            // newest packet counter applied
	clock     uint64            // its sender clock (ms), for the sender's pace
	lastHeard time.Time
	live      bool // false once timed out or ended (keys released)
	replaced  bool // a newer session of the same machine from the same address took over

	pace      pace          // the counters it spends per packet that arrives (liveness.go)
	allowance time.Duration // the silence that ends it (liveness.go); 0: the timeout

	from       net.Addr // where acks go: the newest packet's source
	lastAck    time.Time
	ackPending bool
	wallAt     time.Time  // when an ack last gave our wall clock (WallInterval)
	newestAt   time.Time  // when the newest packet arrived
	packets    int        // packets applied
	locks      keys.Locks // the sender's lock state last matched
	// nowhere counts the key events of this session the injector typed
	// into no application, and why says why the latest reached none
	// (Aimed): its acks carry both (PROTOCOL.md §9).
	nowhere uint64
	why     sink.Unreached
	// want is the lock state the OS should have by this session: locks,
	// toggled by each Caps Lock or Num Lock press typed for it since. A
	// session that comes back after a timeout is matched to want, not to
	// locks, so that a lock key relayed before the silence stays in effect
	// (PROTOCOL.md §3.2).
	want keys.Locks
}

// newSession starts session id from address from in mode m: at its first
// authenticated packet (one-way, plaintext), or at its first accepted
// handshake (handshaken).
func (r *Receiver) newSession(id uint64, from net.Addr, m mode) *session {
	if len(r.sessions) >= maxSessions {
		r.forgetOldest()
	}
	s := &session{id: id, addr: from.String(), mode: m, held: map[keys.Key]bool{}}
	s.tracker.Unbalanced = r.cfg.Unbalanced
	r.sessions[id] = s
	r.stats.Sessions++
	return s
}

// syncIndices files s's keypair indices in the index table after its
// keyring changed (a handshake answered, a keypair confirmed): the
// dropped ones leave it.
func (r *Receiver) syncIndices(s *session) {
	for _, i := range s.indices {
		if r.index[i] == s {
			delete(r.index, i)
		}
	}
	s.indices = s.ring.Indices()
	for _, i := range s.indices {
		r.index[i] = s
	}
}

// indexTaken reports whether a keypair of this receiver has index i: a
// new one gets a free index, so one index names one keypair.
func (r *Receiver) indexTaken(i uint32) bool {
	_, ok := r.index[i]
	return ok
}

// forgetOldest drops the longest-silent session, releasing its keys if it
// still held any.
func (r *Receiver) forgetOldest() {
	var oldest *session
	for _, s := range r.sessions {
		if oldest == nil || s.lastHeard.Before(oldest.lastHeard) {
			oldest = s
		}
	}
	if oldest != nil {
		r.end(oldest, eventqueue.SessionEnd)
		delete(r.sessions, oldest.id)
		oldest.ring = handshake.Keyring{}
		r.syncIndices(oldest)
		if r.bySource[oldest.key] == oldest {
			delete(r.bySource, oldest.key)
		}
	}
}

// Next is when Expire must next be called: the earliest of a live
// session's timeout, a held-back ack's turn (Config.AckInterval after the
// session's last ack), the publishing of a status change and, while a
// handshaken or one-way session is live, the next Config.Recheck
// (trust.go). It is zero when nothing is due, so an idle receiver with no
// live session sleeps until a packet comes. Like kcp's Check: Handle and Expire change it, and the
// caller arms one timer for it.
func (r *Receiver) Next() time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	recheck := false // a handshaken or one-way session is live
	for _, s := range r.sessions {
		if s.live {
			earliest(s.lastHeard.Add(r.allowance(s)))
			recheck = recheck || s.mode != plaintext
		}
		if s.ackPending {
			earliest(s.lastAck.Add(r.cfg.AckInterval))
		}
	}
	// A silent session's keypairs are rechecked before its next datagram
	// is taken (Handle), so only a live one needs the timer.
	if recheck && r.cfg.Recheck != nil {
		earliest(r.recheckAt)
	}
	return next
}

// Expire revokes the sessions of senders no longer paired when
// Config.Recheck says the peers changed (trust.go), ends the live
// sessions silent for longer than the timeout (DESIGN.md invariant 5),
// and sends the acks held back whose turn has come. The ended sessions' state is kept, so a session that comes back
// resumes without typing old events again.
func (r *Receiver) Expire(now time.Time) {
	r.recheck(now)
	for _, s := range r.sortedSessions() {
		if s.ackPending {
			r.ack(s, now, true, false)
		}
		if s.live && now.Sub(s.lastHeard) >= r.allowance(s) {
			// A sender that ends cleanly leaves every key released, then
			// falls silent: that is an end, not a loss. Only silence with
			// keys held is a timeout, and says what it released.
			silence := now.Sub(s.lastHeard).Round(time.Millisecond)
			if n := r.end(s, eventqueue.Timeout); n == 0 {
				r.stats.Ended++
				r.logf("session %016x from %s ended (no key held, silent for %v)", s.id, s.addr, silence)
			} else {
				r.stats.Timeouts++
				r.logf("session %016x from %s timed out after %v of silence: %d held keys released", s.id, s.addr, silence, n)
			}
		}
	}
	r.publish(now)
}

// ReleaseAll releases every key every session holds.
func (r *Receiver) ReleaseAll(cause eventqueue.Cause) {
	for _, s := range r.sortedSessions() {
		r.end(s, cause)
	}
}

// end releases the keys a session holds and marks it not live. It returns
// how many keys it released.
func (r *Receiver) end(s *session, cause eventqueue.Cause) int {
	if !s.live {
		return 0
	}
	r.ds = s.tracker.Release(r.ds[:0], cause)
	n := len(r.ds)
	for _, d := range r.ds {
		r.inject(s, d.Key, false, cause)
	}
	// Keys the tracker no longer knows about but the session holds (none
	// when the tracker and the session agree) are released too.
	for c := range s.held {
		r.inject(s, c, false, cause)
		n++
	}
	s.live = false
	r.changed = true
	return n
}

// sortedSessions lists sessions in a stable order so that releases are
// deterministic.
func (r *Receiver) sortedSessions() []*session {
	out := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// sourceKey names where a session comes from (Receiver.bySource): its
// source address and its machine, the peer whose identity its packets
// authenticate (zero for a plaintext session, which has none). Two
// machines behind one address (a NAT, a tunnel's end) have two keys
// (PROTOCOL.md §7.2).
type sourceKey struct {
	addr addrKey
	peer [identity.KeyLen]byte
}

// addrKey names a source address for sourceKey without a string per
// datagram: a UDP address (what a net.UDPConn reads) by its address and
// port, unmapped as its String writes it, another kind of net.Addr by its
// String.
type addrKey struct {
	ap    netip.AddrPort
	other string
}

func keyOf(a net.Addr) addrKey {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return addrKey{ap: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}
	}
	return addrKey{other: a.String()}
}
