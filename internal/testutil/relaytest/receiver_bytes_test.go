package relaytest_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/wire"
)

// ipUDP is what IPv4 and UDP add to each datagram on the wire: the
// figure BENCHMARKS.md's tables count ("IP bytes").
const ipUDP = 20 + 8

// runTo runs the core and the receiver by their own deadlines up to
// until, as their loops do (resends, bursts, held-back acks), over a
// perfect link with no delay: every datagram is handled when it is sent.
func (p *path) runTo(until time.Time) {
	for {
		next := p.c.Next()
		if r := p.r.Next(); !r.IsZero() && (next.IsZero() || r.Before(next)) {
			next = r
		}
		if next.IsZero() || next.After(until) {
			break
		}
		p.now = next
		p.c.Tick(p.now)
		p.r.Expire(p.now)
		p.deliver()
		p.acked()
	}
	p.now = until
}

// BenchmarkWireBytes reports the bytes a handshaken session puts on the
// wire (PROTOCOL.md §3.3, §5), IPv4 bytes (the datagram + 28): per key
// event while typing taps 10 ms apart (about 100 events a second) and
// 75 ms apart (about 13), everything the sender sends (resends and bursts
// included) divided by the key events, and the receiver's acks likewise
// (§9: about one per key event); and per second while idle, each way.
// One op is one simulated second.
func BenchmarkWireBytes(b *testing.B) {
	for _, tc := range []struct {
		name string
		gap  time.Duration // between key events; 0: idle
	}{{"events-10ms", 10 * time.Millisecond}, {"events-75ms", 75 * time.Millisecond}, {"idle", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			p := newPath(b)
			p.runTo(p.now.Add(2 * time.Second)) // settle: the session's first acks
			sent, bytes, acks, ackBytes := p.sent, p.bytes, p.acks.sent, p.acks.bytes
			events, seconds := 0, 0
			for b.Loop() {
				end := p.now.Add(time.Second)
				for tc.gap > 0 && p.now.Add(tc.gap).Before(end) {
					p.runTo(p.now.Add(tc.gap))
					p.c.Key(keys.Key(4+p.key/2%26), p.key%2 == 0, p.now)
					p.key++
					events++
					p.deliver()
					p.acked()
				}
				p.runTo(end)
				seconds++
			}
			out, outBytes := p.sent-sent, p.bytes-bytes
			back, backBytes := p.acks.sent-acks, p.acks.bytes-ackBytes
			if events > 0 {
				b.ReportMetric(float64(outBytes+ipUDP*out)/float64(events), "IP-bytes/event")
				b.ReportMetric(float64(out)/float64(events), "datagrams/event")
				b.ReportMetric(float64(backBytes+ipUDP*back)/float64(events), "IP-bytes-back/event")
			} else {
				b.ReportMetric(float64(outBytes+ipUDP*out)/float64(seconds), "IP-bytes-out/s")
				b.ReportMetric(float64(backBytes+ipUDP*back)/float64(seconds), "IP-bytes-back/s")
				b.ReportMetric(float64(out)/float64(seconds), "datagrams-out/s")
			}
			b.ReportMetric(float64(outBytes)/float64(max(out, 1)), "bytes/datagram")
		})
	}
}

// TestHandshakenPacketsNameTheirSessionByIndex (PROTOCOL.md §2, §8.3): a
// handshaken session's queue packets and acks carry the compact header,
// 11 to 13 bytes at these counters and no session id anywhere in clear;
// the receiver still files the packets under the sender's session (the
// keypair's), and the sender takes the acks as its own.
func TestHandshakenPacketsNameTheirSessionByIndex(t *testing.T) {
	p := newPath(t)
	id := binary.BigEndian.AppendUint64(nil, p.c.Session())
	acks := p.c.Stats().Acks
	for range 200 {
		p.event()
		for i := range p.npk {
			checkCompact(t, "queue packet", p.pkts[i], id)
		}
		p.deliver()
		for i := range p.acks.n {
			checkCompact(t, "ack", p.acks.ack(i), id)
		}
		p.acked()
	}
	if got := p.c.Stats().Acks - acks; got < 200 {
		t.Errorf("the sender took %d acks for 200 key events, want one each", got)
	}
	st := p.r.Status()
	if len(st) != 1 || st[0].ID != p.c.Session() {
		t.Errorf("receiver's sessions %+v, want the one of session %016x", st, p.c.Session())
	}
}

func checkCompact(t *testing.T, what string, b, id []byte) {
	t.Helper()
	m, err := handshake.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	h := m.Header
	if !h.Compact() || h.Session != 0 || h.Len() < wire.CompactMinLen || h.Len() > wire.CompactMinLen+2 {
		t.Fatalf("%s % x: header %+v, %d bytes; want a compact one of 11 to 13", what, b[:min(len(b), 16)], h, h.Len())
	}
	if bytes.Contains(b[:h.Len()], id) {
		t.Fatalf("%s: the session id is in its header in clear: % x", what, b[:h.Len()])
	}
}
