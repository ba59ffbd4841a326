package pair

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// Defaults of Options.
const (
	DefaultTimeout       = 2 * time.Minute
	DefaultAnswerTimeout = 15 * time.Second
	DefaultLinger        = 5 * time.Second
	DefaultRetryMin      = 200 * time.Millisecond
	DefaultRetryMax      = time.Second
)

// finalCopies is how many times the confirm that ends a side is sent.
const finalCopies = 2

// Errors the core ends with; the runner wraps them with what the person
// can do about them.
var (
	// ErrRejected: a person said no on either side: nothing is stored.
	ErrRejected = errors.New("pairing rejected")
	// ErrCommitment: Nb does not hash to the commitment Cb made before Na
	// was sent: a man in the middle, or a bug.
	ErrCommitment = errors.New("the other side's nonce does not match its commitment (a man in the middle, or a bug): nothing was paired")
	// ErrNoAnswer: the dialer's hello got no answer within AnswerTimeout.
	ErrNoAnswer = errors.New("no answer to the pairing request")
	// ErrTimeout: the exchange, or the person, took longer than Timeout.
	ErrTimeout = errors.New("pairing timed out")
	// ErrRecv: a keyrelay recv answered the hello with a version notice
	// (PROTOCOL.md §10): recv, not `keyrelay pair`, has the port.
	ErrRecv = errors.New("a keyrelay recv answers there, not `keyrelay pair`")
	// ErrSameKey: both sides have the same identity key.
	ErrSameKey = errors.New("both machines have the same identity key")
	// ErrPeerKey: the other side's public key gives no shared secret (a
	// low-order point): no confirm of it could be authenticated.
	ErrPeerKey = errors.New("the other machine's public key is unusable (a low-order point): nothing was paired")
)

// DH is this machine's half of the static-static Diffie-Hellman that keys
// the confirms' MACs: X25519 of its identity's private key and the peer's
// public key (identity.Identity's DH). An error (a low-order peer key)
// ends the pairing.
type DH func(peer [KeyLen]byte) ([KeyLen]byte, error)

// Options tune a pairing. Zero fields take the defaults above.
type Options struct {
	// Timeout bounds the whole pairing, the wait for the people included.
	Timeout time.Duration
	// AnswerTimeout bounds the dialer's wait for the first answer.
	AnswerTimeout time.Duration
	// Linger is how long a side that knows the outcome keeps resending
	// its answer until the other side says it has it.
	Linger time.Duration
	// RetryMin and RetryMax bound the resend backoff.
	RetryMin, RetryMax time.Duration
	// Accept, if set, is the only sources a listener takes a hello from
	// (the others are ignored and counted as OtherAddress): `keyrelay
	// pair --scripted --from ADDR`, where no person watches who asks.
	Accept func(from string) bool
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, DefaultTimeout)
	def(&o.AnswerTimeout, DefaultAnswerTimeout)
	def(&o.Linger, DefaultLinger)
	def(&o.RetryMin, DefaultRetryMin)
	def(&o.RetryMax, DefaultRetryMax)
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	return o
}

// Phase is where a pairing stands, for the runner's status lines.
type Phase uint8

const (
	// Waiting: the listener waits for a hello, the dialer for the
	// listener's answers (steps 1 to 4).
	Waiting Phase = iota
	// Comparing: the code is known; the person here has not answered.
	Comparing
	// AwaitingPeer: the person here said yes; the other side's answer is
	// not known yet.
	AwaitingPeer
	// Finishing: the outcome is known; the core makes sure the other side
	// knows it too (or Linger passes).
	Finishing
	// Done: Result holds the outcome.
	Done
)

// Stats count the datagrams a core ignored, by reason.
type Stats struct {
	// Malformed: not a pairing message of this version (Parse failed).
	Malformed int
	// OtherPairing: a message for another pairing id, or a second hello
	// once the listener is taken.
	OtherPairing int
	// OtherAddress: from an address other than the peer's.
	OtherAddress int
	// Unexpected: a well-formed message at a step where it means nothing,
	// or one that contradicts what the peer said before.
	Unexpected int
	// Forged: a confirm whose MAC is not the peer's: changed on the way,
	// or made by someone else.
	Forged int
}

// Ignored is the total of s.
func (s Stats) Ignored() int {
	return s.Malformed + s.OtherPairing + s.OtherAddress + s.Unexpected + s.Forged
}

type state uint8

const (
	awaitHello  state = iota // listener: nothing heard yet
	awaitCommit              // dialer: hello sent
	awaitNonce               // listener: commit sent
	awaitReveal              // dialer: Na sent
	confirming               // both: code known
	finished
)

// Core is one side of a pairing with no clock, socket or goroutine of its
// own: it is told datagrams (Handle), the person's answer (Answer) and the
// time (Tick), queues what to send (Take), and says when it next needs a
// call (Next). Listen and Dial are the loops around it. Not safe for
// concurrent use.
type Core struct {
	opts   Options
	rand   io.Reader
	dh     DH
	dialer bool
	self   Info
	peer   Info
	id     [IDLen]byte
	state  state
	// peerAddr is where the peer's datagrams come from: the dialer is told,
	// the listener takes the first hello's source.
	peerAddr string

	na, nb  [NonceLen]byte
	commit  [32]byte
	code    string
	macKey  [32]byte // the confirms' MAC key, once confirming
	commitB []byte   // the commit the listener sent (resent to duplicates)
	revealB []byte   // the reveal the listener sent

	mine, theirs Answer // 0 while unknown
	peerHasMine  bool

	out      [][]byte
	pending  []byte // resent until answered
	retryAt  time.Time
	backoff  time.Duration
	deadline time.Time // Timeout
	answerBy time.Time // dialer: AnswerTimeout
	lingerBy time.Time // Finishing: Linger

	err   error
	stats Stats
}

// NewDialer starts the side that asks (A, `keyrelay pair HOST`) at now: it
// draws the pairing id and Na from rnd and queues the hello to peerAddr.
// dh is self's half of the Diffie-Hellman that keys the confirms.
func NewDialer(self Info, dh DH, peerAddr string, rnd io.Reader, now time.Time, opts Options) (*Core, error) {
	c, err := newCore(self, dh, rnd, now, opts)
	if err != nil {
		return nil, err
	}
	c.dialer = true
	c.peerAddr = peerAddr
	c.state = awaitCommit
	if _, err := io.ReadFull(rnd, c.id[:]); err != nil {
		return nil, fmt.Errorf("unable to draw the pairing id: %w", err)
	}
	if _, err := io.ReadFull(rnd, c.na[:]); err != nil {
		return nil, fmt.Errorf("unable to draw Na: %w", err)
	}
	c.answerBy = now.Add(c.opts.AnswerTimeout)
	c.sendPending(now, &Message{Step: StepHello, ID: c.id, Info: self})
	return c, nil
}

// NewListener starts the side that waits (B, `keyrelay pair`) at now. Nb
// is drawn from rnd when a hello arrives. dh is self's half of the
// Diffie-Hellman that keys the confirms.
func NewListener(self Info, dh DH, rnd io.Reader, now time.Time, opts Options) (*Core, error) {
	c, err := newCore(self, dh, rnd, now, opts)
	if err != nil {
		return nil, err
	}
	c.state = awaitHello
	return c, nil
}

func newCore(self Info, dh DH, rnd io.Reader, now time.Time, opts Options) (*Core, error) {
	if err := self.Check(); err != nil {
		return nil, fmt.Errorf("this machine's pairing info: %w", err)
	}
	if dh == nil {
		return nil, errors.New("no Diffie-Hellman for this machine's key: confirms could not be authenticated")
	}
	c := &Core{opts: opts.withDefaults(), rand: rnd, dh: dh, self: self}
	c.deadline = now.Add(c.opts.Timeout)
	return c, nil
}

// Handle takes one datagram b received from the address from at now.
// Anything that is not the next step of this pairing from its peer is
// ignored and counted (Stats).
func (c *Core) Handle(now time.Time, b []byte, from string) {
	if c.state == finished {
		return
	}
	if c.peerAddr != "" && from != c.peerAddr {
		c.stats.OtherAddress++
		return
	}
	var m Message
	if err := Parse(b, &m); err != nil {
		if c.dialer && c.recvAnswered(b) {
			return
		}
		c.stats.Malformed++
		return
	}
	if c.state == awaitHello {
		if c.opts.Accept != nil && !c.opts.Accept(from) {
			c.stats.OtherAddress++
			return
		}
		c.hello(now, &m, from)
		return
	}
	if m.ID != c.id {
		c.stats.OtherPairing++
		return
	}
	switch m.Step {
	case StepHello:
		// A hello resent before our commit reached the dialer.
		if !c.dialer && m.Info == c.peer {
			c.out = append(c.out, c.commitB)
			return
		}
	case StepCommit:
		if c.dialer {
			c.commitMsg(now, &m)
			return
		}
	case StepNonce:
		if !c.dialer {
			c.nonce(now, &m)
			return
		}
	case StepReveal:
		if c.dialer && c.state == awaitReveal {
			c.reveal(now, &m)
			return
		}
	case StepConfirm:
		if c.state == confirming {
			c.confirm(now, &m)
			return
		}
	}
	c.stats.Unexpected++
}

// recvAnswered reports whether b is a version notice answering the hello
// (PROTOCOL.md §10: it echoes bytes 6–21, where the pairing id is), and
// if so ends the pairing: a recv has the port.
func (c *Core) recvAnswered(b []byte) bool {
	var n wire.Notice
	if c.state != awaitCommit || !wire.IsNotice(b) || wire.ParseNotice(b, &n) != nil {
		return false
	}
	var echo [IDLen]byte
	binary.BigEndian.PutUint64(echo[:8], n.Session)
	binary.BigEndian.PutUint64(echo[8:], n.Counter)
	if echo != c.id {
		return false
	}
	c.fail(fmt.Errorf("%w (it speaks protocol version %d)", ErrRecv, n.Version))
	return true
}

// hello: step 1 at the listener. The first valid hello takes the listener:
// its address and pairing id are the only ones heard from then on.
func (c *Core) hello(now time.Time, m *Message, from string) {
	if m.Step != StepHello {
		c.stats.Unexpected++
		return
	}
	if _, err := io.ReadFull(c.rand, c.nb[:]); err != nil {
		c.fail(fmt.Errorf("unable to draw Nb: %w", err))
		return
	}
	c.id, c.peer, c.peerAddr = m.ID, m.Info, from
	c.commit = commitment(c.id, m.Info, c.self, c.nb)
	b, err := (&Message{Step: StepCommit, ID: c.id, Info: c.self, Commit: c.commit}).Append(nil)
	if err != nil {
		c.fail(err) // cannot happen: self passed Check
		return
	}
	c.commitB = b
	c.out = append(c.out, b)
	c.state = awaitNonce
	if m.Info.Key == c.self.Key {
		// The commit, sent anyway, tells the dialer too.
		c.fail(ErrSameKey)
	}
}

// commitMsg: step 2 at the dialer.
func (c *Core) commitMsg(now time.Time, m *Message) {
	switch {
	case c.state == awaitCommit:
		if m.Info.Key == c.self.Key {
			c.fail(ErrSameKey)
			return
		}
		c.peer, c.commit = m.Info, m.Commit
		c.state = awaitReveal
		c.sendPending(now, &Message{Step: StepNonce, ID: c.id, Nonce: c.na})
	case c.state == awaitReveal && m.Info == c.peer && m.Commit == c.commit:
		// The listener answered a resent hello: our Na may have been lost.
		c.out = append(c.out, c.pending)
	default:
		// A second, different commit for the same pairing: the first
		// stands, or a man in the middle could commit after seeing Na.
		c.stats.Unexpected++
	}
}

// nonce: step 3 at the listener. Only the first Na counts: revealing Nb
// for a second Na would let the dialer's side choose among codes.
func (c *Core) nonce(now time.Time, m *Message) {
	switch {
	case c.state == awaitNonce:
		c.na = m.Nonce
		b, _ := (&Message{Step: StepReveal, ID: c.id, Nonce: c.nb}).Append(nil)
		c.revealB = b
		c.out = append(c.out, b)
		c.startConfirming(now)
	case m.Nonce == c.na:
		c.out = append(c.out, c.revealB) // our reveal was lost
	default:
		c.stats.Unexpected++
	}
}

// reveal: step 4 at the dialer: Nb must open Cb.
func (c *Core) reveal(now time.Time, m *Message) {
	if commitment(c.id, c.self, c.peer, m.Nonce) != c.commit {
		c.abort(now, ErrCommitment)
		return
	}
	c.nb = m.Nonce
	c.pending = nil
	c.startConfirming(now)
}

// startConfirming works out the code and the confirms' MAC key, both
// from the whole exchange (package doc).
func (c *Core) startConfirming(now time.Time) {
	a, b := c.self, c.peer
	if !c.dialer {
		a, b = b, a
	}
	shared, err := c.dh(c.peer.Key)
	if err != nil {
		c.abort(now, fmt.Errorf("%w (%v)", ErrPeerKey, err))
		return
	}
	c.code = Code(c.id, a, b, c.na, c.nb)
	c.macKey = ConfirmKey(shared, c.id, a, b, c.na, c.nb)
	c.state = confirming
}

// confirm: step 5, either side. A yes counts only with the peer's MAC: a
// confirm without it is ignored and counted, as the answer it carries was
// not given there. A no ends the pairing with or without it (what it says
// of have is then not taken): it can only keep both sides from storing,
// which anyone on the path can do by dropping datagrams, and a side that
// caught a changed exchange (ErrCommitment) has no key the other shares.
func (c *Core) confirm(now time.Time, m *Message) {
	if !hmac.Equal(m.MAC[:], c.confirmMAC(!c.dialer, m)) {
		c.stats.Forged++
		if m.Answer == Yes {
			return
		}
		m.Have = HaveNone
	}
	if m.Have != HaveNone && c.mine == 0 {
		// The peer cannot have an answer not given yet.
		c.stats.Unexpected++
		return
	}
	if c.theirs != 0 && m.Answer != c.theirs {
		c.stats.Unexpected++
		return
	}
	c.theirs = m.Answer
	if m.Have != HaveNone {
		c.peerHasMine = true
	}
	if c.theirs == No && c.mine == 0 {
		// The pairing is off whatever the person here says: answer no
		// for them, resent as any answer, so the other side learns it
		// was heard.
		c.mine = No
		c.sendPending(now, nil)
	} else if c.mine != 0 && m.Have != HaveBoth {
		b := c.confirmMsg()
		c.out = append(c.out, b)
		if c.peerHasMine && c.theirs != 0 {
			// Our last word (HaveBoth) ends us; the peer waits Linger for
			// it if it is lost, so it goes twice: at 30 % loss the peer
			// then waits in 9 % of pairings (both lost), not 30 %.
			for range finalCopies - 1 {
				c.out = append(c.out, b)
			}
		}
	}
	c.progress(now)
}

// Answer gives the person's answer at now: yes when they saw the same code
// on both machines. Only the first answer counts.
func (c *Core) Answer(now time.Time, yes bool) {
	if c.state != confirming || c.mine != 0 {
		return
	}
	c.mine = No
	if yes {
		c.mine = Yes
	}
	c.progress(now)
	if c.state == confirming {
		c.sendPending(now, nil)
	}
}

func (c *Core) confirmMsg() []byte {
	have := HaveNone
	if c.theirs != 0 {
		have = HaveYours
		if c.peerHasMine {
			have = HaveBoth
		}
	}
	m := Message{Step: StepConfirm, ID: c.id, Answer: c.mine, Have: have}
	copy(m.MAC[:], c.confirmMAC(c.dialer, &m))
	b, _ := m.Append(nil)
	return b
}

// confirmMAC is the MAC of confirm m as the dialer (A) or the listener (B)
// makes it.
func (c *Core) confirmMAC(byDialer bool, m *Message) []byte {
	return ConfirmMAC(c.macKey, byDialer, m.ID, m.Answer, m.Have)
}

// ConfirmKey is the key of a pairing's confirm MACs: SHA-256("keyrelay
// pair confirm v1" || shared || id || A's Info || B's Info || Na || Nb),
// shared the X25519 of one machine's private key and the other's public
// key (the same on both). Only the two machines can compute it, and it
// covers everything the code does: a confirm made for one exchange is no
// confirm of another.
func ConfirmKey(shared [KeyLen]byte, id [IDLen]byte, a, b Info, na, nb [NonceLen]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("keyrelay pair confirm v1"))
	h.Write(shared[:])
	h.Write(id[:])
	h.Write(a.append(nil))
	h.Write(b.append(nil))
	h.Write(na[:])
	h.Write(nb[:])
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// ConfirmMAC is a confirm's MAC: the first MACLen bytes of HMAC-SHA256
// under ConfirmKey over the side that says it ("A" or "B"), the pairing
// id, the answer and have. The side's letter keeps one side's confirm
// from being sent back to it as the other's.
func ConfirmMAC(key [32]byte, byDialer bool, id [IDLen]byte, answer Answer, have Have) []byte {
	m := hmac.New(sha256.New, key[:])
	side := byte('B')
	if byDialer {
		side = 'A'
	}
	m.Write([]byte{side})
	m.Write(id[:])
	m.Write([]byte{byte(answer), byte(have)})
	return m.Sum(nil)[:MACLen]
}

// progress ends the pairing once both answers are known and the peer has
// ours; with both known it starts Linger, after which it ends anyway.
func (c *Core) progress(now time.Time) {
	if c.mine == 0 || c.theirs == 0 {
		return
	}
	if c.lingerBy.IsZero() {
		c.lingerBy = now.Add(c.opts.Linger)
	}
	if c.peerHasMine || !now.Before(c.lingerBy) {
		c.finish()
		return
	}
	if c.pending != nil {
		c.pending = c.confirmMsg() // now says we have theirs
	}
}

func (c *Core) finish() {
	c.state = finished
	c.pending = nil
	if c.mine != Yes || c.theirs != Yes {
		c.err = ErrRejected
	}
}

// Abort ends the pairing at now with err (the person here gave up, or
// could not be asked). If the peer may be showing a code, it is told no,
// once, so it need not wait for its timeout.
func (c *Core) Abort(now time.Time, err error) {
	if c.state == finished {
		return
	}
	c.abort(now, err)
}

func (c *Core) abort(now time.Time, err error) {
	if (c.state == awaitReveal || c.state == confirming) && c.mine != Yes {
		c.mine = No
		c.out = append(c.out, c.confirmMsg())
	}
	c.fail(err)
}

func (c *Core) fail(err error) {
	c.state = finished
	c.pending = nil
	c.err = err
}

// sendPending queues m (or, with m nil, our confirm) now and resends it
// with backoff until something replaces or ends it.
func (c *Core) sendPending(now time.Time, m *Message) {
	var b []byte
	if m == nil {
		b = c.confirmMsg()
	} else {
		var err error
		if b, err = m.Append(nil); err != nil {
			c.fail(err)
			return
		}
	}
	c.pending = b
	c.out = append(c.out, b)
	c.backoff = c.opts.RetryMin
	c.retryAt = now.Add(c.backoff)
}

// Tick runs what is due at now: resends and timeouts.
func (c *Core) Tick(now time.Time) {
	if c.state == finished {
		return
	}
	if !c.lingerBy.IsZero() && !now.Before(c.lingerBy) {
		c.finish()
		return
	}
	if c.lingerBy.IsZero() {
		if c.state == awaitCommit && !now.Before(c.answerBy) {
			c.fail(ErrNoAnswer)
			return
		}
		if !now.Before(c.deadline) {
			c.fail(c.timeoutErr())
			return
		}
	}
	if c.pending != nil && !now.Before(c.retryAt) {
		c.out = append(c.out, c.pending)
		c.backoff = min(2*c.backoff, c.opts.RetryMax)
		c.retryAt = now.Add(c.backoff)
	}
}

func (c *Core) timeoutErr() error {
	t := c.opts.Timeout
	switch {
	case c.state == awaitHello:
		return fmt.Errorf("%w: no pairing request arrived within %v", ErrTimeout, t)
	case c.state != confirming:
		return fmt.Errorf("%w: %s stopped answering within %v", ErrTimeout, c.peer.Name, t)
	case c.mine == 0:
		return fmt.Errorf("%w: the code was not confirmed here within %v", ErrTimeout, t)
	default:
		return fmt.Errorf("%w: %s did not confirm the code within %v", ErrTimeout, c.peer.Name, t)
	}
}

// Next is when Tick must next be called.
func (c *Core) Next() time.Time {
	if c.state == finished {
		return time.Time{}
	}
	if !c.lingerBy.IsZero() {
		t := c.lingerBy
		if c.pending != nil && c.retryAt.Before(t) {
			t = c.retryAt
		}
		return t
	}
	t := c.deadline
	if c.state == awaitCommit && c.answerBy.Before(t) {
		t = c.answerBy
	}
	if c.pending != nil && c.retryAt.Before(t) {
		t = c.retryAt
	}
	return t
}

// Take returns the datagrams to send to the peer, oldest first, and
// forgets them. The slices are not reused by the core.
func (c *Core) Take() [][]byte {
	out := c.out
	c.out = nil
	return out
}

// PeerAddr is the address the peer's datagrams come from ("" while the
// listener has heard no hello).
func (c *Core) PeerAddr() string { return c.peerAddr }

// Phase says where the pairing stands.
func (c *Core) Phase() Phase {
	switch {
	case c.state == finished:
		return Done
	case c.state != confirming:
		return Waiting
	case c.mine == 0:
		return Comparing
	case c.theirs == 0:
		return AwaitingPeer
	}
	return Finishing
}

// Code is the code to compare and the peer it pairs with, once known
// (Phase Comparing and later; "" before).
func (c *Core) Code() (string, Info) { return c.code, c.peer }

// Result is the outcome once Phase is Done: the peer's Info when both
// people said yes, else the error that ended the pairing.
func (c *Core) Result() (Info, error) {
	if c.state != finished {
		return Info{}, errors.New("pairing not finished")
	}
	if c.err != nil {
		return Info{}, c.err
	}
	return c.peer, nil
}

// Stats returns what the core ignored so far.
func (c *Core) Stats() Stats { return c.stats }

// commitment is Cb: B's commitment to Nb, made before it sees Na.
func commitment(id [IDLen]byte, a, b Info, nb [NonceLen]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("keyrelay pair commit v1"))
	h.Write(id[:])
	h.Write(a.append(nil))
	h.Write(b.append(nil))
	h.Write(nb[:])
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// Code is the 6-digit code both screens show for a pairing: the first 8
// bytes of SHA-256("keyrelay pair code v1" || id || A's Info || B's Info ||
// Na || Nb), big-endian, mod 10^6. 2^64 is not a multiple of 10^6, so the
// smallest 2^64 mod 10^6 codes are one value in 2^64 likelier than the
// rest: a bias of 10^6/2^64 ≈ 5·10^-14, far below the 10^-6 that matters.
func Code(id [IDLen]byte, a, b Info, na, nb [NonceLen]byte) string {
	h := sha256.New()
	h.Write([]byte("keyrelay pair code v1"))
	h.Write(id[:])
	h.Write(a.append(nil))
	h.Write(b.append(nil))
	h.Write(na[:])
	h.Write(nb[:])
	var s [32]byte
	h.Sum(s[:0])
	return fmt.Sprintf("%06d", binary.BigEndian.Uint64(s[:8])%1_000_000)
}
