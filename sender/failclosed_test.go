package sender_test

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

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
// destination whose tickets are dropped for 3 s, longer than --timeout,
// gets hellos only until the ticket comes: never a one-way packet, which
// a recording attacker could replay into another receiver. The keys typed
// meanwhile, more than the queue holds, wait in the backlog (within
// --outage) and are all typed once the ticket comes.
func TestUnansweredHandshakeFailsClosed(t *testing.T) {
	psk := make([]byte, wire.KeyLen)
	for i := range psk {
		psk[i] = byte(i + 7)
	}
	const rxAddr = "10.0.0.1:7575"
	from := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))
	conn := &capConn{}
	rec := &fake.Recorder{}
	r, err := receiver.New(receiver.Config{Conn: conn, Injector: rec, PSK: psk, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var pending [][]byte
	c, err := sender.NewCore(sender.CoreConfig{PSK: psk, Feedback: true, Dests: []sender.Dest{{Addr: rxAddr}},
		Output: func(b []byte, _ int) { pending = append(pending, append([]byte(nil), b...)) }}, t0)
	if err != nil {
		t.Fatal(err)
	}
	dropUntil := t0.Add(3 * time.Second)
	ticketAt := time.Time{}
	// pump delivers what is in flight both ways at now, checking each
	// packet to the receiver: a hello until the sender took a ticket.
	pump := func(now time.Time) {
		for len(pending) > 0 {
			ps := pending
			pending = nil
			for _, b := range ps {
				h, err := wire.ParseHeader(b)
				if err != nil {
					t.Fatalf("the sender sent a packet that does not parse: %v", err)
				}
				if ticketAt.IsZero() && h.Type != wire.TypeHello {
					t.Fatalf("at +%v, before any ticket, the sender sent a packet of type %d (flags %#x), want only hellos: a one-way packet to a unicast destination", now.Sub(t0), h.Type, h.Flags)
				}
				r.Handle(b, from, now)
				back := conn.out
				conn.out = nil
				for _, a := range back {
					ah, _ := wire.ParseHeader(a)
					if ah.Type == wire.TypeTicket && now.Before(dropUntil) {
						continue // the attacker drops the tickets
					}
					if ah.Type == wire.TypeTicket && ticketAt.IsZero() && c.Ack(a, rxAddr, now) == nil {
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
		t.Fatal("the sender never took a ticket")
	}
	if ticketAt.Before(dropUntil) {
		t.Fatalf("ticket taken at +%v, while they were dropped", ticketAt.Sub(t0))
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
}
