// Package sender is keyrelay's send loop: key events from a Source go into
// the balanced queue, and the whole queue goes out in one UDP packet to every
// destination on every event and every Interval. How keys are captured is the
// Source's business; sockets come in as a net.PacketConn, so the loop runs as
// well over loopback as over an in-memory network in virtual time.
package sender

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
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

// SwitchSource is a Source that switches between relaying and local use
// (send --grab and its hotkey); Relaying must be safe to call from another
// goroutine than Play's.
type SwitchSource interface {
	Relaying() bool
}

// Writer sends datagrams; a net.PacketConn is one.
type Writer interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
}

// Config configures a Sender.
type Config struct {
	// Conn sends the packets; the Sender does not close it.
	Conn Writer
	// Dests receive every packet.
	Dests []net.Addr
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
	// PSK is the pre-shared key that seals every packet (PROTOCOL.md §8);
	// nil sends plaintext (--insecure).
	PSK []byte
	// Feedback lists the sockets acks arrive on (usually the sending
	// sockets). Run reads them until it returns; the caller closes them
	// after. Empty: one-way, no feedback.
	Feedback []net.PacketConn
	// PeerTimeout: a receiver unheard this long is not live
	// (DefaultPeerTimeout if 0).
	PeerTimeout time.Duration
	// Logf reports send errors (at most one line per destination and
	// error message). Nil: silent.
	Logf func(format string, args ...any)
}

// Stats are what a Sender did.
type Stats struct {
	Events     int // key events from the source
	Queued     int // events the queue took
	Dropped    int // key-downs dropped because the queue was full of held keys
	Packets    int // packets sent (one packet to several destinations counts once)
	Bytes      int // bytes written, over all destinations
	SendErrors int // failed writes
	Bursts     int // redundant re-sends after events
	Held       int // events that waited in the backlog for acks
	Overflow   int // events forced into the queue because the backlog was full
	Acks       int // acks applied
	AckErrors  int // feedback datagrams that were not a valid ack of this session
}

func (s Stats) String() string {
	return fmt.Sprintf("%d events (%d queued, %d dropped), %d packets, %d bytes, %d send errors, %d acks",
		s.Events, s.Queued, s.Dropped, s.Packets, s.Bytes, s.SendErrors, s.Acks)
}

// Sender owns one session's queue. It is not safe for concurrent use: Run
// owns it until it returns.
type Sender struct {
	cfg     Config
	aead    cipher.AEAD // nil: plaintext
	ackAEAD cipher.AEAD // opens acks (receiver-to-sender key)

	mu         sync.Mutex // guards peers and the published status
	pubPackets int
	pubHeld    []keys.Key
	peers      map[string]*peer
	sent       [sentRing]sentRecord
	ackScratch []byte
	acks       chan datagram

	backlog     []keyEvent
	lockSrc     LockSource    // nil: the source cannot tell (locks unknown)
	final       atomic.Uint64 // the counter of the final packet (all keys up), once sent
	pending     atomic.Int64  // len(backlog), for Pending
	burst       *time.Timer
	bursting    bool      // the burst timer is armed
	burstTarget uint64    // the first packet carrying the newest event
	burstUntil  time.Time // the regular tick takes over then
	queue       *eventqueue.Queue
	pkt         wire.Queue
	buf         []byte
	start       time.Time
	stats       Stats
	errSeen     map[string]bool
}

// New checks cfg and makes a Sender.
func New(cfg Config) (*Sender, error) {
	if cfg.Conn == nil {
		return nil, errors.New("sender: no connection")
	}
	if len(cfg.Dests) == 0 {
		return nil, errors.New("no destination: give at least one --to HOST:PORT")
	}
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
		cfg.Session, err = NewSessionID()
		if err != nil {
			return nil, err
		}
	}
	s := &Sender{cfg: cfg, queue: q, errSeen: map[string]bool{}, peers: map[string]*peer{}, acks: make(chan datagram, 64)}
	if cfg.PSK != nil {
		if s.aead, err = wire.SessionAEAD(cfg.PSK, cfg.Session, wire.SenderToReceiver); err != nil {
			return nil, err
		}
		if s.ackAEAD, err = wire.SessionAEAD(cfg.PSK, cfg.Session, wire.ReceiverToSender); err != nil {
			return nil, err
		}
	}
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
func (s *Sender) Session() uint64 { return s.cfg.Session }

type keyEvent struct {
	key  keys.Key
	down bool
}

type datagram struct {
	b    []byte
	from net.Addr
	at   time.Time
}

// readFeedback reads acks from pc into s.acks until pc fails (closed by the
// caller) or done is closed.
func (s *Sender) readFeedback(pc net.PacketConn, done <-chan struct{}) {
	buf := make([]byte, wire.MaxPacketSize+1)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		d := datagram{append([]byte(nil), buf[:n]...), from, time.Now()}
		select {
		case s.acks <- d:
		case <-done:
			return
		}
	}
}

func (s *Sender) applyAck(d datagram) {
	if err := s.handleAck(d.b, d.from, d.at); err != nil {
		s.stats.AckErrors++
		return
	}
	s.stats.Acks++
}

// Run plays src into the queue and sends, until src ends or ctx is done;
// then it releases every held key, resends the final queue for Linger and
// returns. A source that ends with an error is reported after the release:
// keys are never left held at the receiver by a failing source.
func (s *Sender) Run(ctx context.Context, src Source) (Stats, error) {
	s.start = time.Now()
	s.lockSrc, _ = src.(LockSource)
	events := make(chan keyEvent)
	playCtx, stopPlay := context.WithCancel(ctx)
	defer stopPlay()
	played := make(chan error, 1)
	go func() {
		played <- src.Play(playCtx, func(key keys.Key, down bool) error {
			select {
			case events <- keyEvent{key, down}:
				return nil
			case <-playCtx.Done():
				return playCtx.Err()
			}
		})
	}()

	done := make(chan struct{})
	defer close(done)
	for _, pc := range s.cfg.Feedback {
		go s.readFeedback(pc, done)
	}
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	s.burst = time.NewTimer(time.Hour)
	s.burst.Stop()
	defer s.burst.Stop()
	s.send() // announce the session at once
	var srcErr error
loop:
	for {
		select {
		case ev := <-events:
			s.add(ev.key, ev.down)
		case <-tick.C:
			s.send()
			s.drain() // a receiver may have stopped being live
		case <-s.burst.C:
			s.burstStep()
		case d := <-s.acks:
			s.applyAck(d)
			s.drain()
		case srcErr = <-played:
			break loop
		case <-ctx.Done():
			stopPlay()
			srcErr = <-played
			break loop
		}
	}
	if errors.Is(srcErr, context.Canceled) && ctx.Err() != nil {
		srcErr = nil // stopped by the caller (a signal): a clean exit
	}
	s.flushBacklog(tick)
	s.releaseAll()
	s.linger(tick)
	return s.stats, srcErr
}

// add takes one key event from the source: into the queue, or into the
// backlog while that would push out an event a live receiver has not
// applied yet (lossless typing, backlog.go).
func (s *Sender) add(key keys.Key, down bool) {
	s.stats.Events++
	ev := keyEvent{key, down}
	if len(s.backlog) > 0 || !s.mayAdd(ev) {
		s.hold(ev)
		return
	}
	s.addNow(ev)
}

// event stamps ev for the queue.
func (s *Sender) event(ev keyEvent) eventqueue.Event {
	e := eventqueue.Event{Key: ev.key, Kind: eventqueue.Up, Stamp: s.queue.NextStamp(s.clock())}
	if ev.down {
		e.Kind = eventqueue.Down
	}
	return e
}

// addNow puts one key event in the queue and sends the queue if it changed.
func (s *Sender) addNow(ev keyEvent) {
	code := ev.key
	r, err := s.queue.Add(s.event(ev))
	switch {
	case err != nil:
		// The source gave a zero key; nothing to send.
		s.logf("ignored key event: %v", err)
	case r == eventqueue.Added:
		s.stats.Queued++
		s.send()
		s.startBurst()
	case r == eventqueue.Dropped:
		s.stats.Dropped++
		s.logf("queue full of held keys: %v press dropped (raise --queue)", code)
	}
}

// releaseAll adds a key-up for every held key: the all-up state a clean exit
// must leave at the receiver (DESIGN.md invariant 6).
func (s *Sender) releaseAll() {
	for _, c := range s.queue.HeldKeys(nil) {
		s.stats.Events++
		s.addNow(keyEvent{c, false})
	}
}

// linger resends the final queue until Linger has passed and every live
// receiver has acknowledged it (or, with feedback but no receiver heard
// yet, until the first PeerTimeout is over): a receiver in a short outage
// still gets the all-released state. It gives up PeerTimeout after Linger.
func (s *Sender) linger(tick *time.Ticker) {
	if s.cfg.Linger < 0 {
		s.final.Store(uint64(s.stats.Packets)) // releaseAll sent it
		return
	}
	period := min(s.cfg.Interval, 50*time.Millisecond)
	tick.Reset(period)
	minEnd := time.NewTimer(s.cfg.Linger)
	defer minEnd.Stop()
	maxEnd := time.NewTimer(s.cfg.Linger + s.cfg.PeerTimeout)
	defer maxEnd.Stop()
	s.send()
	final := uint64(s.stats.Packets)
	s.final.Store(final)
	lingered := false
	for {
		select {
		case <-tick.C:
			s.send()
		case d := <-s.acks:
			s.applyAck(d)
		case <-minEnd.C:
			lingered = true
		case <-maxEnd.C:
			return
		}
		if lingered && !s.awaitingAck(final) {
			return
		}
	}
}

// Final is the counter of the packet that carried the final state (every
// key released) once Run has sent it, 0 before. A receiver whose Newest
// (PeerStatus) reached it acknowledged that state: for a script, that
// everything was delivered.
func (s *Sender) Final() uint64 { return s.final.Load() }

// awaitingAck reports whether a live receiver (or, with feedback, one
// assumed during the first PeerTimeout) has not acked counter yet.
func (s *Sender) awaitingAck(counter uint64) bool {
	if _, live := s.minAcked(); !live {
		return false
	}
	return !s.allAcked(counter)
}

// clock is the session clock in milliseconds.
func (s *Sender) clock() uint64 {
	return uint64(time.Since(s.start) / time.Millisecond)
}

// send encodes the queue once and writes it to every destination.
func (s *Sender) send() {
	s.pkt.Header = wire.Header{Type: wire.TypeQueue, Session: s.cfg.Session, Counter: uint64(s.stats.Packets) + 1}
	s.pkt.Clock = s.clock()
	s.pkt.Wall = uint64(time.Now().UnixMilli())
	if s.lockSrc != nil {
		s.pkt.Locks = s.lockSrc.Locks()
	}
	s.pkt.Events = s.queue.Events()
	var b []byte
	var err error
	if s.aead != nil {
		b, err = s.pkt.AppendSealed(s.buf[:0], s.aead)
	} else {
		b, err = s.pkt.Append(s.buf[:0])
	}
	if err != nil {
		// The queue always encodes (New checks its length); if it ever did
		// not, sending nothing is safer than sending garbage.
		s.stats.SendErrors++
		s.logf("unable to encode the queue: %v", err)
		return
	}
	s.buf = b
	s.stats.Packets++
	s.recordSent(s.pkt.Header.Counter, time.Now())
	s.publish()
	for _, d := range s.cfg.Dests {
		n, err := s.cfg.Conn.WriteTo(b, d)
		s.stats.Bytes += n
		if err != nil {
			s.stats.SendErrors++
			key := d.String() + err.Error()
			if !s.errSeen[key] {
				s.errSeen[key] = true
				s.logf("unable to send to %v: %v", d, err)
			}
		}
	}
}

func (s *Sender) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}
