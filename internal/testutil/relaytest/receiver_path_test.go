package relaytest_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/wire"
)

// The receive path and the ack path per datagram, as the send path
// (sender's BenchmarkKeyEvent): a handshaken session's sealed queue packet
// in, its key event injected, its ack out (PROTOCOL.md §8.5, §9); the
// sender's core taking that ack in. Neither may allocate: a receiver
// relaying all day, and an idle sender answered once a second, would
// otherwise feed the garbage collector with every datagram.

// nopInjector presses nothing and counts what it was given.
type nopInjector struct{ n int }

func (i *nopInjector) Inject(sink.Event) error { i.n++; return nil }

// ackSlots keeps what a receiver writes (its acks) in buffers allocated
// once, so that writing costs the receiver nothing the test adds.
type ackSlots struct {
	net.PacketConn
	buf [64][wire.MaxPacketSize]byte
	len [64]int
	n   int
	// sent and bytes count every datagram written (wire bytes, bytes_test.go).
	sent, bytes int
}

func (c *ackSlots) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.len[c.n] = copy(c.buf[c.n][:], b)
	c.n++
	c.sent++
	c.bytes += len(b)
	return len(b), nil
}

func (c *ackSlots) ack(i int) []byte { return c.buf[i][:c.len[i]] }

// path is a sender core and a receiver over a perfect link, driven by
// hand: each key event is one queue packet, each packet one ack.
type path struct {
	c    *sender.Core
	r    *receiver.Receiver
	acks *ackSlots
	inj  *nopInjector
	from *net.UDPAddr
	pkts [64][]byte    // the core's packets not yet handled (copies)
	at   [64]time.Time // when the core sent each
	npk  int
	now  time.Time
	key  int
	// sent and bytes count the core's datagrams (wire bytes, bytes_test.go).
	sent, bytes int
}

// newPath is a handshaken session, started: the handshake done and its
// first packets acked.
func newPath(tb testing.TB) *path {
	tb.Helper()
	p := &path{acks: &ackSlots{}, inj: &nopInjector{}, now: t0,
		from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))}
	for i := range p.pkts {
		p.pkts[i] = make([]byte, 0, wire.MaxPacketSize)
	}
	r, err := receiver.New(receiver.Config{Conn: p.acks, Injector: p.inj, PSK: hsKey, Timeout: time.Hour, Identity: rxID, Peer: pairedTx})
	if err != nil {
		tb.Fatal(err)
	}
	p.r = r
	c, err := sender.NewCore(sender.CoreConfig{PSK: hsKey, Feedback: true, Identity: txID, Dests: []sender.Dest{{Addr: hsRxAddr, PeerKey: rxID.Public()}},
		Output: func(b []byte, _ int) {
			p.pkts[p.npk] = append(p.pkts[p.npk][:0], b...)
			p.at[p.npk] = p.now
			p.npk++
			p.sent++
			p.bytes += len(b)
		}}, t0)
	if err != nil {
		tb.Fatal(err)
	}
	p.c = c
	c.Start(p.now)
	// The initiation, the response, the first queue packets: a few rounds
	// until nothing is in flight.
	for range 8 {
		p.deliver()
		p.acked()
	}
	if p.r.Stats().Accepted == 0 || p.c.Stats().Acks == 0 {
		tb.Fatalf("no session: receiver %v; sender %v", p.r.Stats(), p.c.Stats())
	}
	return p
}

// event makes the core send the next key event (taps of rotating
// letters), 10 ms after the one before: past MinAckInterval, so each
// packet is acked at once.
func (p *path) event() {
	p.now = p.now.Add(10 * time.Millisecond)
	p.c.Key(keys.Key(4+p.key/2%26), p.key%2 == 0, p.now)
	p.key++
}

// deliver hands the receiver every packet in flight.
func (p *path) deliver() {
	for i := range p.npk {
		p.r.Handle(p.pkts[i], p.from, p.at[i])
	}
	p.npk = 0
}

// acked hands the core every ack in flight.
func (p *path) acked() {
	for i := range p.acks.n {
		p.c.Ack(p.acks.ack(i), hsRxAddr, p.now)
	}
	p.acks.n = 0
}

// TestNoAllocationPerDatagram: a key event's whole round trip, the sender
// core's packet (the send path), the receiver's handling of it up to the
// injector and its ack (the receive path), and the core's handling of the
// ack (the ack path), allocates nothing once the session runs.
func TestNoAllocationPerDatagram(t *testing.T) {
	p := newPath(t)
	before := p.inj.n
	allocs := testing.AllocsPerRun(1000, func() {
		p.event()
		p.deliver()
		p.acked()
	})
	if p.inj.n-before < 1000 {
		t.Fatalf("%d key events injected in 1001 round trips, want each: the path under test is not the one relaying", p.inj.n-before)
	}
	if p.c.Stats().Acks < 1000 {
		t.Fatalf("the core took %d acks, want one per round trip", p.c.Stats().Acks)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per key event (send, receive and ack paths), want 0", allocs)
	}
	// The packets under test are abridged (PROTOCOL.md §3.3): the
	// receiver rebuilds each whole queue, with no allocation either.
	if st := p.c.Stats(); st.Abridged < 1000 || p.r.Stats().Unbased != 0 {
		t.Errorf("%d abridged packets sent, %d dropped unbuilt; want every round trip's abridged and none dropped", st.Abridged, p.r.Stats().Unbased)
	}
}

// batch is how many datagrams a benchmark makes with its timer stopped
// before it times their handling: fewer than the queue holds, so that the
// core never holds an event back for want of acks.
const batch = sender.DefaultQueueLen / 2

// receive hands the receiver b.N of the core's packets, each carrying one
// new key event, timing only Handle: the packets are made a batch at a
// time with the timer stopped, after the core took the receiver's acks of
// the batch before (ack; a one-way path has none). The timer is stopped
// when it returns.
func (p *path) receive(b *testing.B, ack bool) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			if ack {
				p.acked()
			}
			p.npk = 0
			for range batch {
				p.event()
			}
			b.StartTimer()
		}
		p.r.Handle(p.pkts[i%batch], p.from, p.at[i%batch])
	}
	b.StopTimer()
}

// BenchmarkReceivePath is the receiver's CPU and allocations per datagram: a
// handshaken session's sealed queue packet carrying one new key event,
// opened and checked (PROTOCOL.md §8.5), diffed, the event handed to an
// injector that does nothing, and the ack sealed and written (§9). The
// packets are made by a real sender core, a batch at a time, with the timer
// stopped.
func BenchmarkReceivePath(b *testing.B) {
	p := newPath(b)
	p.receive(b, true)
	// Some are the core's initiations of a new handshake (a rekey every
	// two minutes of its clock, PROTOCOL.md §8.3), answered.
	st := p.r.Stats()
	if st.Accepted+st.Responses < b.N {
		b.Fatalf("%d of %d packets applied: %v", st.Accepted, b.N, st)
	}
	b.ReportMetric(float64(st.Acks)/float64(st.Accepted), "acks/datagram")
}

// BenchmarkAckPath is the sender core's CPU and allocations per ack: the
// receiver's sealed ack of a packet that carried a new key event, opened,
// its bits applied to the delivery ledger and the round trip measured
// (PROTOCOL.md §9). The acks are made by a real receiver, a batch at a time,
// with the timer stopped.
func BenchmarkAckPath(b *testing.B) {
	p := newPath(b)
	b.ReportAllocs()
	b.ResetTimer()
	next := 0
	for range b.N {
		if next == p.acks.n {
			b.StopTimer()
			p.acks.n, next = 0, 0
			for range batch {
				p.event()
				p.deliver()
			}
			if p.acks.n < batch {
				b.Fatalf("%d acks for %d packets, want one each", p.acks.n, batch)
			}
			b.StartTimer()
		}
		if err := p.c.Ack(p.acks.ack(next), hsRxAddr, p.now); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// newOneWayPath is a one-way session (PROTOCOL.md §8.6) from the paired
// machine txID to a receiver run with --one-way, started: its first
// packet applied.
func newOneWayPath(tb testing.TB) *path {
	tb.Helper()
	p := &path{acks: &ackSlots{}, inj: &nopInjector{}, now: t0,
		from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))}
	for i := range p.pkts {
		p.pkts[i] = make([]byte, 0, wire.MaxPacketSize)
	}
	r, err := receiver.New(receiver.Config{Conn: p.acks, Injector: p.inj, PSK: hsKey, Timeout: time.Hour, Identity: rxID, Peer: pairedTx, OneWay: true})
	if err != nil {
		tb.Fatal(err)
	}
	p.r = r
	c, err := sender.NewCore(sender.CoreConfig{PSK: hsKey, Identity: txID, Dests: []sender.Dest{{Addr: hsRxAddr, OneWay: true}},
		Output: func(b []byte, _ int) {
			p.pkts[p.npk] = append(p.pkts[p.npk][:0], b...)
			p.at[p.npk] = p.now
			p.npk++
			p.sent++
			p.bytes += len(b)
		}}, t0)
	if err != nil {
		tb.Fatal(err)
	}
	p.c = c
	c.Start(p.now)
	p.deliver()
	if p.r.Stats().Accepted == 0 {
		tb.Fatalf("no session: receiver %v", p.r.Stats())
	}
	return p
}

// BenchmarkOneWayReceivePath is BenchmarkReceivePath for a one-way
// session (PROTOCOL.md §8.6): its packet carrying one new key event,
// opened with the key file's key, its sender's signature checked, diffed,
// the event handed to an injector that does nothing; nothing goes back.
// The packets are made by a real sender core, a batch at a time, with the
// timer stopped.
func BenchmarkOneWayReceivePath(b *testing.B) {
	p := newOneWayPath(b)
	p.receive(b, false)
	if st := p.r.Stats(); st.Accepted < b.N {
		b.Fatalf("%d of %d packets applied: %v", st.Accepted, b.N, st)
	}
	b.ReportMetric(float64(p.bytes)/float64(p.sent), "bytes/datagram")
}
