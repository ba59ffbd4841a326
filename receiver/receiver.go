// Package receiver is keyrelay's receive loop: it keeps one state per sender
// session, drops stale and malformed packets, diffs each new queue against
// the session's previous one (eventqueue.Tracker) and hands the resulting key
// events to an Injector. A key is down in the OS while any session holds it.
// How keys are injected is the Injector's business.
package receiver

import (
	"cmp"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/wire"
)

// Defaults of Config.
const (
	DefaultTimeout = time.Second
	// DefaultJoinAfter: a session first heard when its sender clock is past
	// this is joined, not replayed (see Config.JoinAfter).
	DefaultJoinAfter = 2 * time.Second
	// maxSessions bounds the session table; ended sessions are forgotten first.
	maxSessions = 1024
)

// Config configures a Receiver.
type Config struct {
	// Conn receives the packets. Run closes it when it returns, to stop
	// reading.
	Conn net.PacketConn
	// Injector gets the key events.
	Injector Injector
	// Timeout: a session silent this long is ended and its keys released
	// (DefaultTimeout if 0).
	Timeout time.Duration
	// Unbalanced follows the seed literally: a repeated key-down of a held
	// key is injected as it comes (recv --balanced=false).
	Unbalanced bool
	// JoinAfter: when the first packet heard from a session says its sender
	// has been running longer than this, the receiver joins it: it presses
	// the keys held now and does not type the older events in the queue
	// again (DefaultJoinAfter if 0). A sender's first packets are sent at
	// once, so only a receiver (re)started under a running sender joins.
	JoinAfter time.Duration
	// PSK is the pre-shared key: only packets sealed with it are accepted.
	// Nil accepts plaintext only (--insecure).
	PSK []byte
	// Allow, if not empty, lists the source networks accepted; datagrams
	// from elsewhere are dropped before any decoding or crypto.
	Allow []netip.Prefix
	// MaxSkew bounds how far a sealed packet's wall clock may be from ours
	// (DefaultMaxSkew if 0): the defence against replaying a recorded old
	// session to a receiver that has forgotten it (PROTOCOL.md §8).
	MaxSkew time.Duration
	// NoAcks turns feedback off: no ack packets are sent back. Hellos are
	// still answered with tickets: without one no handshaken session can
	// start.
	NoAcks bool
	// NoOneWay refuses sessions without a handshake (recv's default; recv
	// --one-way accepts them): only senders that proved they know this
	// receiver's current ticket can type, so no recording can ever be
	// replayed here (PROTOCOL.md §8.4). One-way senders (broadcast,
	// multicast, send --one-way --feedback=false) are refused, counted
	// (Stats.Refused) and logged at most once a minute.
	NoOneWay bool
	// Debug lets log lines name keys (recv --debug): a key that failed to
	// type. Without, they give counts only, since the keys of a password
	// typed would be in the log.
	Debug bool
	// Logf reports what happens (new sessions, timeouts, rejects at a
	// bounded rate). Nil: silent.
	Logf func(format string, args ...any)
}

// Injector is what the receiver hands key events to (package inject's
// injectors are ones; cmd/recv.go wires them). Inject is called from one
// goroutine at a time. Its error is counted and logged, not fatal, so one key
// a backend cannot press does not stop the relay; but an error wrapping
// sink.ErrGone (the backend itself went away) stops Run, and one wrapping
// sink.ErrCannotType (a key or character the backend cannot type at all,
// said once by the injector) is counted apart from failures.
type Injector interface {
	Inject(e sink.Event) error
}

// LockSetter is an Injector that can set the OS's Caps Lock and Num Lock:
// SetLocks makes them what l says (called only with a known l) for the
// given sender session (PROTOCOL.md §3.2).
type LockSetter interface {
	SetLocks(l keys.Locks, session uint64) error
}

// Watched is an Injector that notices its backend going away on its own,
// between keys: Gone is closed then, and GoneErr (wrapping sink.ErrGone)
// says what went away. Run ends at once, not at the next key.
type Watched interface {
	Gone() <-chan struct{}
	GoneErr() error
}

// MinAckInterval bounds the acks sent to one session: at most one per
// interval; what arrives in between is covered by the next one (no storms).
const MinAckInterval = 5 * time.Millisecond

// IdleAckInterval bounds the acks sent to one session while nothing
// changes (PROTOCOL.md §9): one per interval keeps the sender's liveness
// fed (its --timeout, 2 s by default) at a tenth of the acks of answering
// every 100 ms resend. A packet with news is acked at once.
const IdleAckInterval = time.Second

// BusyGap: a packet sent, by the sender's clock, sooner than this after the
// one before it is acked at once. An idle sender resends every --interval
// (100 ms by default); it sends faster only while it waits for an ack (a
// burst after an event, every 5 to 20 ms; events held back for acks; its
// final state while lingering, every 50 ms), and the ack is what ends the
// wait. A sender whose --interval is below BusyGap is acked as before,
// every packet.
const BusyGap = 75 * time.Millisecond

// DefaultMaxSkew is the default Config.MaxSkew.
const DefaultMaxSkew = 30 * time.Second

// TicketLife is how long after it was issued a ticket may start a session
// here (PROTOCOL.md §8.3). A sender uses its ticket within a round trip; a
// session that exists keeps its ticket as long as it is kept. So a
// recording of a session this receiver has forgotten (ended sessions are
// forgotten once 1024 are kept) cannot start it again: it would need a
// fresh ticket, which only its sender can use.
const TicketLife = 10 * time.Second

// ticketGap bounds the answers to one session's hellos from one address:
// a sender sends a hello in every packet until it has a ticket, and one
// answer per gap is enough. A packet sealed for another run is answered
// each time (no larger than it, so nothing is amplified): the answer to the
// first one the sender sent after this receiver came up sets where typing
// resumes (PROTOCOL.md §8.3), and a replay from the same address must not
// hold it back.
const ticketGap = 10 * time.Millisecond

// Stats are what a Receiver did.
type Stats struct {
	Packets    int // datagrams read
	Accepted   int // packets applied
	Stale      int // packets not newer than their session's last one
	Malformed  int // packets that did not decode (size, magic, layout)
	Mismatched int // keyrelay packets of another protocol version (PROTOCOL.md §10)
	NotAllowed int // datagrams from addresses outside Allow
	Forged     int // packets that did not authenticate, or of the wrong security mode
	Replayed   int // authenticated packets seen before (replay window)
	Skewed     int // authenticated packets whose wall clock is too far from ours
	Foreign    int // authenticated packets sealed with a ticket this receiver did not issue (a restart, a replay) or that expired: answered with a ticket
	Refused    int // one-way packets refused: recv without --one-way (NoOneWay), or for a handshaken session
	Tickets    int // tickets sent (handshakes answered)
	Injected   int // key events given to the injector
	InjectErr  int // key events the injector failed
	NotTyped   int // key-downs the injector cannot type (sink.ErrCannotType): a character on uinput
	Sessions   int // sessions seen
	Ended      int // sessions that went silent holding no key (a sender's clean end)
	Timeouts   int // sessions that went silent holding keys: released here
	Acks       int // ack packets sent
	Notices    int // version notices sent (PROTOCOL.md §10)
}

func (s Stats) String() string {
	return fmt.Sprintf("%d packets (%d applied, %d stale, %d malformed, %d of another protocol version, %d forged, %d replayed, %d clock-skewed, %d for another receiver run, %d one-way refused, %d not allowed), %d sessions (%d ended, %d timed out holding keys), %d keys injected (%d failed, %d not typable here), %d acks and %d tickets sent, %d version notices sent",
		s.Packets, s.Accepted, s.Stale, s.Malformed, s.Mismatched, s.Forged, s.Replayed, s.Skewed, s.Foreign, s.Refused, s.NotAllowed, s.Sessions, s.Ended, s.Timeouts, s.Injected, s.InjectErr, s.NotTyped, s.Acks, s.Tickets, s.Notices)
}

// sessionKeys are a session's keys and the counters that go with them,
// owned together as wireguard-go's keypair owns its AEADs, nonce and replay
// filter: the key that opens the session's packets and the window of their
// counters (PROTOCOL.md §8.2, §8.5), and the key that seals its acks with
// the acks' own counter, their nonce (§9). Each key is derived once per
// session; both are nil in plaintext (--insecure). A handshaken session's
// keys come from its ticket (PROTOCOL.md §8.3), which its packets and acks
// carry; a one-way session's from its id alone.
type sessionKeys struct {
	handshaken bool
	ticket     wire.Ticket
	open       cipher.AEAD   // sender-to-receiver
	replay     replay.Filter // counters accepted; also what the acks report
	seal       cipher.AEAD   // receiver-to-sender
	acks       uint64        // acks sealed: the next one's counter is acks+1
}

type session struct {
	id        uint64
	addr      string
	keys      *sessionKeys
	tracker   eventqueue.Tracker
	held      map[keys.Key]bool // keys this session holds in the OS
	counter   uint64            // newest packet counter applied
	clock     uint64            // its sender clock (ms), for the sender's pace
	lastHeard time.Time
	live      bool // false once timed out or ended (keys released)
	replaced  bool // a newer session from the same address took over

	pace      pace          // the counters it spends per packet that arrives (liveness.go)
	allowance time.Duration // the silence that ends it (liveness.go); 0: the timeout

	from       net.Addr // where acks go
	lastAck    time.Time
	ackPending bool
	newestAt   time.Time  // when the newest packet arrived
	packets    int        // packets applied
	locks      keys.Locks // the sender's lock state last matched
}

// Receiver is the receive loop. Its methods are not safe for concurrent use:
// Run owns it until it returns.
type Receiver struct {
	cfg        Config
	locksNoted bool  // the injector's lack of lock setting was logged
	gone       error // the injector's backend went away (sink.ErrGone): Run stops
	sessions   map[uint64]*session
	byAddr     map[string]*session
	osHeld     map[keys.Key]int // how many live sessions hold each key
	stats      Stats
	pkt        wire.Queue
	ds         []eventqueue.Dispatch
	rejects    rejectLog
	refusals   refusalLog // one-way packets refused by NoOneWay
	scratch    []byte
	ackBuf     []byte
	since      time.Time // when Run started listening (liveness.go)

	// The handshake (PROTOCOL.md §8.3): this instance's secret, drawn at
	// New, makes and checks its tickets, so a restarted receiver knows
	// none of the tickets recordings were sealed with. Tickets count their
	// epoch from the first datagram.
	secret []byte
	born   time.Time
	hellos *helloTable // per session and address: its hellos (rate limit, and the loss its counting starts from)

	mu        sync.Mutex // guards status and versions
	status    []SessionStatus
	versions  versions // addresses of other protocol versions (version.go)
	published time.Time
	changed   bool // held keys or liveness changed since published
}

// New checks cfg and makes a Receiver.
func New(cfg Config) (*Receiver, error) {
	if cfg.Conn == nil || cfg.Injector == nil {
		return nil, errors.New("receiver: no connection or injector")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 10*time.Millisecond {
		return nil, fmt.Errorf("timeout %v is too short (minimum 10ms)", cfg.Timeout)
	}
	if cfg.JoinAfter == 0 {
		cfg.JoinAfter = DefaultJoinAfter
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.PSK != nil && len(cfg.PSK) != wire.KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(cfg.PSK), wire.KeyLen)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("unable to draw the receiver's ticket secret: %w", err)
	}
	return &Receiver{
		cfg:      cfg,
		sessions: map[uint64]*session{},
		byAddr:   map[string]*session{},
		osHeld:   map[keys.Key]int{},
		secret:   secret,
		hellos:   newHelloTable(maxHellos),
	}, nil
}

type datagram struct {
	b    []byte
	from net.Addr
	at   time.Time
}

// Run receives until ctx is done, then releases every key it holds (cause
// Shutdown) and returns. It returns an error only if reading fails for
// another reason than ctx.
func (r *Receiver) Run(ctx context.Context) (Stats, error) {
	r.since = time.Now()
	in := make(chan datagram, 64)
	readErr := make(chan error, 1)
	go func() {
		buf := make([]byte, wire.MaxPacketSize+1)
		for {
			n, from, err := r.cfg.Conn.ReadFrom(buf)
			if err != nil {
				readErr <- err
				return
			}
			d := datagram{b: append([]byte(nil), buf[:n]...), from: from, at: time.Now()}
			select {
			case in <- d:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()
	// Closing the conn is what unblocks ReadFrom, so Run closes it however
	// it ends.
	defer r.cfg.Conn.Close()

	// One timer, armed for the next deadline Next names (a session's
	// timeout, a held-back ack): an idle receiver wakes only for a packet
	// or a deadline, not on a tick.
	check := time.NewTimer(0)
	check.Stop()
	defer check.Stop()
	var armed time.Time
	rearm := func() {
		next := r.Next()
		if next.Equal(armed) {
			return
		}
		armed = next
		if next.IsZero() {
			check.Stop()
			return
		}
		check.Reset(time.Until(next))
	}
	// An injector that notices its backend going away between keys (an X
	// server stopping) ends Run at once, not at the next key.
	var gone <-chan struct{}
	w, watched := r.cfg.Injector.(Watched)
	if watched {
		gone = w.Gone()
	}
	var err error
loop:
	for {
		select {
		case d := <-in:
			r.Handle(d.b, d.from, d.at)
			if r.gone != nil {
				break loop
			}
			rearm()
		case <-gone:
			if r.gone == nil {
				r.gone = w.GoneErr()
			}
			break loop
		case now := <-check.C:
			armed = time.Time{}
			r.Expire(now)
			rearm()
		case err = <-readErr:
			if ctx.Err() != nil {
				err = nil // closed because we are stopping
			}
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	r.ReleaseAll(eventqueue.Shutdown)
	if r.gone != nil {
		return r.stats, r.gone
	}
	if err != nil {
		return r.stats, fmt.Errorf("unable to receive: %w", err)
	}
	return r.stats, nil
}

// Gone is the injector's error if its backend went away for good
// (sink.ErrGone; Run returns it): nothing more can be typed.
func (r *Receiver) Gone() error { return r.gone }

// Handle applies one datagram received at now from from. Checks run
// cheapest first, and nothing about sessions changes before a packet has
// authenticated: allow-list, size/magic/version/layout, AEAD, wall clock,
// replay window, then staleness.
func (r *Receiver) Handle(b []byte, from net.Addr, now time.Time) {
	r.stats.Packets++
	if r.born.IsZero() {
		r.born = now
	}
	if len(r.cfg.Allow) > 0 && !r.allowed(from) {
		r.stats.NotAllowed++
		r.rejects.note(r.cfg.Logf, now, from, errNotAllowed)
		return
	}
	var fresh *sessionKeys
	h, err := wire.ParseHeader(b)
	if err == nil && h.Type == wire.TypeHello {
		r.hello(b, from, now)
		return
	}
	if err == nil {
		fresh, err = r.decode(b, h)
	}
	if err != nil {
		if v, ok := wire.OtherVersion(b); ok {
			r.otherVersion(b, v, from, now) // PROTOCOL.md §10
			return
		}
		r.reject(err, from, now)
		return
	}
	h = r.pkt.Header
	s := r.sessions[h.Session]
	if !r.fresh(h, s, fresh, from, now) {
		return
	}
	addr := from.String()
	if s == nil {
		// A new session from an address ends the one it replaces: the
		// sender restarted, and its old keys must not stay down. The new
		// session has authenticated by now, and is as fresh as the one it
		// replaces: a one-way session (replayable within --max-skew) never
		// ends a handshaken one.
		if old := r.byAddr[addr]; old != nil && (fresh.handshaken || !old.keys.handshaken) {
			r.end(old, eventqueue.SessionEnd)
			old.replaced = true
			r.logf("session %016x from %s replaced by %016x", old.id, addr, h.Session)
		}
		s = r.newSession(h.Session, addr, fresh)
		r.byAddr[addr] = s
	}
	if !s.keys.replay.Accept(h.Counter) {
		r.stats.Replayed++
		return
	}
	s.from = from
	if h.Counter == s.keys.replay.Newest() {
		s.newestAt = now
	}
	// UDP reorders and duplicates: an older queue would release keys that
	// are still held (DESIGN.md invariant 4). A replaced session's late
	// packets must not press its keys again. An older packet is no news
	// for the sender either: the next ack's bits show it arrived.
	if h.Counter <= s.counter || s.replaced {
		r.stats.Stale++
		r.late(s, h.Counter, now)
		r.ack(s, now, false)
		return
	}
	if fresh != nil && s.keys != fresh {
		// The sender took a new ticket from us (it had none, or ours had
		// expired): the session goes on under the new keys, with its
		// counters, so its replay window stays. Only now that the packet
		// is new: an older ticket's recording can never switch back.
		r.rekey(s, fresh)
	}
	// Where a session's first packet starts typing: a handshaken session
	// says (Since, PROTOCOL.md §8.3); a one-way session that has run
	// longer than JoinAfter is joined: only the keys it holds are pressed.
	var since uint64
	switch {
	case s.counter != 0:
	case s.keys.handshaken:
		since = r.pkt.Since
	case time.Duration(r.pkt.Clock)*time.Millisecond > r.cfg.JoinAfter && len(r.pkt.Events) > 0:
		since = r.pkt.Events[0].Stamp
	}
	resumed := !s.live && s.counter != 0
	if resumed {
		r.logf("session %016x from %s is back", s.id, addr)
	}
	// What the sender must hear of at once (PROTOCOL.md §9): a session
	// starting or coming back, packets lost before this one, or a sender
	// re-sending faster than its idle pace (it waits for an ack: a burst,
	// events held back, its final state). Events and locks are added below.
	news := s.counter == 0 || resumed || h.Counter != s.counter+1 ||
		r.pkt.Clock < s.clock+uint64(BusyGap/time.Millisecond)
	// Locks first, so the keys of this packet are typed with them: when a
	// session starts or comes back, and when the sender (re)starts relaying
	// (its lock state or epoch changes). PROTOCOL.md §3.2.
	if l := r.pkt.Locks; l.Known() && (s.counter == 0 || resumed || l != s.locks) {
		r.setLocks(s, l)
		news = true
	}
	r.paced(s, h.Counter, r.pkt.Clock, now)
	s.counter = h.Counter
	s.clock = r.pkt.Clock
	s.lastHeard = now
	r.changed = r.changed || !s.live
	s.live = true
	s.packets++
	r.stats.Accepted++
	defer r.publish(now)
	stamp := s.tracker.Newest()
	r.ds = s.tracker.ApplyFrom(r.ds[:0], r.pkt.Events, since)
	for _, d := range r.ds {
		r.inject(s, d.Key, d.Kind == eventqueue.Down, d.Cause)
	}
	// Acked once typed: an ack tells the sender what was applied.
	r.ack(s, now, news || len(r.ds) > 0 || s.tracker.Newest() != stamp)
}

var errNotAllowed = errors.New("source address not in --allow")

func (r *Receiver) allowed(from net.Addr) bool {
	ua, ok := from.(*net.UDPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(ua.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range r.cfg.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// decode fills r.pkt from b: opened with the session key when the receiver
// has one, parsed as plaintext otherwise. A sealed packet of a session not
// known yet opens with keys derived for it now, which decode returns: they
// become the session's if Handle creates it, so they are derived once.
//
// A packet keyed otherwise than its session (another ticket, or one-way
// against handshaken) opens with keys derived for it too, returned as
// fresh: Handle decides whether they may replace the session's.
func (r *Receiver) decode(b []byte, h wire.Header) (fresh *sessionKeys, err error) {
	handshaken := h.Flags&wire.FlagTicket != 0
	same := func(s *session) bool {
		return s != nil && s.keys.handshaken == handshaken && s.keys.ticket == h.Ticket
	}
	if r.cfg.PSK == nil {
		if err := wire.ParseQueue(b, &r.pkt); err != nil {
			return nil, err
		}
		if same(r.sessions[h.Session]) {
			return nil, nil
		}
		return &sessionKeys{handshaken: handshaken, ticket: h.Ticket}, nil
	}
	r.scratch, err = wire.OpenQueue(b, func(id uint64) (cipher.AEAD, error) {
		if s := r.sessions[id]; same(s) {
			return s.keys.open, nil
		}
		var a cipher.AEAD
		var err error
		if handshaken {
			a, err = wire.TicketAEAD(r.cfg.PSK, id, h.Ticket, wire.SenderToReceiver)
		} else {
			a, err = wire.SessionAEAD(r.cfg.PSK, id, wire.SenderToReceiver)
		}
		fresh = &sessionKeys{handshaken: handshaken, ticket: h.Ticket, open: a}
		return a, err
	}, r.scratch, &r.pkt)
	return fresh, err
}

var (
	errForeignTicket = errors.New("sealed with a ticket this receiver did not issue (it restarted since, or the packet is a replay of a session with another receiver): answered with a new ticket, nothing typed")
	errExpiredTicket = errors.New("its ticket is too old to start a session (a session this receiver has forgotten, or a replay): answered with a new ticket, nothing typed")
	errDowngrade     = errors.New("a one-way packet for a handshaken session (a replay?): refused")
)

// fresh decides whether an authenticated queue packet is fresh enough to
// apply (PROTOCOL.md §8.7 step 4). A handshaken packet is, when it carries
// its session's ticket, or a ticket this instance issued at most
// TicketLife ago; any other is answered with a new ticket for its sender
// to take (a restarted receiver is followed at once), and nothing is
// typed. A one-way packet needs its wall clock within MaxSkew of ours, and
// one-way sessions allowed.
func (r *Receiver) fresh(h wire.Header, s *session, fresh *sessionKeys, from net.Addr, now time.Time) bool {
	if h.Flags&wire.FlagTicket != 0 {
		if fresh == nil {
			return true // the session's own ticket
		}
		var err error
		switch {
		case !h.Ticket.Minted(r.secret, h.Session):
			err = errForeignTicket
		case now.Sub(r.born.Add(time.Duration(h.Ticket.Epoch())*time.Second)) > TicketLife:
			err = errExpiredTicket
		default:
			return true
		}
		r.stats.Foreign++
		r.rejects.note(r.cfg.Logf, now, from, err)
		r.sendTicket(h.Session, h.Counter, from, now)
		return false
	}
	if r.cfg.NoOneWay {
		r.stats.Refused++
		r.refusals.note(r.cfg.Logf, now, from)
		return false
	}
	if s != nil && s.keys.handshaken {
		r.stats.Refused++
		r.rejects.note(r.cfg.Logf, now, from, errDowngrade)
		return false
	}
	if r.cfg.PSK != nil {
		// A recorded old one-way session replayed to a receiver that has
		// forgotten it carries old wall-clock times (authenticated).
		skew := time.Duration(int64(r.pkt.Wall)-now.UnixMilli()) * time.Millisecond
		if skew > r.cfg.MaxSkew || skew < -r.cfg.MaxSkew {
			r.stats.Skewed++
			r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("sender clock differs from ours by %v, more than --max-skew %v: a replay, or clocks out of sync (use NTP on both machines, or raise --max-skew; a sender with feedback needs no clock: check it can hear this receiver)", skew.Round(time.Millisecond), r.cfg.MaxSkew))
			return false
		}
	}
	return true
}

// rekey moves session s to the keys k its latest packet opened with,
// keeping its replay window (the counters go on); acks restart their own
// count under the new key.
func (r *Receiver) rekey(s *session, k *sessionKeys) {
	k.replay = s.keys.replay
	r.deriveSeal(s.id, k)
	s.keys = k
	r.logf("session %016x from %s now under a new ticket", s.id, s.addr)
}

// deriveSeal derives the key that seals k's acks.
func (r *Receiver) deriveSeal(id uint64, k *sessionKeys) {
	if k.open == nil {
		return
	}
	// It cannot fail where the open key did not.
	if k.handshaken {
		k.seal, _ = wire.TicketAEAD(r.cfg.PSK, id, k.ticket, wire.ReceiverToSender)
	} else {
		k.seal, _ = wire.SessionAEAD(r.cfg.PSK, id, wire.ReceiverToSender)
	}
}

// reject counts a packet that did not decode or authenticate, as forged
// (wrong key or security mode) or malformed, and logs it (rate limited).
func (r *Receiver) reject(err error, from net.Addr, now time.Time) {
	if errors.Is(err, wire.ErrAuth) || errors.Is(err, wire.ErrNotSealed) || errors.Is(err, wire.ErrSealed) {
		r.stats.Forged++
	} else {
		r.stats.Malformed++
	}
	r.rejects.note(r.cfg.Logf, now, from, err)
}

// hello answers a sender's hello with a ticket (PROTOCOL.md §8.3). The
// ticket is made from this instance's secret, and checked when the
// session's first ticketed packet comes; no session is created. What it
// keeps, per session and address, is in the bounded helloTable: when it
// last answered (the rate limit) and the hellos' pace (the session's loss
// counts from it).
func (r *Receiver) hello(b []byte, from net.Addr, now time.Time) {
	var keyFor func(uint64) ([]byte, error)
	if r.cfg.PSK != nil {
		keyFor = func(id uint64) ([]byte, error) { return wire.HandshakeKey(r.cfg.PSK, id) }
	}
	h, err := wire.ParseHello(b, keyFor)
	if err != nil {
		r.reject(err, from, now)
		return
	}
	k := helloFrom{h.Session, from.String()}
	seen, ok := r.hellos.get(k)
	helloPaced(&seen, h.Counter)
	seen.newest = max(seen.newest, h.Counter)
	if !ok || now.Sub(seen.answered) >= ticketGap {
		seen.answered = now
		r.sendTicket(h.Session, h.Counter, from, now)
	}
	r.hellos.put(k, seen) // past its bound, the stalest entry goes
}

// helloFrom keys what a receiver remembers of a session's hellos: per
// session and source address.
type helloFrom struct {
	session uint64
	addr    string
}

// helloSeen is what a receiver remembers of a session's hellos from one
// address: when it last answered one (at most one answer per ticketGap),
// the newest counter among them, and the pace of the hellos heard. A
// handshaken session's loss is counted on from there (liveness.go): the
// counters before its first queue packet went out as hellos, and those
// that arrived are no loss.
type helloSeen struct {
	answered time.Time
	newest   uint64
	pace     pace
}

// sendTicket sends session a ticket answering its packet echo, at most one
// (hello limits its answers).
func (r *Receiver) sendTicket(session, echo uint64, to net.Addr, now time.Time) {
	epoch := uint32(now.Sub(r.born) / time.Second)
	t := wire.MintTicket(r.secret, session, epoch)
	var key []byte
	if r.cfg.PSK != nil {
		var err error
		if key, err = wire.HandshakeKey(r.cfg.PSK, session); err != nil {
			return
		}
	}
	b := wire.AppendTicket(r.ackBuf[:0], session, echo, t, key)
	r.ackBuf = b
	if _, err := r.cfg.Conn.WriteTo(b, to); err == nil {
		r.stats.Tickets++
	}
}

// newSession starts session id from addr with the keys its first packet
// opened with (nil in plaintext).
func (r *Receiver) newSession(id uint64, addr string, k *sessionKeys) *session {
	if len(r.sessions) >= maxSessions {
		r.forgetOldest()
	}
	if k == nil {
		k = &sessionKeys{}
	}
	// Derived only now that a packet of the session has authenticated, so
	// a flood of forged packets for made-up sessions costs one derivation
	// each, not two.
	r.deriveSeal(id, k)
	s := &session{id: id, addr: addr, keys: k, held: map[keys.Key]bool{}}
	s.tracker.Unbalanced = r.cfg.Unbalanced
	r.sessions[id] = s
	r.stats.Sessions++
	r.logf("new session %016x from %s", id, addr)
	return s
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
		if r.byAddr[oldest.addr] == oldest {
			delete(r.byAddr, oldest.addr)
		}
	}
}

// ack answers a packet of the session (PROTOCOL.md §9). A packet with news
// is acked now, or when MinAckInterval has passed since the last ack
// (pending; Expire sends it). A packet without (the next counter, nothing
// new applied, at the sender's idle pace) is acked only if the last ack is
// IdleAckInterval old: the sender heard from us recently enough.
func (r *Receiver) ack(s *session, now time.Time, news bool) {
	// An ack says "typed"; with the injector gone nothing is, and the
	// sender must see the receiver fall silent.
	if r.cfg.NoAcks || s.from == nil || r.gone != nil {
		return
	}
	if !news && !s.ackPending && !s.lastAck.IsZero() && now.Sub(s.lastAck) < IdleAckInterval {
		return
	}
	if !s.lastAck.IsZero() && now.Sub(s.lastAck) < MinAckInterval {
		s.ackPending = true
		return
	}
	s.ackPending = false
	s.lastAck = now
	s.keys.acks++
	a := wire.Ack{
		Header: wire.Header{Type: wire.TypeAck, Session: s.id, Counter: s.keys.acks, Ticket: s.keys.ticket},
		Newest: s.keys.replay.Newest(),
		Bits:   s.keys.replay.AckBits(),
		Stamp:  s.tracker.Newest(),
		Delay:  uint64(now.Sub(s.newestAt) / time.Microsecond),
		Wall:   uint64(now.UnixMilli()),
	}
	if s.keys.handshaken {
		a.Header.Flags = wire.FlagTicket
	}
	var b []byte
	var err error
	if r.cfg.PSK != nil {
		b, err = a.AppendSealed(r.ackBuf[:0], s.keys.seal)
	} else {
		b, err = a.Append(r.ackBuf[:0])
	}
	if err != nil {
		return
	}
	r.ackBuf = b
	if _, err := r.cfg.Conn.WriteTo(b, s.from); err == nil {
		r.stats.Acks++
	}
}

// Next is when Expire must next be called: the earliest of a live
// session's timeout, a held-back ack's turn (MinAckInterval after the
// session's last ack) and the publishing of a status change. It is zero when
// nothing is due, so an idle receiver with no live session sleeps until a
// packet comes. Like kcp's Check: Handle and Expire change it, and the
// caller arms one timer for it.
func (r *Receiver) Next() time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, s := range r.sessions {
		if s.live {
			earliest(s.lastHeard.Add(r.allowance(s)))
		}
		if s.ackPending {
			earliest(s.lastAck.Add(MinAckInterval))
		}
	}
	return next
}

// Expire ends the live sessions silent for longer than the timeout
// (DESIGN.md invariant 5), and sends the acks held back whose turn has
// come. The ended sessions' state is kept, so a session that comes back
// resumes without typing old events again.
func (r *Receiver) Expire(now time.Time) {
	for _, s := range r.sortedSessions() {
		if s.ackPending {
			r.ack(s, now, true)
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

// inject merges one session's key event into the OS state: a key goes down
// when the first session presses it and up when the last one releases it.
func (r *Receiver) inject(s *session, code keys.Key, down bool, cause eventqueue.Cause) {
	if down {
		if s.held[code] {
			// Only with Unbalanced: the seed's repeated key-down goes
			// through as it would from a keyboard's auto-repeat.
			r.send(sink.Event{Key: code, Down: true, Cause: cause, Session: s.id})
			return
		}
		s.held[code] = true
		r.changed = true
		r.osHeld[code]++
		if r.osHeld[code] == 1 {
			r.send(sink.Event{Key: code, Down: true, Cause: cause, Session: s.id})
		}
		return
	}
	if !s.held[code] {
		return
	}
	delete(s.held, code)
	r.changed = true
	r.osHeld[code]--
	if r.osHeld[code] == 0 {
		delete(r.osHeld, code)
		r.send(sink.Event{Key: code, Down: false, Cause: cause, Session: s.id})
	}
}

// setLocks makes the OS lock state l, through an injector that can.
func (r *Receiver) setLocks(s *session, l keys.Locks) {
	s.locks = l
	ls, ok := r.cfg.Injector.(LockSetter)
	if !ok {
		if !r.locksNoted {
			r.locksNoted = true
			r.logf("the sender tells its Caps Lock and Num Lock state, which this injector cannot set: they are left as they are")
		}
		return
	}
	if err := ls.SetLocks(l, s.id); err != nil {
		if errors.Is(err, sink.ErrGone) {
			r.gone = cmp.Or(r.gone, err)
			return
		}
		r.stats.InjectErr++
		r.logf("unable to set Caps Lock and Num Lock: %v", err)
	}
}

func (r *Receiver) send(k sink.Event) {
	r.stats.Injected++
	err := r.cfg.Injector.Inject(k)
	switch {
	case err == nil:
	case errors.Is(err, sink.ErrGone):
		// Counted as a failure, said once: Run stops with it.
		r.stats.InjectErr++
		r.gone = cmp.Or(r.gone, err)
	case errors.Is(err, sink.ErrCannotType):
		// The injector said so, once per key; the key-up of a key it could
		// not press is no news.
		if k.Down {
			r.stats.NotTyped++
		}
	default:
		r.stats.InjectErr++
		if r.cfg.Debug {
			r.logf("unable to inject %v: %v", k.Key, err)
		} else {
			// The error may name the key too (robotgo's does).
			r.logf("unable to inject a key event (%d failed so far; recv --debug names the key and why)", r.stats.InjectErr)
		}
	}
}

// Held lists the keys down in the OS because of this receiver, in code order.
func (r *Receiver) Held() []keys.Key {
	out := make([]keys.Key, 0, len(r.osHeld))
	for c := range r.osHeld {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Stats returns what the receiver has done so far.
func (r *Receiver) Stats() Stats { return r.stats }

func (r *Receiver) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf(format, args...)
	}
}

// rejectLog reports malformed packets at most once a second, with a count of
// those it did not report, so a flood cannot flood the log.
// refusalInterval bounds how often refused one-way packets are logged: a
// one-way sender resends every 100 ms, and the fix needs saying once, not
// ten times a second.
const refusalInterval = time.Minute

// refusalLog logs refused one-way packets (Config.NoOneWay) at most once
// per refusalInterval, with how many were refused since, and the fix.
type refusalLog struct {
	last  time.Time
	count int
}

func (l *refusalLog) note(logf func(string, ...any), now time.Time, from net.Addr) {
	l.count++
	if logf == nil || (!l.last.IsZero() && now.Sub(l.last) < refusalInterval) {
		return
	}
	logf("refused one-way packets (no handshake): %d since last said, the latest from %v; a broadcast, multicast or send --one-way --feedback=false sender; recv --one-way accepts them, off by default because a recording of a one-way session can be typed again here within --max-skew of when it was made (PROTOCOL.md §8.4)", l.count, from)
	l.last = now
	l.count = 0
}

type rejectLog struct {
	last       time.Time
	suppressed int
}

func (l *rejectLog) note(logf func(string, ...any), now time.Time, from net.Addr, err error) {
	if logf == nil {
		return
	}
	if !l.last.IsZero() && now.Sub(l.last) < time.Second {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		logf("dropped packet from %v: %v (and %d more dropped packets)", from, err, l.suppressed)
	} else {
		logf("dropped packet from %v: %v", from, err)
	}
	l.last = now
	l.suppressed = 0
}
