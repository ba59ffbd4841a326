package relaytest_test

import (
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
)

// TestTapCostsAPacketAndAnAck (PROTOCOL.md §7.1, §9): taps over a LAN (75 µs
// each way), each key-up typed 400 µs after its key-down's ack came back, as
// bench-peers' are over a veth pair: the key-up's ack comes back at once, so
// the sender's burst (its gap the 1 ms floor) ends before its first re-send,
// and each packet the sender sends draws one ack. Held back for the rest of
// the receiver's millisecond, each key-up's ack would let a burst re-send it
// first (PROTOCOL.md §9).
func TestTapCostsAPacketAndAnAck(t *testing.T) {
	const oneWay = 75 * time.Microsecond
	for _, tc := range []struct {
		name  string
		upGap time.Duration // from the key-down's ack to the key-up
	}{
		{"key-up within the receiver's ack interval", 400 * time.Microsecond},
		{"key-up after it", 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPath(t)
			// round hands the receiver the packets in flight oneWay after
			// now, and the sender their acks oneWay later.
			round := func() {
				p.now = p.now.Add(oneWay)
				for i := range p.npk {
					p.r.Handle(p.pkts[i], p.from, p.now)
				}
				p.npk = 0
				p.now = p.now.Add(oneWay)
				p.acked()
			}
			p.runTo(p.now.Add(2 * time.Second)) // settle: the session's first acks
			sent, acks, bursts, start := p.sent, p.acks.sent, p.c.Stats().Bursts, p.now
			const taps = 50
			for i := range taps {
				k := keys.Key(4 + i%26)
				p.runTo(p.now.Add(10 * time.Millisecond))
				p.c.Key(k, true, p.now)
				round()
				p.runTo(p.now.Add(tc.upGap))
				p.c.Key(k, false, p.now)
				round()
			}
			p.runTo(p.now.Add(10 * time.Millisecond))
			if got := p.c.Stats().Bursts - bursts; got != 0 {
				t.Errorf("%d burst re-sends for %d taps, want none", got, taps)
			}
			// Each event's packet and the resends every --interval, each
			// acked once.
			out, back := p.sent-sent, p.acks.sent-acks
			most := 2*taps + int(p.now.Sub(start)/sender.DefaultInterval) + 1
			if out > most || back != out {
				t.Errorf("%d taps: %d packets out and %d acks back (%.2f datagrams per key event), want one ack per packet, at most %d packets", taps, out, back, float64(out+back)/(2*taps), most)
			}
		})
	}
}
