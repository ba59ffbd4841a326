package sender

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/wire"
)

// Core is the sender's protocol, with no clock, goroutine, lock or socket of
// its own: it is told key events, acks and the time, hands each packet to
// Output, and says when it next needs to be called (Next). Sender.Run is the
// thin loop around it that owns the sockets, the source and the one timer;
// tests drive it with explicit times.
//
// Its rules, each in one place: the balanced queue (the seed's, eventqueue),
// the resend every Interval, redundant bursts after an event (burst.go),
// lossless typing (backlog.go), the receivers it hears and which of them
// are live (peers.go), and the end of a session: backlog flushed, every key
// released, the final state resent until acked or Linger (+ PeerTimeout,
// or + Outage while a receiver heard before is silent) has passed.
type Core struct {
	cfg   CoreConfig
	keys  sessionKeys
	queue *eventqueue.Queue
	pkt   wire.Queue
	buf   []byte // a handshaken link's packet
	body  []byte // its plaintext body, before its keypair seals it
	// The one-way (or plaintext) packet of a send, encoded once; an
	// initiation.
	oneWayBuf, hsBuf []byte
	wall             uint64 // the packet's wall clock (one-way, plaintext)
	locks            keys.Locks
	start            time.Time
	answered         time.Time // the newest keypair was taken then (inGrace)
	stats            Stats

	peers   map[string]*peer
	links   []*link
	foreign map[string]versionNote // receivers of another protocol version (version.go)
	sent    [sentRing]sentRecord
	ack     wire.Ack
	ackedBy *handshake.Keypair // the keypair that opened ack (openAck); nil in plaintext
	backlog []keyEvent
	burst   burst
	ledger  ledger // delivery accounting (ledger.go)

	phase       phase
	tickAt      time.Time // the next regular resend
	stuckAt     time.Time // flushing: the backlog has not shrunk since Outage before this
	minEnd      time.Time // lingering: Linger is over then
	lingered    bool      // lingering: minEnd has passed
	maxEnd      time.Time // lingering: given up then
	final       uint64    // the counter of the packet that carried the final state
	interrupted bool      // Stop(Interrupted): the end does not wait out an outage
	endBy       time.Time // interrupted: the session is over by then, whatever the acks
	silenced    []string  // StopWhenSilent: the receivers silent past Outage that ended the session
	released    bool      // flushing: the end's key-ups are in the queue or the backlog
	held        []keys.Key
}

// CoreConfig configures a Core. Zero durations take the defaults of Config.
type CoreConfig struct {
	QueueLen    int
	Interval    time.Duration
	Linger      time.Duration
	PeerTimeout time.Duration
	// Outage: key events wait (lossless typing) for a receiver unheard up
	// to this long (DefaultOutage if 0; never less than PeerTimeout).
	Outage  time.Duration
	Session uint64
	// Identity is this machine's static key: required for a handshaken
	// destination (PROTOCOL.md §8.3).
	Identity *identity.Identity
	// PSK is the key file's key: the second factor of handshaken links
	// (Noise psk2: both ends need the same one, or none), and the key of
	// one-way destinations, which require it.
	PSK []byte
	// Insecure sends every packet in plaintext (send --insecure): no
	// handshake, no key; acks come in plaintext too.
	Insecure bool
	// Random supplies ephemeral keys and indices (nil: crypto/rand).
	Random io.Reader
	// Feedback: acks are expected (Ack will be called). Without, the
	// sender is one-way: no bursts, no lossless typing, no grace, and no
	// handshake: its destinations must be one-way (or the sender
	// --insecure).
	Feedback bool
	// Dests are the destinations; Output's to indexes them. None: one
	// one-way destination.
	Dests []Dest
	// Output sends packet b to destination to. b is only valid during the
	// call.
	Output func(b []byte, to int)
	// Logf reports what the user should know (nil: silent).
	Logf func(format string, args ...any)
	// Debug lets log lines name keys (send --debug). Without, they give
	// counts only: the keys of a password typed would be in the log.
	Debug bool
	// Wait is Config.Wait: the source does not play before every
	// destination answered, up to this long (Sender.Run).
	Wait time.Duration
	// StopWhenSilent ends the session (Silenced) once a receiver that
	// was heard has been silent for Outage: a script plays on for no one
	// there, the keys it types from then on are lost, and its run must
	// fail soon rather than at its end.
	StopWhenSilent bool
}

type phase int

const (
	running   phase = iota // the source plays
	flushing               // the source ended; the backlog drains with the acks
	lingering              // every key released; the final state is resent
	done                   // Run returns
)

type keyEvent struct {
	key  keys.Key
	down bool
	at   time.Time // when the source gave it (delivery accounting)
}

// NewCore checks cfg and makes a Core for a session starting at now. It
// sends nothing until Start.
func NewCore(cfg CoreConfig, now time.Time) (*Core, error) {
	if cfg.QueueLen == 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < time.Millisecond {
		return nil, fmt.Errorf("interval %v is too short (minimum 1ms)", cfg.Interval)
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.PeerTimeout == 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	if cfg.Outage == 0 {
		cfg.Outage = DefaultOutage
	}
	cfg.Outage = max(cfg.Outage, cfg.PeerTimeout)
	if cfg.Output == nil {
		return nil, errors.New("sender: no output")
	}
	// Above MaxSafeEvents a queue with long gaps between stamps could
	// outgrow a packet, and the sender would have nothing it can send.
	if cfg.QueueLen < 1 || cfg.QueueLen > wire.MaxSafeEvents {
		return nil, fmt.Errorf("queue length %d out of range 1..%d", cfg.QueueLen, wire.MaxSafeEvents)
	}
	q, err := eventqueue.New(cfg.QueueLen)
	if err != nil {
		return nil, err
	}
	if cfg.Session == 0 {
		if cfg.Session, err = NewSessionID(); err != nil {
			return nil, err
		}
	}
	if len(cfg.Dests) == 0 {
		cfg.Dests = []Dest{{OneWay: true}}
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	oneWay, handshaken := false, false
	for i, d := range cfg.Dests {
		if cfg.Insecure {
			continue
		}
		if !cfg.Feedback && !d.OneWay {
			return nil, fmt.Errorf("destination %s: without feedback no handshake can complete: it must be one-way (send --one-way)", d.Addr)
		}
		if d.OneWay {
			oneWay = true
			if len(cfg.PSK) != wire.KeyLen {
				return nil, fmt.Errorf("destination %s is one-way, which needs the key file (--key-file): its packets are sealed with it (PROTOCOL.md §8.6)", d.Addr)
			}
			if cfg.Identity == nil {
				return nil, fmt.Errorf("destination %s is one-way, which needs this machine's identity (--identity): its packets are signed by it, and receivers take them only from machines they pair (PROTOCOL.md §8.6)", d.Addr)
			}
			// A one-way packet carries its signer and signature too: a
			// longer queue might not fit in a datagram.
			if cfg.QueueLen > wire.MaxSafeOneWayEvents {
				return nil, fmt.Errorf("queue length %d (send --queue): a one-way destination (%s) takes at most %d, as its packets carry the sending machine's signature too (PROTOCOL.md §5)", cfg.QueueLen, d.Addr, wire.MaxSafeOneWayEvents)
			}
			continue
		}
		handshaken = true
		if d.PeerKey == ([identity.KeyLen]byte{}) {
			return nil, fmt.Errorf("destination %s has no receiver key: pair with it (keyrelay pair) or list it in the peers file", d.Addr)
		}
		if cfg.Identity == nil {
			return nil, fmt.Errorf("destination %d (%s) is handshaken, which needs this machine's identity (--identity)", i, d.Addr)
		}
	}
	if cfg.PSK != nil && len(cfg.PSK) != wire.KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(cfg.PSK), wire.KeyLen)
	}
	// A one-way sender reads no feedback: nothing goes back to it
	// (one-way sessions are never acked, PROTOCOL.md §9).
	if !cfg.Insecure && !handshaken {
		cfg.Feedback = false
	}
	k, err := newSessionKeys(cfg.PSK, cfg.Session, oneWay, cfg.Identity)
	if err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, keys: k, queue: q, start: now, peers: map[string]*peer{},
		buf: make([]byte, 0, wire.MaxPacketSize), body: make([]byte, 0, wire.MaxPacketSize),
		oneWayBuf: make([]byte, 0, wire.MaxPacketSize), hsBuf: make([]byte, 0, handshake.InitiationLen)}
	for _, d := range cfg.Dests {
		c.links = append(c.links, c.newLink(d))
	}
	c.ledger = newLedger(c.links, cfg.Feedback)
	return c, nil
}

// Session is the session id packets carry.
func (c *Core) Session() uint64 { return c.cfg.Session }

// SetLocks sets the lock state the next packets carry (PROTOCOL.md §3.2).
func (c *Core) SetLocks(l keys.Locks) { c.locks = l }

// Start begins the session at now: its clock and the start-up grace count
// from here. It announces the session at once (a receiver learns of it
// before the first key) and starts the resend period.
func (c *Core) Start(now time.Time) {
	c.start = now
	c.send(now)
	c.tickAt = now.Add(c.cfg.Interval)
}

// Key takes one key event from the source at now: into the queue (sent at
// once), or into the backlog while that would push out an event a live
// receiver has not applied yet (backlog.go).
func (c *Core) Key(key keys.Key, down bool, now time.Time) {
	if c.phase != running {
		return // the source has ended: Stop was called
	}
	c.stats.Events++
	ev := keyEvent{key, down, now}
	if len(c.backlog) > 0 || !c.mayAdd(ev, now) {
		c.hold(ev, now)
		return
	}
	c.addNow(ev, now)
}

// Ack applies one feedback datagram from the receiver at from, received at
// now. An error says why it was not an ack of this session (counted in
// Stats.AckErrors). A datagram of another protocol version (a version
// notice, PROTOCOL.md §10) is no ack: it names the receiver's version in
// the log and in Peers, and changes nothing else.
func (c *Core) Ack(b []byte, from string, now time.Time) error {
	if c.phase == done {
		return nil
	}
	if _, ok := wire.OtherVersion(b); ok {
		if err := c.otherVersion(b, from, now); err != nil {
			c.stats.AckErrors++
			return err
		}
		return nil
	}
	// The header is read once here, and the datagram dispatched on it: a
	// response or a cookie reply to a handshake, or an ack.
	m, err := handshake.Parse(b)
	if err == nil {
		switch m.Header.Type {
		case handshake.TypeResponse:
			err = c.handleResponse(m.Response, now)
			if err == nil {
				return nil
			}
		case handshake.TypeCookieReply:
			err = c.handleCookieReply(m.CookieReply, now)
			if err == nil {
				return nil
			}
		case handshake.TypeAck:
			err = c.handleAck(m, from, now)
		default:
			err = fmt.Errorf("%w: %d is nothing a sender reads", wire.ErrType, m.Header.Type)
		}
	}
	if err != nil {
		c.stats.AckErrors++
		return err
	}
	c.stats.Acks++
	switch c.phase {
	case running, flushing:
		c.drain(now)
		c.flushed(now)
	case lingering:
		c.lingerOver(now)
	}
	return nil
}

// Why a session ends (Stop).
type StopReason int

const (
	// SourceEnded: the source had no more keys (a script's end). The end
	// waits for a receiver in an outage it may come back from (Outage).
	SourceEnded StopReason = iota
	// Interrupted: a signal, or the source failed (its X server went
	// away). The end waits for receivers only as long as it did before
	// Outage existed (PeerTimeout): the process must exit soon, so that
	// a person or a service manager sees it.
	Interrupted
)

// Stop ends the source's part at now: the backlog drains with the acks,
// then a key-up for every held key joins it, under the rule every event
// obeys (flushing); then the final state is resent (lingering) until Done.
// A source that ended waits for acks as long as they make progress, up to
// Outage without any; an interrupted one (a signal) is over within Linger
// + PeerTimeout of now at any loss: the flush is given up PeerTimeout
// after now, the events still waiting counted (Stats.GivenUp) and named,
// and the final state gets Linger.
func (c *Core) Stop(now time.Time, why StopReason) {
	if c.phase != running {
		return
	}
	c.interrupted = why == Interrupted
	c.phase = flushing
	c.stuckAt = now.Add(c.patience())
	if c.interrupted {
		c.endBy = now.Add(max(c.cfg.Linger, 0) + c.cfg.PeerTimeout)
	}
	c.flushed(now)
}

// stopSilent ends a running session whose receiver heard before has
// been silent for Outage (StopWhenSilent): no longer owed the keys typed,
// it loses them from now on. The end is a signal's (Interrupted): within
// Linger + PeerTimeout, since the receiver will not ack it.
func (c *Core) stopSilent(now time.Time) bool {
	for _, l := range c.links {
		p := c.peerOf(l)
		if p == nil || l.OneWay {
			continue
		}
		heard := p.LastHeard
		if l.init != nil && l.ackedAt.After(heard) {
			heard = l.ackedAt // a new keypair taken: its receiver answered then
		}
		if now.Sub(heard) >= c.cfg.Outage {
			c.silenced = append(c.silenced, l.Addr)
		}
	}
	if len(c.silenced) == 0 {
		return false
	}
	c.logf("%s silent for %v (--outage): stopping; the keys not yet played are not sent", strings.Join(c.silenced, ", "), c.cfg.Outage)
	c.drain(now) // a receiver no longer owed holds nothing back
	c.Stop(now, Interrupted)
	return true
}

// Silenced lists the receivers whose silence past Outage ended the
// session (StopWhenSilent); nil if none did.
func (c *Core) Silenced() []string { return c.silenced }

// patience is how long the end waits for a silent receiver: Outage for
// one that was heard, unless the session was interrupted.
func (c *Core) patience() time.Duration {
	if c.interrupted {
		return c.cfg.PeerTimeout
	}
	return c.cfg.Outage
}

// Done reports whether the session is over: Run returns.
func (c *Core) Done() bool { return c.phase == done }

// Next is when Tick must next be called: the earliest of the resend, the
// burst and the end-of-phase deadlines. Zero once Done.
func (c *Core) Next() time.Time {
	switch c.phase {
	case running:
		return earliest(earliest(c.tickAt, c.burst.next()), c.nextInitiation())
	case flushing:
		return earliest(earliest(earliest(c.tickAt, c.burst.next()), c.stuckAt), c.nextInitiation())
	case lingering:
		next := earliest(c.tickAt, c.maxEnd)
		if !c.lingered {
			next = earliest(next, c.minEnd)
		}
		return next
	}
	return time.Time{}
}

// earliest of two deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Tick runs what is due at now: the regular resend (which also lets the
// backlog in once no receiver is live any more), a burst step, the end of
// a stuck flush, the end of lingering.
func (c *Core) Tick(now time.Time) {
	if c.cfg.Feedback {
		c.noteUnanswered(now)
	}
	if c.phase == running && c.cfg.StopWhenSilent && c.stopSilent(now) {
		return
	}
	switch c.phase {
	case running, flushing:
		if c.burst.due(now) {
			c.burstStep(now)
		}
		if !now.Before(c.tickAt) {
			c.send(now)
			c.tickAt = nextTick(c.tickAt, c.cfg.Interval, now)
			if c.quiet(now) {
				// Ask for an ack: a burst makes the receiver answer at
				// once (PROTOCOL.md §9), so one lost idle ack does not
				// leave the receiver unheard for PeerTimeout.
				c.startBurst(now)
			}
			c.drain(now) // a receiver may have stopped being live
		} else if c.initiationDue(now) {
			// A handshake's retry is due before the resend: the packet
			// goes now (initiations to the links waiting, the queue to the
			// others).
			c.send(now)
		}
		if c.phase == flushing && !now.Before(c.stuckAt) && len(c.backlog) > 0 {
			c.giveUp(now)
		}
		c.flushed(now)
	case lingering:
		if !now.Before(c.tickAt) {
			c.send(now)
			c.tickAt = nextTick(c.tickAt, c.lingerPeriod(), now)
		}
		if !now.Before(c.maxEnd) {
			c.phase = done
			return
		}
		if !now.Before(c.minEnd) {
			c.lingered = true
		}
		c.lingerOver(now)
	}
}

// nextTick is the resend deadline after at, keeping the period's phase
// (a time.Ticker's rule): ticks missed while late are skipped, not caught
// up.
func nextTick(at time.Time, period time.Duration, now time.Time) time.Time {
	at = at.Add(period)
	if !at.After(now) {
		at = now.Add(period - now.Sub(at)%period)
	}
	return at
}

// giveUp ends a flush that the acks did not let drain (no progress for
// Outage; a signal's PeerTimeout): what is left is added as the plain
// queue would, and may push out events a receiver never applied (the
// ledger counts those undelivered). The end's key-ups, if they have not
// joined yet, are given up with it: the acks that let nothing in for that
// long would not let them in either, and the end must not wait a second
// time. It says how many it gave up, and for which receivers.
func (c *Core) giveUp(now time.Time) {
	var waiting []string
	for _, l := range c.links {
		if p := c.peerOf(l); p != nil && c.owed(p, now) && p.Stamp < c.queue.Events()[0].Stamp {
			waiting = append(waiting, l.Addr)
		}
	}
	given := c.backlog
	for _, ev := range c.backlog {
		c.addNow(ev, now)
	}
	c.backlog = nil
	if !c.released {
		c.released = true
		c.held = c.queue.HeldKeys(c.held[:0])
		for _, k := range c.held {
			c.stats.Events++
			ev := keyEvent{k, false, now}
			if !c.mayAdd(ev, now) {
				given = append(given, ev)
			}
			c.addNow(ev, now)
		}
	}
	n := len(given)
	c.stats.GivenUp += n
	if n == 0 {
		return
	}
	why := fmt.Sprintf("no ack let them in for %v (--outage)", c.patience())
	if c.interrupted {
		why = fmt.Sprintf("after a signal the end waits %v at most (--timeout)", c.cfg.PeerTimeout)
	}
	what := fmt.Sprintf("%d key events", n)
	if c.cfg.Debug {
		what = fmt.Sprintf("%d key events (%s)", n, describeEvents(given))
	}
	if len(waiting) == 0 {
		waiting = []string{"the receivers"}
	}
	c.logf("gave up waiting for acks from %s: %s: %s went in without waiting, and what they push out that it had not applied may never be typed there (the summary counts it)", strings.Join(waiting, ", "), why, what)
}

// describeEvents names key events for a log line (send --debug only).
func describeEvents(evs []keyEvent) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		dir := "up"
		if ev.down {
			dir = "down"
		}
		parts[i] = fmt.Sprintf("%v %s", ev.key, dir)
	}
	return strings.Join(parts, ", ")
}

// flushed moves on from flushing once the backlog is empty: a key-up for
// every held key joins the backlog's rule (releaseAll), and once those are
// in the queue too, the final state lingers.
func (c *Core) flushed(now time.Time) {
	if c.phase != flushing {
		return
	}
	if len(c.backlog) > 0 {
		return
	}
	if !c.released {
		c.released = true
		c.releaseAll(now)
		if len(c.backlog) > 0 {
			return
		}
	}
	c.burst.stop()
	if c.cfg.Linger < 0 {
		c.final = c.keys.nonce // releaseAll sent it
		c.phase = done
		return
	}
	c.phase = lingering
	c.minEnd = now.Add(c.cfg.Linger)
	// A receiver in an outage it may come back from (owed) gets the
	// final state, and what was typed before it, when it does: the end
	// waits up to Outage for it, as for a handshake still unanswered
	// within Outage of the start (inGrace). One never heard, up to
	// PeerTimeout.
	wait := c.cfg.PeerTimeout
	if c.anyOwed(now) || c.inGrace(now) {
		wait = c.patience()
	}
	c.maxEnd = c.minEnd.Add(wait)
	if c.interrupted && c.endBy.Before(c.maxEnd) {
		c.maxEnd = c.endBy
	}
	c.send(now)
	c.final = c.keys.nonce
	c.tickAt = now.Add(c.lingerPeriod())
	if !now.Before(c.maxEnd) {
		// A late flush (a signal's end past due): the final state went
		// once, and the end is now.
		c.phase = done
	}
}

// lingerPeriod is the resend period while lingering: at most 50 ms, so a
// lost final packet costs little.
func (c *Core) lingerPeriod() time.Duration { return min(c.cfg.Interval, 50*time.Millisecond) }

// lingerOver ends lingering once Linger has passed and no live receiver
// (or, with feedback but none heard yet, during the first PeerTimeout) is
// still to ack the final state: a receiver in a short outage still gets
// the all-released state.
func (c *Core) lingerOver(now time.Time) {
	if c.phase == lingering && c.lingered && !c.awaitingAck(c.final, now) {
		c.phase = done
	}
}

// Final is the counter of the packet that carried the final state (every
// key released), 0 before it was sent. A receiver whose Newest reached it
// acknowledged that state.
func (c *Core) Final() uint64 { return c.final }

// Stats returns what the core has done so far (Bytes and SendErrors are
// the loop's).
func (c *Core) Stats() Stats { return c.stats }

// Pending is how many events wait in the backlog.
func (c *Core) Pending() int { return len(c.backlog) }

// Held lists the keys the queue holds down, into dst.
func (c *Core) Held(dst []keys.Key) []keys.Key { return c.queue.HeldKeys(dst) }

// Packets is how many packets have been sent.
func (c *Core) Packets() int { return c.stats.Packets }

// event stamps ev for the queue at now.
func (c *Core) event(ev keyEvent, now time.Time) eventqueue.Event {
	e := eventqueue.Event{Key: ev.key, Kind: eventqueue.Up, Stamp: c.queue.NextStamp(c.clock(now))}
	if ev.down {
		e.Kind = eventqueue.Down
	}
	return e
}

// addNow puts one key event in the queue and sends the queue if it changed.
func (c *Core) addNow(ev keyEvent, now time.Time) {
	e := c.event(ev, now)
	var out uint64 // the stamp of the event e pushes out of the queue
	if c.ledger.tracked != 0 {
		if v, adds := c.queue.Victim(e); adds && v.Kind != eventqueue.None {
			out = v.Stamp
		}
	}
	r, err := c.queue.Add(e)
	switch {
	case err != nil:
		// The source gave a zero key; nothing to send.
		c.logf("ignored key event: %v", err)
	case r == eventqueue.Added:
		c.stats.Queued++
		c.ledger.added(e.Stamp, ev.at, c.keys.nonce+1, out)
		if c.keys.nonce > sentRing {
			c.ledger.expire(c.keys.nonce - sentRing)
		}
		c.send(now)
		c.startBurst(now)
	case r == eventqueue.Dropped:
		c.stats.Dropped++
		c.ledger.dropped(ev.at)
		if c.cfg.Debug {
			c.logf("queue full of held keys: %v press dropped (raise --queue)", ev.key)
		} else {
			c.logf("queue full of held keys: a press dropped, %d so far (raise --queue; send --debug names the key)", c.stats.Dropped)
		}
	}
}

// releaseAll adds a key-up for every held key: the all-up state a clean exit
// must leave at the receiver (DESIGN.md invariant 6). Each obeys the rule
// every event does (Key): one that would push out an event a receiver
// owed it has not applied (a key-down, in a queue full of them) waits in
// the backlog for its acks, as a key typed would.
func (c *Core) releaseAll(now time.Time) {
	c.held = c.queue.HeldKeys(c.held[:0])
	for _, k := range c.held {
		c.stats.Events++
		ev := keyEvent{k, false, now}
		if len(c.backlog) > 0 || !c.mayAdd(ev, now) {
			c.hold(ev, now)
			continue
		}
		c.addNow(ev, now)
	}
}

// clock is the session clock in milliseconds.
func (c *Core) clock(now time.Time) uint64 {
	return uint64(now.Sub(c.start) / time.Millisecond)
}

// send sends the queue to every destination as the next packet: sealed
// by the link's keypair where it has one, one-way or plaintext (encoded
// once) where it is one-way or --insecure. A handshaken link that wants a
// keypair gets an initiation with the packet's counter, when its backoff
// allows; before its first keypair it gets nothing else, however long that
// takes (PROTOCOL.md §8.4).
func (c *Core) send(now time.Time) {
	c.pkt.Clock = c.clock(now)
	c.wall = uint64(now.UnixMilli())
	c.pkt.Locks = c.locks
	c.pkt.Events = c.queue.Events()
	counter := c.keys.nonce + 1
	top := uint64(0)
	if len(c.pkt.Events) > 0 {
		top = c.pkt.Events[0].Stamp
	}
	var oneWay []byte
	sent := false
	for i, l := range c.links {
		if l.init == nil {
			if c.paced(l, now) {
				continue
			}
			if oneWay == nil {
				b, err := c.appendOneWay(c.oneWayBuf[:0], counter)
				if !c.encoded(err) {
					return
				}
				c.oneWayBuf, oneWay = b, b
			}
			c.cfg.Output(oneWay, i)
			c.sentOn(l, counter, top, now)
			sent = true
			continue
		}
		c.initiate(l, i, counter, now)
		k := l.sealer(now)
		if k == nil || c.paced(l, now) {
			continue
		}
		c.pkt.Header = wire.Header{Type: wire.TypeQueue, Flags: wire.FlagSealed, Session: c.keys.id, Counter: counter}
		c.pkt.Since, c.pkt.Wall = l.since, 0
		c.abridge(l, now)
		body, err := c.pkt.AppendBody(c.body[:0])
		if !c.encoded(err) {
			return
		}
		c.body = body
		b, err := k.Seal(c.buf[:0], handshake.Header{Type: handshake.TypeQueue, Session: c.keys.id, Counter: counter}, body, now)
		if !c.encoded(err) {
			return
		}
		c.buf = b
		c.cfg.Output(b, i)
		c.sentOn(l, counter, top, now)
		sent = true
	}
	// The counter is spent even when every destination was paced: a
	// later packet carries this one's queue (a burst's target, the final
	// state), and a receiver reads the gap as packets it did not get.
	c.keys.nonce = counter
	if sent {
		c.stats.Packets++
	}
	c.recordSent(counter, now, top)
}

// abridge makes c.pkt, the queue to handshaken link l, abridged to the
// events newer than the newest stamp l's receiver acknowledged under the
// current keypair, when that is safe (PROTOCOL.md §3.3); else the whole
// queue:
//   - an ack under the current keypair gave a base (0 too: a queue of
//     none entries): that receiver applied the queue whose newest stamp
//     it is, or a newer one, and keeps it (it acks only once it applied
//     a queue);
//   - every event added to the queue after the base is still in it
//     (Evicted), so the receiver can replay them (eventqueue.Rebuilder);
//   - the keypair was acked within restartAfter: a receiver that stopped
//     acking may have lost its state, and is about to get a new handshake.
func (c *Core) abridge(l *link, now time.Time) {
	q := c.queue.Events()
	c.pkt.Events, c.pkt.Abridged, c.pkt.N, c.pkt.Base = q, false, 0, 0
	if !l.acked || c.queue.Evicted() > l.base || now.Sub(l.ackedAt) >= c.restartAfter() {
		return
	}
	n := 0
	for n < len(q) && q[n].Kind != eventqueue.None && q[n].Stamp > l.base {
		n++
	}
	if n == len(q) {
		return // everything is newer: the whole queue
	}
	c.pkt.Events, c.pkt.Abridged, c.pkt.N, c.pkt.Base = q[:n], true, len(q), l.base
	c.stats.Abridged++
}

// appendOneWay appends the queue as packet counter, one-way sealed, or in
// plaintext (--insecure), to b: always the whole queue.
func (c *Core) appendOneWay(b []byte, counter uint64) ([]byte, error) {
	c.pkt.Events, c.pkt.Abridged, c.pkt.N, c.pkt.Base = c.queue.Events(), false, 0, 0
	c.pkt.Wall, c.pkt.Since = c.wall, 0
	if c.cfg.Insecure {
		c.pkt.Header = wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: c.keys.id, Counter: counter}
		return c.pkt.Append(b)
	}
	c.pkt.Header = wire.Header{Type: wire.TypeQueue, Flags: wire.OneWaySealed, Session: c.keys.id, Counter: counter}
	return c.pkt.AppendSealedBy(b, c.keys.oneWay)
}

// initiationDue reports whether a link's handshake retry is due at now.
func (c *Core) initiationDue(now time.Time) bool {
	for _, l := range c.links {
		if l.waiting && !now.Before(l.nextInit()) {
			return true
		}
	}
	return false
}

// encoded reports whether a packet encoded. The queue always does
// (NewCore checks its length); if it ever did not, sending nothing is
// safer than sending garbage.
func (c *Core) encoded(err error) bool {
	if err != nil {
		c.stats.SendErrors++
		c.logf("unable to encode the queue: %v", err)
		return false
	}
	return true
}

func (c *Core) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}
