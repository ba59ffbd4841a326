// Package sender is keyrelay's send side: key events from a Source go into
// the balanced queue, and the whole queue goes out in one UDP packet to every
// destination on every event and every Interval (to a handshaken
// destination, abridged to what it has not acknowledged: PROTOCOL.md §3.3). Core is the protocol, with
// time passed in; Sender.Run is the loop around it that owns the socket, the
// source and the feedback readers, with one select and one timer. How keys
// are captured is the Source's business; sockets come in as a
// net.PacketConn, so the loop runs as well over loopback as over an
// in-memory network in virtual time.
package sender

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/netio/dgram"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// Defaults of Config.
const (
	DefaultQueueLen = 16
	DefaultInterval = 100 * time.Millisecond
	DefaultLinger   = 300 * time.Millisecond
)

// Source produces key events. Play calls emit for each key press (down) and
// release, in order, and returns when it has no more (nil), when ctx is done
// (ctx.Err()) or when emit fails (that error).
type Source interface {
	Play(ctx context.Context, emit func(key keys.Key, down bool) error) error
}

// LockSource is a Source that knows the lock state the receiver should
// have (keys.Locks: Caps Lock, Num Lock, and an epoch flipped each time
// relaying starts or resumes). Every packet carries it (PROTOCOL.md §3.2).
// Locks must be safe to call from another goroutine than Play's.
type LockSource interface {
	Locks() keys.Locks
}

// Writer sends datagrams; a net.PacketConn is one.
type Writer interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
}

// Config configures a Sender.
type Config struct {
	// Conn sends the packets; the Sender does not close it.
	Conn Writer
	// Dests receive every packet: each with its address (Dest.UDP) and,
	// when handshaken, the receiver's key. A broadcast or multicast
	// address is one-way whatever it says (one packet reaches many
	// receivers, each with its own keys: no handshake).
	Dests []Dest
	// QueueLen is N, the queue length (DefaultQueueLen if 0).
	QueueLen int
	// Interval is the resend period when no key moves (DefaultInterval if 0).
	Interval time.Duration
	// Linger is how long the final, all-released queue is resent before Run
	// returns, so that a lost final packet costs nothing (DefaultLinger if 0;
	// negative: no linger).
	Linger time.Duration
	// Session is the session id; 0 picks a random one.
	Session uint64
	// Identity is this machine's static key (handshaken destinations).
	Identity *identity.Identity
	// PSK is the key file's key: the optional second factor of handshaken
	// links, required by one-way destinations (CoreConfig.PSK).
	PSK []byte
	// Insecure sends plaintext, with no handshake (--insecure).
	Insecure bool
	// Feedback lists the sockets acks arrive on (usually the sending
	// sockets). Run reads them until it returns; the caller closes them
	// after. Empty: one-way, no feedback.
	Feedback []net.PacketConn
	// PeerTimeout: a receiver unheard this long is not live
	// (DefaultPeerTimeout if 0).
	PeerTimeout time.Duration
	// Outage: key events wait for a receiver unheard up to this long
	// (DefaultOutage if 0): typing through a shorter outage loses nothing.
	Outage time.Duration
	// Logf reports send errors (at most one line per destination and
	// error message). Nil: silent.
	Logf func(format string, args ...any)
	// Debug lets log lines name keys (send --debug; CoreConfig.Debug).
	Debug bool
	// Wait: Run plays the source only once every destination that can
	// answer has (Core.Unheard), waiting up to this long; past it, Run
	// returns a *NoAnswerError and nothing was typed anywhere (send
	// --wait). 0: the source plays at once.
	Wait time.Duration
	// StopWhenSilent: Run stops the source and returns a *SilentError
	// once a receiver heard before has been silent for Outage
	// (CoreConfig.StopWhenSilent): for a script, which plays on for no one.
	StopWhenSilent bool
	// Timer is the loop's one timer, stopped; Run closes it. Nil: a
	// runtime timer (time.AfterFunc). send gives a wake.Timer, which fires
	// through the network poller instead of the runtime's timers (package
	// wake says why).
	Timer Timer
}

// Timer is a one-shot timer for Run's loop (Config.Timer). Run sets, with
// OnFire, what each firing calls, before it arms the timer; the calls come
// on the timer's own goroutine, one at a time, and may call Reset. A call
// may come early, for a deadline from before a Reset: the loop then asks
// the core, which runs only what is due, and arms the timer again. Close
// waits for a call under way, if the timer can say when none is.
type Timer interface {
	OnFire(f func())
	Reset(d time.Duration)
	Close() error
}

// stdTimer is the Timer of a Config without one: a runtime timer whose
// function is OnFire's.
type stdTimer struct{ t *time.Timer }

func (s *stdTimer) OnFire(f func()) {
	s.t = time.AfterFunc(time.Hour, f)
	s.t.Stop()
}
func (s *stdTimer) Reset(d time.Duration) { s.t.Reset(d) }
func (s *stdTimer) Close() error          { s.t.Stop(); return nil }

// NoAnswerError is Run's error when a destination did not answer within
// Config.Wait: the source never played, no key went anywhere.
type NoAnswerError struct {
	Wait  time.Duration
	Addrs []string // the destinations that did not answer, as Dests name them
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("no answer from %s within %v: nothing was typed", strings.Join(e.Addrs, ", "), e.Wait)
}

// SilentError is Run's error when it stopped the source because a
// receiver heard before had been silent for Outage (Config.StopWhenSilent):
// the source did not play to its end.
type SilentError struct {
	Outage time.Duration
	Addrs  []string // the receivers silent that long, as Dests name them
}

func (e *SilentError) Error() string {
	return fmt.Sprintf("%s silent for %v (--outage): stopped before the end of the script, whose remaining keys were not sent", strings.Join(e.Addrs, ", "), e.Outage)
}

// Stats are what a Sender did.
type Stats struct {
	Events      int // key events from the source
	Queued      int // events the queue took
	Dropped     int // key-downs dropped because the queue was full of held keys
	Packets     int // packets sent (one packet to several destinations counts once)
	Bytes       int // bytes written, over all destinations
	SendErrors  int // failed writes
	Bursts      int // redundant re-sends after events
	Paced       int // packets held back from a silent receiver (PROTOCOL.md §9)
	Held        int // events that waited in the backlog for acks
	Overflow    int // events forced into the queue because the backlog was full
	GivenUp     int // events the end stopped waiting for acks of (Core.Stop): added without the wait
	Acks        int // acks applied
	AckErrors   int // feedback datagrams that were not a valid ack of this session
	Handshakes  int // handshakes completed: keypairs taken (PROTOCOL.md §8.3)
	Initiations int // handshake initiations sent
	Cookies     int // cookie replies taken (a receiver under load)
	Mismatched  int // version notices (and other packets of another protocol version) for this session, PROTOCOL.md §10
	Abridged    int // handshaken datagrams that carried only the events newer than what their receiver acknowledged (PROTOCOL.md §3.3)
}

// String is send's summary line. Bytes count the handshake's initiations
// too, which are not queue packets: they are named when there were any, so
// that "0 packets, 1328 bytes" to a receiver that never answered adds up.
func (s Stats) String() string {
	out := fmt.Sprintf("%d events (%d queued, %d dropped), %d packets, %d bytes, %d send errors, %d acks",
		s.Events, s.Queued, s.Dropped, s.Packets, s.Bytes, s.SendErrors, s.Acks)
	if s.Initiations > 0 {
		out += fmt.Sprintf(", %d handshake initiations", s.Initiations)
	}
	return out
}

// Sender runs one session: the thin loop around a Core. It is not safe
// for concurrent use, except for the status methods (Status, Peers,
// Pending, Final), which read what Run publishes after each step.
type Sender struct {
	cfg  Config
	core *Core

	bytes      int
	sendErrors int
	errSeen    map[string]bool

	// mu guards pub and, while Run runs, the core and what follows: Run's
	// loop and the timer's calls (fire) take turns at the core under it.
	mu      sync.Mutex
	pub     published
	timer   Timer
	armed   time.Time  // what timer is armed for; zero once it fired
	lockSrc LockSource // Run's source, if it knows the lock state
	ended   bool       // Run has left its loop: fire does nothing more
	// stale: a step of the core came since pub was copied, at steppedAt
	// (publish).
	stale     bool
	steppedAt time.Time
	kick      chan struct{} // fire tells Run's loop the core is done
	// silent is closed once the core named a receiver silent past Outage
	// (StopWhenSilent), at that step: a routing.Group stops its source for every
	// destination then, not when this sender's end is over.
	silent     chan struct{}
	silentSaid bool
}

// published is what the status methods report: a copy Run makes after
// each step, so they never touch the core.
type published struct {
	start   time.Time
	packets int
	held    []keys.Key
	pending int
	peers   []PeerStatus
	final   uint64
	// unanswered: destinations whose handshake has no answer yet (no key
	// goes to them, PROTOCOL.md §8.4).
	unanswered []LinkState
	// deliveries: the ledger's figures, once Run has returned.
	deliveries []Delivery
}

// New checks cfg and makes a Sender.
func New(cfg Config) (*Sender, error) {
	if cfg.Conn == nil {
		return nil, errors.New("sender: no connection")
	}
	if len(cfg.Dests) == 0 {
		return nil, errors.New("no destination: give at least one --to HOST:PORT")
	}
	if cfg.PeerTimeout == 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	s := &Sender{cfg: cfg, errSeen: map[string]bool{}, silent: make(chan struct{})}
	core, err := NewCore(CoreConfig{
		QueueLen: cfg.QueueLen, Interval: cfg.Interval, Linger: cfg.Linger,
		PeerTimeout: cfg.PeerTimeout, Outage: cfg.Outage, Session: cfg.Session, PSK: cfg.PSK,
		Identity: cfg.Identity, Insecure: cfg.Insecure,
		Feedback: len(cfg.Feedback) > 0, Dests: dests(cfg.Dests), Output: s.output, Logf: cfg.Logf, Debug: cfg.Debug,
		Wait: cfg.Wait, StopWhenSilent: cfg.StopWhenSilent,
	}, time.Now())
	if err != nil {
		return nil, err
	}
	s.core = core
	return s, nil
}

// NewSessionID returns a random non-zero 64-bit session id.
func NewSessionID() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("unable to pick a session id: %w", err)
		}
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id, nil
		}
	}
}

// Session is the session id packets carry.
func (s *Sender) Session() uint64 { return s.core.Session() }

// Silent is closed once the sender named a receiver silent past Outage
// (Config.StopWhenSilent), at that step rather than when its end is over,
// so that a routing.Group stops its source for every destination then.
func (s *Sender) Silent() <-chan struct{} { return s.silent }

// Silenced is every receiver whose silence past Outage stopped the sender
// (StopWhenSilent), and that Outage; none before Silent is closed.
func (s *Sender) Silenced() (addrs []string, outage time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Silenced(), s.core.cfg.Outage
}

type datagram struct {
	b    []byte
	from string
	at   time.Time
}

// readFeedback reads acks from pc into acks until pc fails (closed by the
// caller) or done is closed. The time of arrival is taken here, at the
// socket, for the RTT.
//
// It reads into buffers that outlast the acks in flight (acks' and the one
// the loop handles), each source's address made a string once: no
// allocation per ack.
func readFeedback(pc net.PacketConn, acks chan<- datagram, done <-chan struct{}) {
	rd := dgram.NewReader(pc, cap(acks)+1, wire.MaxPacketSize+1)
	for {
		b, from, err := rd.Read()
		if err != nil {
			return
		}
		d := datagram{b, from.S, time.Now()}
		select {
		case acks <- d:
		case <-done:
			return
		}
	}
}

// Run plays src into the core and sends, until src ends or ctx is done;
// then the core releases every held key and resends the final queue for
// Linger, and Run returns. A source that ends with an error is reported
// after the release: keys are never left held at the receiver by a failing
// source.
//
// The loop is the only place that reads the clock: each step tells the
// core the time, and one timer is armed for the core's Next deadline.
func (s *Sender) Run(ctx context.Context, src Source) (Stats, error) {
	lockSrc, _ := src.(LockSource)
	events := make(chan keyEvent)
	playCtx, stopPlay := context.WithCancel(ctx)
	defer stopPlay()
	// played is nil until the source plays: with Config.Wait, once every
	// destination answered.
	var played chan error
	play := func() {
		played = make(chan error, 1)
		go func() {
			played <- src.Play(playCtx, func(key keys.Key, down bool) error {
				select {
				case events <- keyEvent{key: key, down: down}:
					return nil
				case <-playCtx.Done():
					return playCtx.Err()
				}
			})
		}()
	}
	done := make(chan struct{})
	defer close(done)
	acks := make(chan datagram, 64)
	for _, pc := range s.cfg.Feedback {
		go readFeedback(pc, acks, done)
	}

	c := s.core
	s.lockSrc = lockSrc
	s.kick = make(chan struct{}, 1)
	s.timer = s.cfg.Timer
	if s.timer == nil {
		s.timer = &stdTimer{}
	}
	s.timer.OnFire(s.fire)
	defer s.timer.Close() // after the loop, without mu: Close waits for a call under way
	s.mu.Lock()
	now := time.Now()
	s.pub.start = now
	if lockSrc != nil {
		c.SetLocks(lockSrc.Locks())
	}
	c.Start(now) // announce the session at once
	s.stepped(now)
	s.mu.Unlock()
	var waited <-chan time.Time
	if s.cfg.Wait > 0 {
		w := time.NewTimer(s.cfg.Wait)
		defer w.Stop()
		waited = w.C
	} else {
		play()
	}
	stopping := ctx.Done()
	var srcErr error
	for {
		s.mu.Lock()
		done := c.Done()
		if !done && waited != nil && len(c.Unheard(nil)) == 0 {
			waited = nil
			play()
		}
		s.mu.Unlock()
		if done {
			break
		}
		select {
		case ev := <-events:
			s.mu.Lock()
			now = s.step(lockSrc)
			c.Key(ev.key, ev.down, now)
			s.stepped(now)
			s.mu.Unlock()
		case d := <-acks:
			s.mu.Lock()
			now = s.step(lockSrc)
			c.Ack(d.b, d.from, d.at)
			s.stepped(now)
			s.mu.Unlock()
		case <-s.kick:
			// The timer's call left the core done: the loop's head ends it.
		case srcErr = <-played:
			played = nil
			stopping = nil
			why := SourceEnded
			if srcErr != nil {
				why = Interrupted // the source failed: exit soon, named
			}
			s.mu.Lock()
			now = s.step(lockSrc)
			c.Stop(now, why)
			s.stepped(now)
			s.mu.Unlock()
		case <-waited:
			// Nothing played, so nothing was typed: no release is owed,
			// and the receivers that answered see a session that sent
			// nothing end.
			s.mu.Lock()
			s.ended = true
			err := &NoAnswerError{Wait: s.cfg.Wait, Addrs: c.Unheard(nil)}
			s.mu.Unlock()
			return s.stats(), err
		case <-stopping:
			if waited != nil {
				s.mu.Lock()
				s.ended = true
				s.mu.Unlock()
				return s.stats(), nil // stopped while waiting: nothing typed, nothing to release
			}
			stopping = nil
			stopPlay()
			srcErr = <-played
			played = nil
			s.mu.Lock()
			now = s.step(lockSrc)
			c.Stop(now, Interrupted)
			s.stepped(now)
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.ended = true
	s.publish() // the last copy: nothing steps the core any more
	s.pub.deliveries = c.Deliveries(s.pub.deliveries[:0])
	silenced := c.Silenced()
	s.mu.Unlock()
	if played != nil {
		// The core ended the session while the source played (a
		// receiver silent past Outage): stop it.
		stopPlay()
		<-played
	}
	if len(silenced) > 0 && srcErr == nil {
		return s.stats(), &SilentError{Outage: c.cfg.Outage, Addrs: silenced}
	}
	if errors.Is(srcErr, context.Canceled) && ctx.Err() != nil {
		srcErr = nil // stopped by the caller (a signal): a clean exit
	}
	return s.stats(), srcErr
}

// fire is the timer's call (Timer.OnFire): the core's due deadlines,
// run on the timer's goroutine under mu, so that a firing wakes that one
// goroutine and not Run's loop too (an idle sender's every resend,
// PROTOCOL.md §7). Run's loop hears of it only when it left the core done.
func (s *Sender) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.armed = time.Time{}
	now := s.step(s.lockSrc)
	s.core.Tick(now)
	s.stepped(now)
	if s.core.Done() {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// stepped follows each step of the core, under mu: it marks the status
// stale (publish), says a silence that stopped the core (silent), and arms
// the timer for the core's next deadline, unless it is armed for it
// already.
func (s *Sender) stepped(now time.Time) {
	s.stale, s.steppedAt = true, now
	if !s.silentSaid && len(s.core.Silenced()) > 0 {
		s.silentSaid = true
		close(s.silent)
	}
	if next := s.core.Next(); !next.Equal(s.armed) {
		s.timer.Reset(time.Until(next)) // from the clock now, not now's step: no drift by a step's length
		s.armed = next
	}
}

// step reads the clock and the source's lock state for one step of the
// core.
func (s *Sender) step(lockSrc LockSource) time.Time {
	if lockSrc != nil {
		s.core.SetLocks(lockSrc.Locks())
	}
	return time.Now()
}

// dests are the core's destinations: named by their address where they
// do not say; a broadcast or multicast address cannot take part in a
// handshake (one packet reaches many receivers, each with its own keys),
// so it is one-way (PROTOCOL.md §8.6).
func dests(in []Dest) []Dest {
	ds := make([]Dest, len(in))
	for i, d := range in {
		if d.Addr == "" && d.UDP != nil {
			d.Addr = d.UDP.String()
		}
		if ua, ok := d.UDP.(*net.UDPAddr); ok && transport.IsBroadcast(ua.IP) {
			d.OneWay = true
		}
		ds[i] = d
	}
	return ds
}

// output writes one packet to destination to: the core's Output.
func (s *Sender) output(b []byte, to int) {
	d := s.cfg.Dests[to].UDP
	n, err := s.cfg.Conn.WriteTo(b, d)
	s.bytes += n
	if err != nil {
		s.sendErrors++
		key := d.String() + err.Error()
		if !s.errSeen[key] {
			s.errSeen[key] = true
			s.logf("unable to send to %v: %v", d, err)
		}
	}
}

func (s *Sender) stats() Stats {
	st := s.core.Stats()
	st.Bytes = s.bytes
	st.SendErrors += s.sendErrors
	return st
}

func (s *Sender) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}
