package relaytest_test

import (
	"crypto/rand"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// The handshake (PROTOCOL.md §8.3; DESIGN.md invariant 9), with a real
// sender.Core and real Receivers on a lossless network in explicit time:
// what the sender sends is recorded, so it can be replayed.

var hsKey = []byte("handshake-test-key-0123456789abc")

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// hsConn keeps what a receiver writes (acks, handshake answers) and where to.
type hsConn struct {
	net.PacketConn
	sent []hsDatagram
}

type hsDatagram struct {
	b  []byte
	to string
}

func (c *hsConn) WriteTo(b []byte, to net.Addr) (int, error) {
	c.sent = append(c.sent, hsDatagram{append([]byte(nil), b...), to.String()})
	return len(b), nil
}

// rx is one receiver instance and what it typed.
type rx struct {
	r    *receiver.Receiver
	conn *hsConn
	rec  *fake.Recorder
}

// The identities: the receiver's machine (each newRx is a run of it: a
// restart keeps the identity), the sender's, and another receiver's
// machine, which pairs the same sender.
var rxID, txID, otherID = mustID(), mustID(), mustID()

func mustID() *identity.Identity {
	id, err := identity.Generate()
	if err != nil {
		panic(err)
	}
	return id
}

// pairedTx is a peers file listing the sender.
func pairedTx(k [identity.KeyLen]byte) (string, bool) { return "tx", k == txID.Public() }

func newRx(t *testing.T) *rx { return newRxAs(t, rxID) }

// newRxAs is a receiver run with identity id, pairing the sender.
func newRxAs(t *testing.T, id *identity.Identity) *rx {
	t.Helper()
	x := &rx{conn: &hsConn{}, rec: &fake.Recorder{}}
	r, err := receiver.New(receiver.Config{Conn: x.conn, Injector: x.rec, PSK: hsKey, Timeout: time.Hour, Identity: id, Peer: pairedTx})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r
	return x
}

// link is a sender Core talking to one receiver address, and everything
// it sent there.
type link struct {
	c       *sender.Core
	rx      *rx // who listens at the address now (nil: nobody)
	from    *net.UDPAddr
	pending [][]byte
	record  [][]byte
	drop    func() bool // loses a datagram, either way (nil: none)
}

const hsRxAddr = "10.0.0.1:7575"

func newLink(t *testing.T, from string, x *rx) *link { return newLinkTo(t, from, x, rxID) }

// newLinkTo is a sender that knows the receiver's key as peer's.
func newLinkTo(t *testing.T, from string, x *rx, peer *identity.Identity) *link {
	t.Helper()
	return newLinkAs(t, from, x, txID, peer)
}

// newLinkAs is a sender of identity self that knows the receiver's key as
// peer's.
func newLinkAs(t *testing.T, from string, x *rx, self, peer *identity.Identity) *link {
	t.Helper()
	l := &link{rx: x, from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort(from))}
	c, err := sender.NewCore(sender.CoreConfig{PSK: hsKey, Feedback: true, Identity: self, Dests: []sender.Dest{{Addr: hsRxAddr, PeerKey: peer.Public()}},
		Output: func(b []byte, _ int) {
			b = append([]byte(nil), b...)
			l.record = append(l.record, b)
			l.pending = append(l.pending, b)
		}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	l.c = c
	return l
}

// pump delivers what is in flight, both ways, at now, until nothing is.
// (The core is never re-entered: its Output only queues.)
func (l *link) pump(now time.Time) {
	for len(l.pending) > 0 {
		ps := l.pending
		l.pending = nil
		for _, b := range ps {
			if l.rx == nil || (l.drop != nil && l.drop()) {
				continue
			}
			l.rx.r.Handle(b, l.from, now)
			back := l.rx.conn.sent
			l.rx.conn.sent = nil
			for _, a := range back {
				// What the receiver sent elsewhere (answers to a replay
				// from another address) never reaches this sender.
				if a.to == l.from.String() && (l.drop == nil || !l.drop()) {
					l.c.Ack(a.b, hsRxAddr, now)
				}
			}
		}
	}
}

func (l *link) start(now time.Time) { l.c.Start(now); l.pump(now) }

// tap presses and releases k at now and now+10ms.
func (l *link) tap(k keys.Key, now time.Time) {
	l.c.Key(k, true, now)
	l.pump(now)
	l.c.Key(k, false, now.Add(10*time.Millisecond))
	l.pump(now.Add(10 * time.Millisecond))
}

// tick runs the core's deadlines up to until.
func (l *link) tick(until time.Time) {
	for n := l.c.Next(); !n.IsZero() && !n.After(until) && !l.c.Done(); n = l.c.Next() {
		l.c.Tick(n)
		l.pump(n)
	}
}

// downs lists the key-downs a recorder got for cause Sent.
func downs(rec *fake.Recorder) []keys.Key {
	var ks []keys.Key
	for _, a := range rec.Events() {
		if a.Down && a.Cause == eventqueue.Sent {
			ks = append(ks, a.Key)
		}
	}
	return ks
}

var word = []keys.Key{keys.Key(keys.KeyE), keys.Key(keys.KeyV), keys.Key(keys.KeyI), keys.Key(keys.KeyL)}

// recordSession runs a whole session to receiver x: start, the taps of
// word, the end. It checks x typed them (the recording is of a session
// that worked) and returns the recording.
func recordSession(t *testing.T, x *rx, from string) [][]byte {
	t.Helper()
	return recordSessionTo(t, x, from, rxID)
}

func recordSessionTo(t *testing.T, x *rx, from string, peer *identity.Identity) [][]byte {
	t.Helper()
	l := newLinkTo(t, from, x, peer)
	l.start(t0)
	now := t0.Add(50 * time.Millisecond)
	for _, k := range word {
		l.tap(k, now)
		now = now.Add(100 * time.Millisecond)
	}
	l.c.Stop(now, sender.SourceEnded)
	l.pump(now)
	l.tick(now.Add(5 * time.Second))
	if !l.c.Done() {
		t.Fatal("the recorded session did not end")
	}
	if got := downs(x.rec); len(got) != len(word) {
		t.Fatalf("the recorded session typed %v, want %v", got, word)
	}
	if x.r.Stats().Responses == 0 {
		t.Fatal("the recorded session was not handshaken")
	}
	return l.record
}

// replay plays a recording into x from from, starting at at, 1 ms apart.
func replayInto(x *rx, rec [][]byte, from string, at time.Time) {
	addr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(from))
	for i, b := range rec {
		x.r.Handle(b, addr, at.Add(time.Duration(i)*time.Millisecond))
	}
}

// TestRecordingIsUselessAtARestartedReceiver (PROTOCOL.md §8.3): a
// session recorded on its way to a receiver, replayed into that receiver
// restarted (same identity, a new process) at any age, injects nothing:
// its initiations may be answered (the new process knows no timestamp of
// the sender's), but the keypairs they make are new, known to no one
// (their ephemeral keys died with the sender's handshakes), and the
// recorded queue packets name indices it does not have.
func TestRecordingIsUselessAtARestartedReceiver(t *testing.T) {
	first := newRx(t)
	rec := recordSession(t, first, "10.0.0.2:40000")
	for _, age := range []time.Duration{0, 5 * time.Second, 20 * time.Second, 40 * time.Second, time.Hour} {
		restarted := newRx(t)
		replayInto(restarted, rec, "10.0.0.2:40000", t0.Add(age))
		st := restarted.r.Stats()
		if got := restarted.rec.Events(); len(got) != 0 || st.Accepted != 0 {
			t.Errorf("replayed %v after the restart: typed %v, %d packets applied", age, got, st.Accepted)
		}
		if st.UnknownIdx == 0 {
			t.Errorf("replayed %v after the restart: no packet counted as for an unknown keypair (%+v)", age, st)
		}
	}
	// The same instance, an hour later: every counter was seen.
	replayInto(first, rec, "10.0.0.2:40000", t0.Add(time.Hour))
	if got := downs(first.rec); len(got) != len(word) {
		t.Errorf("replayed into the same receiver: typed %v, want only the original %v", got, word)
	}
}

// TestRecordingForAnotherReceiverInjectsNothing (PROTOCOL.md §8.3): a
// session recorded on its way to receiver B (another machine, same key
// file, same sender paired), replayed into receiver A from another address
// and from the address of A's live sender, types nothing at A (its
// initiations are not addressed to A's key: mac1) and does not end or
// stall A's live session, whose held key stays down until its own sender
// releases it.
func TestRecordingForAnotherReceiverInjectsNothing(t *testing.T) {
	b := newRxAs(t, otherID)
	rec := recordSessionTo(t, b, "10.0.0.9:40000", otherID)

	a := newRx(t)
	live := newLink(t, "10.0.0.2:40000", a)
	live.start(t0)
	live.c.Key(kX, true, t0.Add(10*time.Millisecond))
	live.pump(t0.Add(10 * time.Millisecond))
	live.tick(t0.Add(time.Second))

	replayInto(a, rec, "10.0.0.7:5000", t0.Add(time.Second))
	replayInto(a, rec, "10.0.0.2:40000", t0.Add(2*time.Second))
	live.tick(t0.Add(3 * time.Second))
	if got := a.r.Held(); len(got) != 1 || got[0] != kX {
		t.Fatalf("after the replays A holds %v, want the live session's X", got)
	}
	for _, ev := range a.rec.Events() {
		if ev.Key != kX || !ev.Down {
			t.Fatalf("the replays made A inject %v", a.rec.Events())
		}
	}
	if st := a.r.Stats(); st.Sessions != 1 || st.MAC1 == 0 || st.Accepted == 0 {
		t.Errorf("A: %d sessions (want 1, the live one), %d initiations for another key (want > 0)", st.Sessions, st.MAC1)
	}
	// The live session goes on: its sender releases X.
	live.c.Key(kX, false, t0.Add(3*time.Second))
	live.pump(t0.Add(3 * time.Second))
	evs := a.rec.Events()
	if last := evs[len(evs)-1]; last.Key != kX || last.Down || last.Cause != eventqueue.Sent {
		t.Errorf("A's live session after the replays: last event %+v, want X released by its sender", last)
	}
}

// TestRestartedReceiverIsFollowedAtOnce (PROTOCOL.md §8.3): a receiver
// restarts under a running sender (same address, same identity, new
// process). It drops the packets sealed under a keypair it does not know;
// the sender, unacked for PeerTimeout/2, handshakes again at once, and
// every key typed from then on arrives; the key held across the restart
// is pressed again (Resync), not typed twice; the sender counts the
// receiver live, with its acks counted from 1 under the new keypair.
func TestRestartedReceiverIsFollowedAtOnce(t *testing.T) {
	a := newRx(t)
	l := newLink(t, "10.0.0.2:40000", a)
	l.start(t0)
	now := t0.Add(50 * time.Millisecond)
	l.c.Key(kShift, true, now)
	l.pump(now)
	for _, k := range word {
		now = now.Add(100 * time.Millisecond)
		l.tap(k, now)
	}
	// A dies; B comes up at the same address.
	b := newRx(t)
	l.rx = b
	typed := []keys.Key{keys.Key(keys.KeyN), keys.Key(keys.KeyE), keys.Key(keys.KeyW)}
	for _, k := range typed {
		now = now.Add(100 * time.Millisecond)
		l.tap(k, now)
	}
	l.tick(now.Add(3 * time.Second))
	if got := downs(b.rec); len(got) != len(typed) || got[0] != typed[0] || got[1] != typed[1] || got[2] != typed[2] {
		t.Errorf("the restarted receiver typed %v, want %v", got, typed)
	}
	held := b.r.Held()
	if len(held) != 1 || held[0] != kShift {
		t.Errorf("the restarted receiver holds %v, want ShiftLeft (held across the restart)", held)
	}
	if st := b.r.Stats(); st.UnknownIdx == 0 || st.Responses != 1 {
		t.Errorf("the restarted receiver dropped %d packets for an unknown keypair and answered %d handshakes; want some and 1", st.UnknownIdx, st.Responses)
	}
	ps := l.c.Peers(nil, now.Add(3*time.Second))
	if len(ps) != 1 || !ps[0].Live {
		t.Errorf("the sender sees %+v, want the receiver live", ps)
	}
}

var kX, kShift = keys.Key(keys.KeyX), keys.Key(keys.ShiftLeft)

// TestRelayWithRestartsAndReplays (DESIGN.md invariants 1, 2, 3 and 9):
// random typing over a lossy link while the receiver restarts at random
// moments and recordings of this session and of another receiver's are
// replayed into it from the sender's address and from another. Whatever
// happens: every receiver instance injects a subsequence of what the sender
// typed, in order, and never a key-down twice (nothing from a replay); at
// rest the last receiver holds exactly the sender's held keys; and with the
// link lossless after the last restart, every key-down typed from then on
// arrives there.
func TestRelayWithRestartsAndReplays(t *testing.T) {
	other := newRx(t)
	foreign := recordSession(t, other, "10.0.0.9:40000")
	rapid.Check(t, func(rt *rapid.T) {
		loss := float64(rapid.IntRange(0, 60).Draw(rt, "loss%")) / 100
		x := newRx(t)
		instances := []*rx{x}
		l := newLink(t, "10.0.0.2:40000", x)
		lossy, clean := true, false // clean: lossless since the last restart
		l.drop = func() bool { return lossy && rapid.Float64Range(0, 1).Draw(rt, "p") < loss }
		l.start(t0)
		now := t0
		var typed []keys.Key // key-downs the sender was given, in order
		var afterRestart []keys.Key
		held := map[keys.Key]bool{}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.IntRange(1, 300).Draw(rt, "gapMs")) * time.Millisecond)
			l.tick(now)
			switch rapid.IntRange(0, 9).Draw(rt, "what") {
			case 0: // the receiver restarts; in the second half the link heals
				x = newRx(t)
				instances = append(instances, x)
				l.rx = x
				lossy = lossy && i < steps/2
				clean = !lossy
				afterRestart = nil
			case 1: // a replay of what this session sent so far, or of another's
				rec := l.record
				if rapid.Bool().Draw(rt, "foreign") {
					rec = foreign
				}
				from := "10.0.0.2:40000"
				if rapid.Bool().Draw(rt, "otherAddr") {
					from = "10.0.0.66:1234"
				}
				replayInto(x, rec, from, now)
			default:
				k := keys.Key(keys.KeyA) + keys.Key(rapid.IntRange(0, 5).Draw(rt, "key"))
				down := !held[k]
				held[k] = down
				if down {
					typed = append(typed, k)
					afterRestart = append(afterRestart, k)
				}
				l.c.Key(k, down, now)
				l.pump(now)
			}
		}
		// At rest: the link heals and the sender goes on resending.
		lossy = false
		l.tick(now.Add(5 * time.Second))
		for i, in := range instances {
			if got := downs(in.rec); !isSubsequence(got, typed) {
				t.Fatalf("receiver %d typed %v, not a subsequence of the sender's %v", i, got, typed)
			}
		}
		var want []keys.Key
		for k, d := range held {
			if d {
				want = append(want, k)
			}
		}
		gotHeld := x.r.Held()
		slices.Sort(want)
		slices.Sort(gotHeld)
		if !slices.Equal(want, gotHeld) {
			t.Fatalf("at rest the receiver holds %v, the sender %v", gotHeld, want)
		}
		if last := downs(x.rec); clean && !slices.Equal(afterRestart, last[len(last)-min(len(last), len(afterRestart)):]) {
			t.Fatalf("typed after the last restart on a lossless link %v; the new receiver's last key-downs %v", afterRestart, last)
		}
	})
}

// isSubsequence reports whether a appears in b in order.
func isSubsequence(a, b []keys.Key) bool {
	i := 0
	for _, k := range b {
		if i < len(a) && a[i] == k {
			i++
		}
	}
	return i == len(a)
}

// TestInitiationAnsweredWithoutAcks (README, recv --acks=false): a
// receiver that sends no acks still answers initiations, without which no
// handshaken session could start; a burst of initiations from one address
// gets at most what the per-source limiter allows.
func TestInitiationAnsweredWithoutAcks(t *testing.T) {
	conn := &hsConn{}
	r, err := receiver.New(receiver.Config{Conn: conn, Injector: &fake.Recorder{}, PSK: hsKey, NoAcks: true, Identity: rxID, Peer: pairedTx})
	if err != nil {
		t.Fatal(err)
	}
	var psk [32]byte
	copy(psk[:], hsKey)
	in := handshake.NewInitiator(handshake.InitiatorConfig{Private: [32]byte(txID.Private().Bytes()), Peer: rxID.Public(), PSK: psk, Random: rand.Reader})
	from := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))
	b, err := in.Initiate(nil, 0x77, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(b, from, t0)
	if len(conn.sent) != 1 {
		t.Fatalf("%d answers to an initiation, want 1", len(conn.sent))
	}
	m, err := handshake.ParseResponse(conn.sent[0].b)
	if err != nil || conn.sent[0].to != from.String() {
		t.Fatalf("answer %x to %s: %v", conn.sent[0].b, conn.sent[0].to, err)
	}
	if _, err := in.ConsumeResponse(m, t0); err != nil {
		t.Fatalf("the response does not complete the handshake: %v", err)
	}
	// 200 more from the same address within a second, each newer than
	// the last (every 5 ms, past the responder's InitiationInterval only
	// for some): the answers stay within the limiter's burst and rate.
	conn.sent = nil
	for i := range 200 {
		now := t0.Add(time.Duration(i+1) * 5 * time.Millisecond)
		b, _ := in.Initiate(nil, 0x77, uint64(i+2), now)
		r.Handle(b, from, now)
	}
	if n := len(conn.sent); n > 40 {
		t.Errorf("%d answers to 200 initiations from one address in a second, want at most 40 (burst 20 + 20/s)", n)
	}
	if st := r.Stats(); st.Flood == 0 {
		t.Errorf("no initiation counted as too frequent: %+v", st)
	}
}
