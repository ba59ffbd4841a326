package relaytest_test

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// rxAddr is the receiver's address as the sender's destination.
const rxAddr = "10.0.0.1:7575"

// pairedRig is a receiver (its socket captured) with an identity that
// pairs the sender's, the two ends of a handshaken session (PROTOCOL.md
// §8), for tests that carry the packets between them by hand.
type pairedRig struct {
	from       net.Addr // the sender's address, as the receiver sees it
	conn       *capConn
	rec        *fake.Recorder
	rxID, txID *identity.Identity
	r          *receiver.Receiver
	paired     func([32]byte) (string, bool)
}

func newPairedRig(t *testing.T, psk []byte) pairedRig {
	t.Helper()
	g := pairedRig{from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000")), conn: &capConn{}, rec: &fake.Recorder{}, rxID: newID(t), txID: newID(t)}
	g.paired = func(k [32]byte) (string, bool) { return "tx", k == g.txID.Public() }
	r, err := receiver.New(receiver.Config{Conn: g.conn, Injector: g.rec, PSK: psk, Timeout: time.Hour, Identity: g.rxID, Peer: g.paired})
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	return g
}

// capConn is the receiver's socket: what it sends is kept for the test to
// deliver (or drop).
type capConn struct {
	net.PacketConn
	out [][]byte
}

func (c *capConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.out = append(c.out, append([]byte(nil), b...))
	return len(b), nil
}

// TestUnansweredHandshakeFailsClosed (PROTOCOL.md §8.4): a unicast
// destination whose handshake responses are dropped for 3 s, longer than
// --timeout, gets initiations only until a response comes: never a
// one-way packet, which a recording attacker could replay into another
// receiver. The keys typed meanwhile, more than the queue holds, wait in
// the backlog (within --outage) and are all typed once the response comes.
// The whole recording, replayed into another receiver (another identity)
// or into this one restarted (same identity, a new process), types
// nothing: its keypairs died with the handshakes.
func TestUnansweredHandshakeFailsClosed(t *testing.T) {
	psk := make([]byte, wire.KeyLen)
	for i := range psk {
		psk[i] = byte(i + 7)
	}
	rig := newPairedRig(t, psk)
	from, conn, rec, rxID, txID, r, paired := rig.from, rig.conn, rig.rec, rig.rxID, rig.txID, rig.r, rig.paired
	var pending, recording [][]byte
	c, err := sender.NewCore(sender.CoreConfig{PSK: psk, Feedback: true, Identity: txID, Dests: []sender.Dest{{Addr: rxAddr, PeerKey: rxID.Public()}},
		Output: func(b []byte, _ int) {
			pending = append(pending, append([]byte(nil), b...))
			recording = append(recording, append([]byte(nil), b...))
		}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	dropUntil := t0.Add(3 * time.Second)
	ticketAt := time.Time{}
	// pump delivers what is in flight both ways at now, checking each
	// packet to the receiver: an initiation until the sender took a
	// response.
	pump := func(now time.Time) {
		for len(pending) > 0 {
			ps := pending
			pending = nil
			for _, b := range ps {
				h, err := handshake.ParseHeader(b)
				if err != nil {
					t.Fatalf("the sender sent a packet that does not parse: %v", err)
				}
				if ticketAt.IsZero() && h.Type != handshake.TypeInitiation {
					t.Fatalf("at +%v, before any response, the sender sent a packet of type %d (flags %#x), want only initiations: a one-way packet to a unicast destination", now.Sub(t0), h.Type, h.Flags)
				}
				if h.Flags&wire.FlagOneWay != 0 {
					t.Fatalf("at +%v the sender sent a one-way packet (flags %#x) to a handshaken destination", now.Sub(t0), h.Flags)
				}
				r.Handle(b, from, now)
				back := conn.out
				conn.out = nil
				for _, a := range back {
					ah, _ := handshake.ParseHeader(a)
					if ah.Type == handshake.TypeResponse && now.Before(dropUntil) {
						continue // the attacker drops the responses
					}
					if ah.Type == handshake.TypeResponse && ticketAt.IsZero() && c.Ack(a, rxAddr, now) == nil {
						ticketAt = now
						continue
					}
					c.Ack(a, rxAddr, now)
				}
			}
		}
	}
	// 40 taps from +100ms to +2.5s: 80 events, five queues' worth.
	var typed []keys.Key
	var steps []time.Time
	for i := range 40 {
		steps = append(steps, t0.Add(100*time.Millisecond+time.Duration(i)*60*time.Millisecond))
		typed = append(typed, keys.Key(keys.KeyA+keys.Code(i%26)))
	}
	c.Start(t0)
	pump(t0)
	now := t0
	for i := 0; i < len(steps); {
		if n := c.Next(); !n.IsZero() && n.Before(steps[i]) {
			now = n
			c.Tick(now)
		} else {
			now = steps[i]
			c.Key(typed[i], true, now)
			c.Key(typed[i], false, now)
			i++
		}
		pump(now)
	}
	c.Stop(now, sender.SourceEnded)
	pump(now)
	for n := c.Next(); !n.IsZero() && !c.Done(); n = c.Next() {
		c.Tick(n)
		pump(n)
	}
	if ticketAt.IsZero() {
		t.Fatal("the sender never took a response")
	}
	if ticketAt.Before(dropUntil) {
		t.Fatalf("response taken at +%v, while they were dropped", ticketAt.Sub(t0))
	}
	var got []keys.Key
	for _, a := range rec.Events() {
		if a.Down && a.Cause == eventqueue.Sent {
			got = append(got, a.Key)
		}
	}
	if !slices.Equal(got, typed) {
		t.Fatalf("typed %d keys %v, want the %d typed while the handshake was unanswered, in order: %v", len(got), got, len(typed), typed)
	}
	if st := r.Stats(); st.Sessions != 1 || st.Refused != 0 {
		t.Errorf("receiver: %d sessions, %d one-way refused, want 1 handshaken session", st.Sessions, st.Refused)
	}
	// The recording replayed, at once and an hour later, into another
	// receiver (another identity that pairs the sender) and into this
	// receiver's identity restarted: nothing is typed.
	for name, id := range map[string]*identity.Identity{"another receiver": newID(t), "the receiver restarted": rxID} {
		for _, later := range []time.Duration{0, time.Hour} {
			rec2 := &fake.Recorder{}
			r2, err := receiver.New(receiver.Config{Conn: &capConn{}, Injector: rec2, PSK: psk, Timeout: time.Hour, Identity: id, Peer: paired})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range recording {
				r2.Handle(b, from, now.Add(later))
			}
			if evs := rec2.Events(); len(evs) != 0 {
				t.Errorf("%s, the recording replayed +%v: %d key events typed, want none", name, later, len(evs))
			}
		}
	}
}

func newID(t testing.TB) *identity.Identity {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestResponseAfterPeerTimeoutStillTypes (PROTOCOL.md §8.4; the sender's
// grace, DESIGN.md's "no key lost" invariant): a script of one tap ends at
// once, and the handshake's responses are lost for 2.5 s, longer than the
// peer timeout (2 s) and within the outage (5 s). The end waits for the
// handshake; once a response is taken, it waits for the receiver's first
// ack too, instead of ending before that ack could arrive (no receiver heard
// yet, the grace from the start over): the tap is typed and the
// all-released state acked before the session is done.
func TestResponseAfterPeerTimeoutStillTypes(t *testing.T) {
	psk := make([]byte, wire.KeyLen)
	rig := newPairedRig(t, psk)
	from, conn, rec, rxID, txID, r := rig.from, rig.conn, rig.rec, rig.rxID, rig.txID, rig.r
	var pending [][]byte
	c, err := sender.NewCore(sender.CoreConfig{PSK: psk, Feedback: true, Identity: txID, Dests: []sender.Dest{{Addr: rxAddr, PeerKey: rxID.Public()}},
		Linger: 500 * time.Millisecond, PeerTimeout: 2 * time.Second, Outage: 5 * time.Second,
		Output: func(b []byte, _ int) { pending = append(pending, append([]byte(nil), b...)) }}, t0)
	if err != nil {
		t.Fatal(err)
	}
	dropUntil := t0.Add(2500 * time.Millisecond)
	var answeredAt time.Time
	// What the receiver sends back arrives 10 ms later: a round trip is
	// what the session's end must wait out.
	type inFlight struct {
		at time.Time
		b  []byte
	}
	var back []inFlight
	pump := func(now time.Time) {
		for len(back) > 0 && !back[0].at.After(now) {
			a := back[0].b
			back = back[1:]
			if ah, _ := handshake.ParseHeader(a); ah.Type == handshake.TypeResponse && answeredAt.IsZero() {
				answeredAt = now
			}
			c.Ack(a, rxAddr, now)
		}
		ps := pending
		pending = nil
		for _, b := range ps {
			r.Handle(b, from, now)
			for _, a := range conn.out {
				if ah, _ := handshake.ParseHeader(a); ah.Type == handshake.TypeResponse && now.Before(dropUntil) {
					continue
				}
				back = append(back, inFlight{now.Add(10 * time.Millisecond), a})
			}
			conn.out = nil
		}
	}
	c.Start(t0)
	pump(t0)
	c.Key(keys.Key(keys.KeyA), true, t0)
	c.Key(keys.Key(keys.KeyA), false, t0)
	c.Stop(t0, sender.SourceEnded)
	pump(t0)
	now := t0
	for !c.Done() {
		n := c.Next()
		if len(back) > 0 && (n.IsZero() || back[0].at.Before(n)) {
			n = back[0].at
		}
		if n.IsZero() {
			break
		}
		now = n
		c.Tick(now)
		pump(now)
	}
	if answeredAt.IsZero() {
		t.Fatalf("no response was taken before the session ended at +%v", now.Sub(t0))
	}
	var got []keys.Key
	for _, a := range rec.Events() {
		if a.Down && a.Cause == eventqueue.Sent {
			got = append(got, a.Key)
		}
	}
	if !slices.Equal(got, []keys.Key{keys.Key(keys.KeyA)}) {
		t.Fatalf("the handshake was answered at +%v and the session ended at +%v: typed %v, want [KeyA]", answeredAt.Sub(t0), now.Sub(t0), got)
	}
	if ps := c.Peers(nil, now); len(ps) != 1 || ps[0].Newest < c.Final() {
		t.Errorf("the session ended at +%v without the receiver acking the final state (packet %d): peers %+v", now.Sub(t0), c.Final(), ps)
	}
}
