package sender

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/wire"
)

// Dest is one destination of a Core's packets.
type Dest struct {
	// Addr is the destination as the log and PeerStatus name it
	// (host:port); Sender.New fills it from UDP when empty.
	Addr string
	// UDP is where Sender writes its packets (unused by Core).
	UDP net.Addr
	// OneWay: no handshake (a broadcast or multicast address, or no
	// feedback; send --one-way): packets are sealed with the one-way key
	// derived from the key file, never acked, and a receiver checks their
	// wall clock (PROTOCOL.md §8.4).
	OneWay bool
	// PeerKey is the receiver's static public key (the peers file, or this
	// machine's own on loopback): required for a handshaken destination.
	PeerKey [identity.KeyLen]byte
}

// Backoff of initiations while a handshake is unanswered: the first retry
// after initialBackoff, doubling to maxBackoff, and never faster than the
// responder accepts them (handshake.InitiationInterval).
const (
	initialBackoff = 100 * time.Millisecond
	maxBackoff     = time.Second
)

// Retries while key events wait for a destination's keypair, its first or
// the one a restarted receiver must answer (PROTOCOL.md §7.1, §8.2, §8.4):
// every waitingGap, for the first waitingFor they wait, instead of the
// backoff. Before its first keypair nothing typed reaches the receiver, so
// each retry the backoff skips is a key's latency: at 50 % loss both ways a
// round trip succeeds 1 time in 4, and with the backoff alone (100 ms
// doubling to 1 s) keys typed in the first seconds wait for seconds and some
// are given up after --outage, while 25 tries in a second all fail in about
// 1 start in 1,300 (0.75^25; figures in PROTOCOL.md §8.2).
//
// waitingGap is twice the least gap the responder accepts
// (handshake.InitiationInterval), so that jitter does not bring two
// retries closer than that at the receiver, and 25 a second stay within
// its per-source answers (20 at once, 20 a second) and below what it
// takes for load (receiver.underLoadAbove, 32 a second), so its cookie
// defence keeps its meaning. The initiator keeps its last
// handshake.MaxNext initiations pending, so a round trip up to MaxNext
// gaps (160 ms) is answered in time; a longer one by the backoff after
// the window. waitingFor is SilentAfter: a receiver that answered none of
// a second's retries is taken for absent, as a silent one is (burst.go),
// and gets the backoff, a datagram a second at most.
const (
	waitingGap = 2 * handshake.InitiationInterval
	waitingFor = SilentAfter
)

// idleAckInterval is how often a receiver acks an idle sender
// (PROTOCOL.md §9; receiver.IdleAckInterval): the silence that shows a
// restarted receiver must be longer.
const idleAckInterval = time.Second

// link is the session's handshaken link with one destination (PROTOCOL.md
// §8.3): initiations until a response gives it a keypair, then packets
// sealed by it. Each link has its own keys, so no two destinations ever
// share a key and nonce.
type link struct {
	Dest
	init *handshake.Initiator // nil: one-way or plaintext
	// current seals; previous still opens acks of packets sent before the
	// switch.
	current, previous *handshake.Keypair
	initAt            time.Time     // the next initiation may go then
	backoff           time.Duration // the wait after the next initiation
	since             uint64        // what the current keypair's packets carry as Since
	prevSince         uint64        // and the previous one's (ledger.go)
	first             uint64        // the counter of the first packet under current
	acked             bool          // an ack came under current
	waiting           bool          // wanted a handshake at the last packet: Next counts initAt
	ackedAt           time.Time     // when the newest ack under current came, or current was taken
	stamp             uint64        // newest event stamp acked on this link (any keypair)
	base              uint64        // newest event stamp acked under current: what its packets may be abridged to (PROTOCOL.md §3.3)
	lastInit          time.Time     // the last initiation went then
	// Keys typed have waited for a keypair since waitFrom (zero: none
	// yet, or since the last was taken); retries go every waitingGap up
	// to waitingFor after it, and did at the last packet while hurried
	// (Next counts it).
	waitFrom time.Time
	hurried  bool
	// sent are its last initiations, and late the longest round trip a
	// response to one no longer pending showed (hurriedGap).
	sent [sentInits]sentInit
	late time.Duration
	// why says what the handshake is waiting on, for the user.
	why  string
	pace pace // pacing while its receiver is silent (burst.go)
	// peer is c.peers[Addr] once it is there (peerOf): the core's
	// deadlines ask for it at every packet, and a peer, once heard, stays.
	peer *peer
	// nowhere: what its receiver's acks say it typed into no application
	// (PROTOCOL.md §9; nowhere.go).
	nowhere    nowhere
	handshakes int // keypairs taken
	// unanswered: no response within PeerTimeout, and the log said so.
	// No key goes to it (PROTOCOL.md §8.4: a unicast destination never
	// falls back to one-way).
	unanswered bool
}

// sentInits is how many of a link's last initiations it remembers, to
// tell a response that came too late for its handshake (hurriedGap).
const sentInits = 16

// sentInit is an initiation a link sent: its counter and sender index
// (which a response echoes), and when.
type sentInit struct {
	counter uint64
	index   uint32
	at      time.Time
}

// Why a handshake has no keypair yet (Core.Unanswered).
const (
	whyNoAnswer = "no answer"
	whyCookie   = "cookie (receiver under load)"
	whyAuth     = "a response that does not authenticate (another key file, or another receiver)"
)

var errNoLink = errors.New("answers no handshake of this session")

// newLink makes the link of destination d: with an initiator when it is
// handshaken.
func (c *Core) newLink(d Dest) *link {
	l := &link{Dest: d, backoff: initialBackoff, why: whyNoAnswer}
	if c.cfg.Insecure || d.OneWay {
		return l
	}
	var psk [wire.KeyLen]byte
	copy(psk[:], c.cfg.PSK)
	priv := [identity.KeyLen]byte(c.cfg.Identity.Private().Bytes())
	l.init = handshake.NewInitiator(handshake.InitiatorConfig{
		Private: priv, Peer: d.PeerKey, PSK: psk, Random: c.cfg.Random,
		IndexTaken: c.indexTaken,
	})
	return l
}

// indexTaken reports whether a keypair this sender holds has index i, so
// a new handshake's index never names one still in use.
func (c *Core) indexTaken(i uint32) bool {
	for _, l := range c.links {
		for _, k := range [...]*handshake.Keypair{l.current, l.previous} {
			if k != nil && k.Local == i {
				return true
			}
		}
	}
	return false
}

// sealer is the keypair l seals with now: nil before the first response,
// or once it expired (its packets then wait: PROTOCOL.md §8.3).
func (l *link) sealer(now time.Time) *handshake.Keypair {
	if l.current == nil || l.current.Expired(now) {
		return nil
	}
	return l.current
}

// wantsHandshake reports whether l needs a new keypair: it has none (or
// an expired one), the current one is due for a rekey, or the receiver
// has not acked it for restartAfter (since it was taken, or since its
// last ack): a restarted receiver knows no index of ours, drops our
// packets, and only a new handshake reaches it. (A receiver that is only
// silent, in an outage, costs an initiation a second meanwhile.)
func (c *Core) wantsHandshake(l *link, now time.Time) bool {
	k := l.sealer(now)
	if k == nil || k.NeedsRekey(now) {
		return true
	}
	return c.cfg.Feedback && now.Sub(l.ackedAt) >= c.restartAfter()
}

// restartAfter is the silence of an acked keypair after which the sender
// handshakes again: PeerTimeout/2, but longer than the idle ack interval
// (a live idle receiver acks once a second; the sender asks for an ack at
// 60 % of PeerTimeout: Core.quiet).
func (c *Core) restartAfter() time.Duration {
	return max(c.cfg.PeerTimeout/2, idleAckInterval*3/2)
}

// initiate sends l (destination i) an initiation as packet counter when
// it wants a handshake and its backoff allows, or, while keys typed wait
// for its first keypair, waitingGap after the last.
func (c *Core) initiate(l *link, i int, counter uint64, now time.Time) {
	l.waiting = l.init != nil && c.wantsHandshake(l, now)
	if !l.waiting {
		return
	}
	keysWait := c.keysWaitFor(l, now)
	if keysWait && l.waitFrom.IsZero() {
		l.waitFrom = now
	}
	l.hurried = keysWait && now.Sub(l.waitFrom) < waitingFor
	if now.Before(l.nextInit()) {
		return
	}
	b, err := l.init.Initiate(c.hsBuf[:0], c.cfg.Session, counter, now)
	if err != nil {
		c.stats.SendErrors++
		c.logf("unable to make a handshake initiation: %v", err)
		return
	}
	c.hsBuf = b
	c.cfg.Output(b, i)
	c.stats.Initiations++
	if m, err := handshake.ParseInitiation(b); err == nil {
		copy(l.sent[1:], l.sent[:])
		l.sent[0] = sentInit{counter, m.Sender, now}
	}
	l.lastInit = now
	l.initAt = now.Add(max(l.backoff, handshake.InitiationInterval))
	if !l.hurried {
		// A hurried retry leaves the backoff where it was: it resumes
		// from there once the window is over.
		l.backoff = min(2*l.backoff, maxBackoff)
	}
}

// nextInit is when l's next initiation may go: its backoff's time, or
// waitingGap after the last while keys wait for its first keypair
// (within waitingFor of their first wait).
func (l *link) nextInit() time.Time {
	if l.hurried {
		if at := l.lastInit.Add(l.hurriedGap()); at.Before(l.waitFrom.Add(waitingFor)) {
			return earliest(l.initAt, at)
		}
	}
	return l.initAt
}

// hurriedGap is the gap between hurried retries: waitingGap, or longer
// once a response came too late for its handshake (the initiator keeps
// only its last handshake.MaxNext pending): so that MaxNext-1 retries
// outlast that round trip and a quarter more, and the next response
// finds its handshake pending. A response carries the session id and the
// initiation's random sender index, so only someone on the path, who
// could drop the responses as well, can make the retries slower, and no
// slower than the backoff's longest gap.
func (l *link) hurriedGap() time.Duration {
	return min(max(waitingGap, l.late*5/4/(handshake.MaxNext-1)), maxBackoff)
}

// lateResponse notes a response that answered no pending handshake: if
// it answers an initiation l sent and its initiator forgot (retries came
// faster than the round trip), its round trip widens l's hurried retries.
func (l *link) lateResponse(h handshake.Header, index uint32, now time.Time) {
	for _, s := range l.sent {
		if s.counter == h.Counter && s.index == index && !s.at.IsZero() {
			l.late = max(l.late, now.Sub(s.at))
			return
		}
	}
}

// keysWaitFor reports whether key events wait for l's next keypair:
// before its first, any event typed (typed); after it, when its receiver
// stopped acking (restartAfter: it may have restarted, and only a new
// handshake reaches it), an event it has not acknowledged, in the queue or
// the backlog. A rekey of a receiver that acks waits for nothing: the
// packets go on under the current keypair.
func (c *Core) keysWaitFor(l *link, now time.Time) bool {
	if l.sealer(now) == nil {
		return c.typed()
	}
	if !c.cfg.Feedback || now.Sub(l.ackedAt) < c.restartAfter() {
		return false
	}
	return len(c.backlog) > 0 || c.queue.Events()[0].Stamp > l.stamp
}

// typed reports whether a key event was typed and waits for a receiver
// without a keypair: the queue holds an event, or the backlog does.
func (c *Core) typed() bool {
	if len(c.backlog) > 0 {
		return true
	}
	evs := c.queue.Events()
	return len(evs) > 0 && evs[0].Kind != eventqueue.None
}

// nextInitiation is when a link waiting for a keypair may next send an
// initiation (zero: none waits). Tick sends the packet then.
func (c *Core) nextInitiation() time.Time {
	var next time.Time
	for _, l := range c.links {
		if l.waiting {
			next = earliest(next, l.nextInit())
		}
	}
	return next
}

// handleResponse completes the handshake of the link the response
// answers. A response another receiver made (another identity) does not
// authenticate: nothing changes (its address is trusted for nothing).
func (c *Core) handleResponse(m handshake.Response, now time.Time) error {
	for _, l := range c.links {
		if l.init == nil {
			continue
		}
		k, err := l.init.ConsumeResponse(m, now)
		if errors.Is(err, handshake.ErrNoHandshake) {
			continue
		}
		if err != nil {
			if l.sealer(now) == nil {
				l.why = whyAuth
			}
			return err
		}
		c.take(l, k, now)
		return nil
	}
	for _, l := range c.links {
		if l.init != nil && l.current == nil && m.Header.Session == c.keys.id {
			l.lateResponse(m.Header, m.Sender, now)
		}
	}
	return fmt.Errorf("response: %w", errNoLink)
}

// handleCookieReply takes the cookie of a receiver under load: the next
// initiation carries mac2.
func (c *Core) handleCookieReply(m handshake.CookieReply, now time.Time) error {
	for _, l := range c.links {
		if l.init == nil {
			continue
		}
		err := l.init.ConsumeCookieReply(m, now)
		if errors.Is(err, handshake.ErrNoHandshake) {
			continue
		}
		if err != nil {
			return err
		}
		c.stats.Cookies++
		if l.sealer(now) == nil {
			l.why = whyCookie
		}
		return nil
	}
	return fmt.Errorf("cookie reply: %w", errNoLink)
}

// take makes k link l's keypair: it seals from the next packet on, with
// fresh ack state. Since is the newest stamp the receiver acked under the
// old keypair: a restarted receiver (a new process) types what the old
// one did not confirm, and presses the keys held then.
func (c *Core) take(l *link, k *handshake.Keypair, now time.Time) {
	restarted := l.current != nil && l.acked && now.Sub(l.ackedAt) >= c.restartAfter()
	l.previous, l.current = l.current, k
	l.handshakes++
	l.prevSince, l.since = l.since, l.stamp
	l.first = c.keys.nonce + 1
	// A new keypair may be a new receiver (a restart), which has no
	// queue an abridged packet could build on: whole queues until it acks
	// one (PROTOCOL.md §3.3).
	l.acked, l.ackedAt, l.base = false, now, 0
	l.backoff, l.initAt, l.why, l.waiting = initialBackoff, time.Time{}, "", false
	l.hurried, l.waitFrom = false, time.Time{}
	c.answered = now
	if c.phase == lingering && c.maxEnd.Before(now.Add(c.cfg.PeerTimeout)) {
		// Answered near the end's deadline: the final state (and the keys
		// that waited for this keypair) still get PeerTimeout to be acked,
		// within a signal's bound (Stop).
		c.maxEnd = now.Add(c.cfg.PeerTimeout)
		if c.interrupted && c.endBy.Before(c.maxEnd) {
			c.maxEnd = c.endBy
		}
	}
	c.stats.Handshakes++
	switch {
	case restarted:
		c.logf("receiver %s answered a new handshake (it restarted?): typing goes on", l.Addr)
	case l.unanswered:
		c.logf("receiver %s answered the handshake: the keys typed meanwhile go to it now", l.Addr)
	}
	l.unanswered = false
	l.answered()
	// The queue goes to it at once, as after an event: keys typed while
	// the handshake ran are in it.
	c.send(now)
	c.startBurst(now)
}

// awaitingHandshake reports whether a handshaken destination has no
// keypair yet: no key has gone to it, and the keys typed meanwhile wait
// for it (inGrace).
func (c *Core) awaitingHandshake() bool {
	for _, l := range c.links {
		if l.init != nil && l.current == nil {
			return true
		}
	}
	return false
}

// noteUnanswered says, once per destination, that one has not answered a
// handshake within PeerTimeout of the start. Its packets stay
// initiations: a sender that fell back to one-way here would let whoever
// drops the responses downgrade the session to one a recording can be
// replayed from (PROTOCOL.md §8.4). Keys typed meanwhile wait, within
// Outage (inGrace), and go out once a response comes.
func (c *Core) noteUnanswered(now time.Time) {
	// During Wait no key is typed, and a destination that does not
	// answer it is Run's error (NoAnswerError): the PeerTimeout counts
	// from its end.
	if now.Sub(c.start) < c.cfg.PeerTimeout+c.cfg.Wait {
		return
	}
	for _, l := range c.links {
		if l.init != nil && l.current == nil && !l.unanswered {
			l.unanswered = true
			c.logf("no handshake with %s within %v (%s): no key goes to it until it answers (initiations go on; a unicast destination never gets one-way packets)", l.Addr, c.cfg.PeerTimeout, l.why)
		}
	}
}

// LinkState is a handshaken destination that has no keypair, and why.
type LinkState struct {
	Addr string
	// Handshake says what it waits on: "no answer", "cookie (receiver
	// under load)", or a response that does not authenticate.
	Handshake string
}

// Unanswered appends to dst the destinations whose handshake has not been
// answered: no keypair yet.
func (c *Core) Unanswered(dst []LinkState) []LinkState {
	for _, l := range c.links {
		if l.init != nil && l.current == nil {
			dst = append(dst, LinkState{Addr: l.Addr, Handshake: l.why})
		}
	}
	return dst
}

// Unheard appends to dst the destinations that can answer and have not:
// no handshake response (handshaken) and no ack (--insecure). A one-way
// destination (broadcast, multicast, no feedback) never answers, and is
// not listed (send --wait waits for the others).
func (c *Core) Unheard(dst []string) []string {
	for _, l := range c.links {
		if l.OneWay || !c.cfg.Feedback || l.current != nil || c.peerOf(l) != nil {
			continue
		}
		dst = append(dst, l.Addr)
	}
	return dst
}
