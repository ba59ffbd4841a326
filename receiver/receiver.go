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
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/netio/dgram"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/transport"
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
	// Identity is this machine's static key: the receiver's end of every
	// handshake (PROTOCOL.md §8.3). Required unless Insecure.
	Identity *identity.Identity
	// Peer names a paired sender by its static key (the peers file): only
	// those get a handshake, and only their one-way packets, which their
	// identity signs, are taken (PROTOCOL.md §8.6). The receiver's own public key is accepted
	// besides, from this machine only (a loopback address, or one Local
	// names): it is this machine's own send (send and recv on one machine
	// share the identity: the demo, tests).
	Peer func(key [identity.KeyLen]byte) (name string, ok bool)
	// Local reports whether a source address (not loopback) is one of
	// this machine's own; nil: none is. recv asks the host's interfaces.
	Local func(addr netip.Addr) bool
	// Recheck reports whether the paired machines (what Peer answers)
	// may have changed since it was last asked: recv reads its peers
	// file again if the file changed. It is asked at most once per
	// RecheckInterval, while a handshaken session is live and before a
	// datagram is taken; when it says so, the sessions of senders no
	// longer paired are ended at once, their keys released and their
	// keypairs dropped (PROTOCOL.md §8.1). Nil: never.
	Recheck func(now time.Time) bool
	// PSK is the key file's key: the optional second factor of handshakes
	// (Noise psk2: the senders need the same one), and the key of one-way
	// sessions (required with OneWay).
	PSK []byte
	// OneWay accepts one-way sessions (recv --one-way; default false):
	// broadcast, multicast, send --one-way --feedback=false. Their only
	// replay defence is MaxSkew, and they are taken only from paired machines,
	// whose identity signs them (PROTOCOL.md §8.6); they are never acked.
	OneWay bool
	// Insecure accepts plaintext packets only (recv --insecure), and no
	// handshake.
	Insecure bool
	// Allow, if not empty, lists the source networks accepted; datagrams
	// from elsewhere are dropped before any decoding or crypto.
	Allow []netip.Prefix
	// MaxSkew bounds how far a one-way packet's wall clock may be from
	// ours (DefaultMaxSkew if 0): the defence against replaying a recorded
	// old one-way session (PROTOCOL.md §8.6).
	MaxSkew time.Duration
	// NoAcks turns feedback off: no ack packets are sent back.
	// Initiations are still answered: without that no handshaken session
	// can start.
	NoAcks bool
	// Debug lets log lines name keys (recv --debug): a key that failed to
	// type. Without, they give counts only, since the keys of a password
	// typed would be in the log.
	Debug bool
	// Logf reports what happens (new sessions, timeouts, rejects at a
	// bounded rate). Nil: silent.
	Logf func(format string, args ...any)
	// AckInterval is the least gap between two acks to one session
	// (MinAckInterval if 0). recv leaves it at that; only a measurement sets
	// it, to compare intervals on the same simulated link (make
	// measure-acks).
	AckInterval time.Duration
	// Timer is Run's one timer, stopped; Run closes it. Nil: a
	// time.Timer. recv gives a wake.Timer, which fires through the
	// network poller instead of the runtime's timers (package wake says
	// why).
	Timer Timer
}

// Timer is a one-shot timer for Run's loop (Config.Timer). Its C may give
// a value from before a Reset: the loop then calls Expire, which runs only
// what is due, and arms the timer again.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
	Close() error
}

// stdTimer is the Timer of a Config without one.
type stdTimer struct{ t *time.Timer }

func (s stdTimer) C() <-chan time.Time   { return s.t.C }
func (s stdTimer) Reset(d time.Duration) { s.t.Reset(d) }
func (s stdTimer) Stop()                 { s.t.Stop() }
func (s stdTimer) Close() error          { s.t.Stop(); return nil }

// Injector is what the receiver hands key events to (package inject's
// injectors are ones; relay/recv.go wires them). Inject is called from one
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

// Aimed is an Injector that can tell whether the key event it typed last
// reached an application (x11: whether a window had the keyboard focus;
// hidg: whether the USB host took the report; windows: whether a window
// was in the foreground). The receiver counts, per session, the events it
// sent that reached none, and its acks say so (PROTOCOL.md §9): send does
// not call them delivered. LastReached is called right after Inject, from
// the same goroutine, whether Inject succeeded or failed (but for
// sink.ErrGone and sink.ErrCannotType, which say enough).
type Aimed interface {
	LastReached() sink.Unreached
}

// Watched is an Injector that notices its backend going away on its own,
// between keys: Gone is closed then, and GoneErr (wrapping sink.ErrGone)
// says what went away. Run ends at once, not at the next key.
type Watched interface {
	Gone() <-chan struct{}
	GoneErr() error
}

// MinAckInterval bounds the acks sent to one session: at most one per
// interval; what arrives in between is covered by the next one (no storms),
// except a packet that typed something, acked at once (Receiver.ack): those
// come no faster than the keys typed. It is the sender's least burst gap
// (sender.MinBurstGap): a sender re-sends no faster, so coalescing for
// longer only holds back the ack that stops a burst: on a LAN (1 ms gaps)
// every re-send an ack held back lets go draws an ack of its own. Longer
// intervals type no sooner and send more (BENCHMARKS.md, Ack interval; make
// measure-acks).
const MinAckInterval = time.Millisecond

// IdleAckInterval bounds the acks sent to one session while nothing
// changes (PROTOCOL.md §9): one per interval keeps the sender's liveness
// fed (its --timeout, 2 s by default) at a tenth of the acks of answering
// every 100 ms resend. A packet with news is acked at once.
const IdleAckInterval = time.Second

// WallInterval is how often a session's acks give the receiver's wall
// clock (PROTOCOL.md §9): an ack gives it when the session's last ack that
// did is at least this old, or none did (its first ack), and says 0 (not
// given) otherwise: 1 byte instead of 6. The clock offset the sender
// works out from it drifts by milliseconds a day, and what it is for (a
// one-way sender's clock held to --max-skew, 30 s) needs no better; while
// typing (10 to 100 acks a second) one ack a second carries it, and idle
// acks, one a second, all do.
const WallInterval = time.Second

// BusyGap: a packet sent, by the sender's clock, sooner than this after the
// one before it is acked at once. An idle sender resends every --interval
// (100 ms by default); it sends faster only while it waits for an ack (a
// burst after an event, every 5 to 20 ms; events held back for acks; its
// final state while lingering, every 50 ms), and the ack is what ends the
// wait. A sender whose --interval is below BusyGap has every packet acked.
const BusyGap = 75 * time.Millisecond

// DefaultMaxSkew is the default Config.MaxSkew.
const DefaultMaxSkew = 30 * time.Second

// Stats are what a Receiver did. The rejects are counted by reason.
type Stats struct {
	Packets    int // datagrams read
	Accepted   int // packets applied
	Stale      int // packets not newer than their session's last one
	Malformed  int // packets that did not decode (size, magic, layout), or of a type a receiver does not read
	Mismatched int // keyrelay packets of another protocol version (PROTOCOL.md §10)
	NotAllowed int // datagrams from addresses outside Allow
	Forged     int // packets that did not authenticate, or of the wrong security mode
	Replayed   int // authenticated packets seen before (replay window)
	Skewed     int // authenticated one-way packets whose wall clock is too far from ours
	UnknownIdx int // sealed packets for an index no keypair here has (a restarted receiver's sender, a replay): dropped, not answered
	Refused    int // one-way packets refused (recv without --one-way; not signed, from an older sender), or for a handshaken session
	// UnpairedOneWay counts one-way packets signed by a machine not
	// paired here (PROTOCOL.md §8.6): a holder of the key file alone.
	UnpairedOneWay int
	Unbased        int // abridged packets that do not build on the session's previous queue (PROTOCOL.md §3.3): dropped, not acked
	// The handshake (PROTOCOL.md §8.3).
	Responses    int // handshakes answered (responses sent)
	Cookies      int // cookie replies sent (under load, an initiation without mac2)
	MAC1         int // initiations not addressed to this key (mac1)
	HandshakeBad int // initiations whose Noise message did not authenticate (another key file, forged)
	Unpaired     int // initiations from a sender not in the peers file
	Revoked      int // sessions ended because their sender was no longer paired
	ReplayedInit int // initiations not newer than one accepted from that peer
	Flood        int // initiations too frequent from one peer, or past the per-source answer limit
	Injected     int // key events given to the injector
	InjectErr    int // key events the injector failed
	NotTyped     int // key-downs the injector cannot type (sink.ErrCannotType): a character on uinput
	Nowhere      int // key events the sender sent that the injector typed into no application (Aimed)
	Sessions     int // sessions seen
	Ended        int // sessions that went silent holding no key (a sender's clean end)
	Timeouts     int // sessions that went silent holding keys: released here
	Acks         int // ack packets sent
	Notices      int // version notices sent (PROTOCOL.md §10)
}

func (s Stats) String() string {
	return fmt.Sprintf("%d packets (%d applied, %d stale, %d malformed, %d of another protocol version, %d forged, %d replayed, %d clock-skewed, %d for an unknown keypair, %d one-way refused, %d one-way from unpaired machines, %d not allowed, %d abridged without their base), %d handshakes answered (%d cookie replies; refused: %d mac1, %d not authenticating, %d unpaired, %d replayed, %d too frequent), %d sessions (%d ended, %d timed out holding keys, %d revoked), %d keys injected (%d failed, %d not typable here), %d acks sent, %d version notices sent",
		s.Packets, s.Accepted, s.Stale, s.Malformed, s.Mismatched, s.Forged, s.Replayed, s.Skewed, s.UnknownIdx, s.Refused, s.UnpairedOneWay, s.NotAllowed, s.Unbased,
		s.Responses, s.Cookies, s.MAC1, s.HandshakeBad, s.Unpaired, s.ReplayedInit, s.Flood,
		s.Sessions, s.Ended, s.Timeouts, s.Revoked, s.Injected, s.InjectErr, s.NotTyped, s.Acks, s.Notices)
}

// Receiver is the receive loop. Its methods are not safe for concurrent use:
// Run owns it until it returns.
type Receiver struct {
	cfg        Config
	locksNoted bool  // the injector's lack of lock setting was logged
	gone       error // the injector's backend went away (sink.ErrGone): Run stops
	sessions   map[uint64]*session
	bySource   map[sourceKey]*session // the newest session of each machine at each address
	osHeld     map[keys.Key]int       // how many live sessions hold each key
	stats      Stats
	pkt        wire.Queue
	rebuilder  eventqueue.Rebuilder // abridged packets' whole queues (PROTOCOL.md §3.3)
	ds         []eventqueue.Dispatch
	rejects    rejectLog
	refusals   refusalLog // one-way packets refused (no OneWay)
	unpaired   refusalLog // initiations from unpaired senders
	scratch    []byte
	opener     wire.Opener // opens one-way packets with no allocation
	ackBuf     []byte
	ackBody    []byte
	out        *transport.Writer // cfg.Conn's writes: acks, answers, notices
	since      time.Time         // when Run started listening (liveness.go)

	// The handshake (PROTOCOL.md §8.3, handshake.go): one responder for
	// every sender, the index of every keypair held, and the defences of
	// the answers.
	responder *handshake.Responder
	index     map[uint32]*session
	limiter   *handshake.RateLimiter
	load      loadMeter
	refused   [identity.KeyLen]byte // the key Paired refused last, for the log
	initFrom  netip.Addr            // the source of the initiation being answered
	recheckAt time.Time             // when Config.Recheck is next asked (trust.go)
	// The one-way key derived for the last new one-way session's packet,
	// so a new session's packets cost one derivation, not one each; and
	// likewise the last signer's key for its signatures.
	lastOneWay    cipher.AEAD
	lastOneWayID  uint64
	lastSigner    [identity.KeyLen]byte
	lastSignerKey ed25519.PublicKey
	signed        wire.Signed // who signed the one-way packet being opened
	// unpairedOneWay: one-way packets signed by machines not paired here,
	// logged once a minute; unsigned those of an older sender.
	unpairedOneWay refusalLog
	unsigned       refusalLog

	mu        sync.Mutex // guards status and versions
	status    []SessionStatus
	versions  versions // addresses of other protocol versions (version.go)
	published time.Time
	order     []*session // publish's scratch: the sessions in id order
	changed   bool       // held keys or liveness changed since published
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
	if cfg.AckInterval == 0 {
		cfg.AckInterval = MinAckInterval
	}
	if cfg.AckInterval < 0 {
		return nil, fmt.Errorf("ack interval %v is negative: want 0 (the default, %v) or more", cfg.AckInterval, MinAckInterval)
	}
	if cfg.PSK != nil && len(cfg.PSK) != wire.KeyLen {
		return nil, fmt.Errorf("pre-shared key is %d bytes, want %d", len(cfg.PSK), wire.KeyLen)
	}
	if cfg.OneWay && cfg.PSK == nil && !cfg.Insecure {
		return nil, errors.New("one-way senders (--one-way) need the key file (--key-file): their packets are sealed with it")
	}
	if cfg.Identity == nil && !cfg.Insecure {
		return nil, errors.New("receiver: no identity (--identity): it is this machine's end of every handshake")
	}
	r := &Receiver{
		cfg:      cfg,
		sessions: map[uint64]*session{},
		bySource: map[sourceKey]*session{},
		osHeld:   map[keys.Key]int{},
		index:    map[uint32]*session{},
		limiter:  handshake.NewRateLimiter(answersPerSecond, answersBurst, limiterSources),
		scratch:  make([]byte, 0, wire.MaxPacketSize),
		ackBuf:   make([]byte, 0, wire.MaxPacketSize),
		ackBody:  make([]byte, 0, wire.MaxPacketSize),
		out:      transport.NewWriter(cfg.Conn),
	}
	if cfg.Identity != nil {
		var psk [wire.KeyLen]byte
		copy(psk[:], cfg.PSK)
		r.responder = handshake.NewResponder(handshake.ResponderConfig{
			Private: [identity.KeyLen]byte(cfg.Identity.Private().Bytes()), PSK: psk,
			Paired: r.paired, IndexTaken: r.indexTaken, Random: rand.Reader,
		})
	}
	return r, nil
}

// Run receives until ctx is done, then releases every key it holds (cause
// Shutdown) and returns. It returns an error only if reading fails for
// another reason than ctx.
func (r *Receiver) Run(ctx context.Context) (Stats, error) {
	r.since = time.Now()
	// Closing the conn is what unblocks ReadFrom, so Run closes it however
	// it ends.
	defer r.cfg.Conn.Close()

	// One timer, armed for the next deadline Next names (a session's
	// timeout, a held-back ack): an idle receiver wakes only for a packet
	// or a deadline, not on a tick.
	check := r.cfg.Timer
	if check == nil {
		check = stdTimer{time.NewTimer(time.Hour)}
	}
	check.Stop()
	defer check.Close()
	var armed time.Time
	rearm := func() {
		next := r.Next()
		if next.Equal(armed) {
			return
		}
		if next.IsZero() {
			armed = next
			check.Stop()
			return
		}
		now := time.Now()
		// A live session's deadline, its allowance after the last packet
		// heard (PROTOCOL.md §7.2), moves later at each packet: an idle
		// sender's every 100 ms. A deadline armed no later than next and
		// at least halfway to it is kept: it may fire early, and then
		// Expire runs only what is due and rearm arms for next. So a
		// session heard steadily costs a timerfd_settime about once per
		// half its allowance, not at each datagram, and its timer fires
		// early only once it falls silent. A deadline that comes sooner
		// (an ack held back, §9) is armed at once.
		if !armed.IsZero() && !armed.After(next) && armed.Sub(now) >= next.Sub(now)/2 {
			return
		}
		armed = next
		check.Reset(next.Sub(now))
	}

	// The reader handles each datagram as it reads it, under mu, which Run's
	// own steps (a deadline, the end) take too: handing each one to Run
	// through a channel would wake a second goroutine per datagram, and with
	// it a select over every channel Run waits on, which for an idle
	// receiver (a datagram every 100 ms, on a cold cache) is a good part of
	// what each datagram costs (DESIGN.md, Packages). After stopped, the
	// reader handles nothing more: no key is pressed after ReleaseAll.
	var mu sync.Mutex
	stopped := false
	readErr := make(chan error, 1)
	goneErr := make(chan struct{}, 1) // the injector's backend went away in Handle
	// Read into buffers that outlast the datagram Handle has, with each
	// source's address made once: no allocation per datagram.
	rd := dgram.NewReader(r.cfg.Conn, 1, wire.MaxPacketSize+1)
	go func() {
		for {
			b, from, err := rd.Read()
			if err != nil {
				readErr <- err
				return
			}
			at := time.Now()
			mu.Lock()
			if stopped {
				mu.Unlock()
				return
			}
			r.Handle(b, from.Addr, at)
			if r.gone != nil {
				stopped = true
				goneErr <- struct{}{}
			} else {
				rearm()
			}
			mu.Unlock()
		}
	}()
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
		case <-goneErr:
			break loop
		case <-gone:
			mu.Lock()
			if r.gone == nil {
				r.gone = w.GoneErr()
			}
			mu.Unlock()
			break loop
		case <-check.C():
			mu.Lock()
			armed = time.Time{}
			r.Expire(time.Now()) // an early firing: Expire runs only what is due
			rearm()
			mu.Unlock()
		case err = <-readErr:
			if ctx.Err() != nil {
				err = nil // closed because we are stopping
			}
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	mu.Lock()
	defer mu.Unlock()
	stopped = true
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

// Handle applies one datagram received at now from from. Its header is
// parsed once, and the datagram dispatched on its type and flags; checks
// run cheapest first, and nothing about sessions changes before a packet
// has authenticated: allow-list, header and layout, the keypair its index
// names (or the one-way key), AEAD, wall clock (one-way), replay window,
// then staleness.
func (r *Receiver) Handle(b []byte, from net.Addr, now time.Time) {
	r.stats.Packets++
	if len(r.cfg.Allow) > 0 && !r.allowed(from) {
		r.stats.NotAllowed++
		r.rejects.note(r.cfg.Logf, now, from, errNotAllowed)
		return
	}
	r.recheck(now)
	m, err := handshake.Parse(b)
	if err != nil {
		if v, ok := wire.OtherVersion(b); ok {
			r.otherVersion(b, v, from, now) // PROTOCOL.md §10
			return
		}
		r.reject(err, from, now)
		return
	}
	switch m.Header.Type {
	case handshake.TypeInitiation:
		r.initiation(m.Initiation, from, now)
		return
	case handshake.TypeQueue:
	default:
		r.reject(fmt.Errorf("%w: %d is nothing a receiver reads", wire.ErrType, m.Header.Type), from, now)
		return
	}
	h := m.Header
	var s *session
	var k *handshake.Keypair
	switch {
	case m.OneWay == nil:
		s, k = r.openTransport(m.Transport, from, now)
	case h.Flags == wire.FlagOneWay:
		s = r.openPlain(b, h, from, now)
	default:
		s = r.openOneWay(b, h, from, now)
	}
	if s == nil {
		return
	}
	// An abridged packet is made whole from the session's previous queue
	// before anything about the session changes: one that does not build
	// on it must not start, replace or move the session, nor be acked as
	// received (its events would count delivered, PROTOCOL.md §9.1). A
	// stale one is dropped below as any stale packet.
	if r.pkt.Abridged && h.Counter > s.counter && !s.replaced && !r.rebuild(s, from, now) {
		return
	}
	// A session of a machine that took over its address is over: its
	// packets type nothing, and no ack says they arrived, so its sender
	// counts none of its keys delivered (PROTOCOL.md §9.1) and, hearing
	// nothing, handshakes again.
	if s.replaced {
		r.stats.Stale++
		return
	}
	// The address and the machine as a map key, not a string: a string
	// per datagram would be an allocation per datagram.
	src := sourceKey{keyOf(from), s.peer}
	if s.counter == 0 && r.bySource[src] != s {
		// A new session of a machine from an address ends that machine's
		// session there: the sender restarted, and its old keys must not
		// stay down. Only the same machine's: another paired machine
		// behind the same address (a NAT, a tunnel's end) keeps its own
		// session (PROTOCOL.md §7.2). The new session has authenticated
		// by now, and is as fresh as the one it replaces: a one-way
		// session (replayable within --max-skew) never ends a handshaken
		// one.
		if old := r.bySource[src]; old != nil && (s.mode == handshaken || old.mode != handshaken) {
			r.end(old, eventqueue.SessionEnd)
			old.replaced = true
			r.logf("session %016x from %s replaced by %016x of the same machine", old.id, from, s.id)
		}
		if r.bySource[s.key] == s {
			delete(r.bySource, s.key)
		}
		r.bySource[src], s.key = s, src
		if s.mode == handshaken {
			// Said at its first packet, not at the handshake: a sender
			// with another key file completes no handshake (Noise psk2
			// is checked by the sender, on the response), and types
			// nothing.
			r.logf("new session %016x from %s: %s", s.id, from, s.who)
		}
	}
	if !s.window.Accept(h.Counter) {
		r.stats.Replayed++
		return
	}
	s.from = from
	if h.Counter == s.window.Newest() {
		s.newestAt = now
		if k != nil {
			s.ackBy = k
		}
	}
	// UDP reorders and duplicates: an older queue would release keys that
	// are still held (DESIGN.md invariant 4). An older packet is no news
	// for the sender either: the next ack's bits show it arrived, which
	// tells the sender of no key (its ledger reads the stamp of the queue
	// applied, PROTOCOL.md §9.1) and keeps reordering from counting as
	// loss; the ack's newest stays the newest packet applied.
	if h.Counter <= s.counter {
		r.stats.Stale++
		r.late(s, h.Counter, now)
		r.ack(s, now, false, false)
		return
	}
	// Where a session's first packet starts typing: a handshaken session
	// says (Since, PROTOCOL.md §8.3); a one-way session that has run
	// longer than JoinAfter is joined: only the keys it holds are pressed.
	var since uint64
	switch {
	case s.counter != 0:
	case s.mode == handshaken:
		since = r.pkt.Since
	case time.Duration(r.pkt.Clock)*time.Millisecond > r.cfg.JoinAfter && len(r.pkt.Events) > 0:
		since = r.pkt.Events[0].Stamp
	}
	resumed := !s.live && s.counter != 0
	if resumed {
		r.logf("session %016x from %s is back", s.id, from)
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
	if l := r.pkt.Locks; l.Known() && (s.counter == 0 || l != s.locks) {
		r.setLocks(s, l)
		news = true
	} else if l.Known() && resumed {
		// The sender sampled l when relaying started; lock keys typed
		// since have toggled the OS, and want counts them.
		r.applyLocks(s, s.want)
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
	applied := len(r.ds) > 0 || s.tracker.Newest() != stamp
	r.ack(s, now, news || applied, applied)
}

// rebuild makes r.pkt's abridged queue whole (PROTOCOL.md §3.3): the
// events it carries, newer than its base, and the older ones of the
// queue the session applied last. It reports false, the packet counted
// and dropped, when the session has no previous queue the packet builds
// on: the sender abridges only to a base this receiver acknowledged under
// the keypair, so that happens only with a broken sender.
func (r *Receiver) rebuild(s *session, from net.Addr, now time.Time) bool {
	events, err := r.rebuilder.Rebuild(s.tracker.Previous(), r.pkt.N, r.pkt.Base, r.pkt.Events)
	if err != nil {
		r.stats.Unbased++
		r.rejects.note(r.cfg.Logf, now, from, fmt.Errorf("session %016x: %w", s.id, err))
		return false
	}
	r.pkt.Events = append(r.pkt.Events[:0], events...)
	r.pkt.Abridged, r.pkt.N, r.pkt.Base = false, 0, 0
	return true
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

// reject counts a packet that did not decode or authenticate, as forged
// (wrong key or security mode) or malformed, and logs it (rate limited).
func (r *Receiver) reject(err error, from net.Addr, now time.Time) {
	if errors.Is(err, wire.ErrUnsigned) {
		// An older sender's one-way packet: said once a minute, as it
		// resends ten times a second.
		r.stats.Refused++
		if r.unsigned.due(now) {
			r.logf("refused one-way packets from %v: %v; %d refused since last said", from, err, r.unsigned.take(now))
		}
		return
	}
	if errors.Is(err, wire.ErrAuth) || errors.Is(err, wire.ErrNotSealed) || errors.Is(err, wire.ErrSealed) {
		r.stats.Forged++
	} else {
		r.stats.Malformed++
	}
	r.rejects.note(r.cfg.Logf, now, from, err)
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
			if s.want.Known() {
				switch code {
				case keys.Key(keys.CapsLock):
					s.want ^= keys.LockCaps
				case keys.Key(keys.NumLock):
					s.want ^= keys.LockNum
				}
			}
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

// setLocks makes the OS lock state l, the sender's, through an injector
// that can.
func (r *Receiver) setLocks(s *session, l keys.Locks) {
	s.locks, s.want = l, l
	r.applyLocks(s, l)
}

// applyLocks makes the OS lock state l, through an injector that can.
func (r *Receiver) applyLocks(s *session, l keys.Locks) {
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
		r.noteReached(k)
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
		// A failed event may have gone nowhere for a reason the sender
		// must hear of (hidg: no USB host takes the reports).
		r.noteReached(k)
		if r.cfg.Debug {
			r.logf("unable to inject %v: %v", k.Key, err)
		} else {
			// The error may name the key too (robotgo's does).
			r.logf("unable to inject a key event (%d failed so far; recv --debug names the key and why)", r.stats.InjectErr)
		}
	}
}

// noteReached counts k, an event of the sender's queue just given to the
// injector, against its session when an Aimed injector says it reached
// no application: the session's acks carry the count and why
// (PROTOCOL.md §9).
func (r *Receiver) noteReached(k sink.Event) {
	a, ok := r.cfg.Injector.(Aimed)
	if !ok || k.Cause != eventqueue.Sent {
		return
	}
	why := a.LastReached()
	if why == sink.Reached {
		return
	}
	r.stats.Nowhere++
	if s := r.sessions[k.Session]; s != nil {
		s.nowhere++
		s.why = why
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
	logf("refused one-way packets (no handshake): %d since last said, the latest from %v; a broadcast, multicast or send --one-way --feedback=false sender; recv --one-way accepts them, off by default because a recording of a one-way session can be typed again here within --max-skew of when it was made (PROTOCOL.md §8.6)", l.count, from)
	l.last = now
	l.count = 0
}

// due reports whether a refusal at now is to be logged (at most once per
// refusalInterval); it counts it either way.
func (l *refusalLog) due(now time.Time) bool {
	l.count++
	return l.last.IsZero() || now.Sub(l.last) >= refusalInterval
}

// take returns how many were refused since last logged, and restarts the
// count at now.
func (l *refusalLog) take(now time.Time) int {
	n := l.count
	l.last, l.count = now, 0
	return n
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
