package wire

import (
	"bytes"
	"errors"
	"testing"
)

var goldenAck = Ack{Header: Header{Type: TypeAck, Flags: FlagOneWay, Session: 0x0123456789ABCDEF, Counter: 7}, Newest: 42, Bits: 0b1011, Stamp: 1497, Delay: 250, Wall: 1_700_000_000_123}

// TestAckRoundTrip (PROTOCOL.md §9): plaintext acks and handshaken acks'
// bodies round-trip; an ack has flags ONEWAY (plaintext) or SEALED only.
func TestAckRoundTrip(t *testing.T) {
	b, err := goldenAck.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	var a Ack
	if err := ParseAck(b, &a); err != nil || a != goldenAck {
		t.Fatalf("ParseAck = %+v, %v", a, err)
	}
	for i := range len(b) {
		if err := ParseAck(b[:i], &a); err == nil {
			t.Errorf("truncated to %d: accepted", i)
		}
	}
	if err := ParseAck(append(bytes.Clone(b), 0), &a); !errors.Is(err, ErrTrailing) {
		t.Errorf("extended: %v", err)
	}
	// A one-way sealed ack does not exist (one-way sessions are never
	// acked, PROTOCOL.md §9), nor an ack with no flags.
	for _, flags := range []uint8{FlagSealed | FlagOneWay, 0} {
		bad := bytes.Clone(b)
		bad[4] = flags
		if err := ParseAck(bad, &a); !errors.Is(err, ErrFlags) {
			t.Errorf("ack with flags %#02x: %v, want ErrFlags", flags, err)
		}
	}
	// A handshaken link's ack body round-trips through AppendBody and
	// ParseAckBody (package handshake seals it).
	h := goldenAck
	h.Header.Flags = FlagSealed
	body, err := h.AppendBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseAckBody(h.Header, body, &a); err != nil || a != h {
		t.Fatalf("ParseAckBody = %+v, %v", a, err)
	}
}

func FuzzParseAck(f *testing.F) {
	b, _ := goldenAck.Append(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Ack
		if err := ParseAck(b, &a); err != nil {
			return
		}
		out, err := a.Append(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("ack % x re-encodes to % x (%v)", b, out, err)
		}
	})
}

// BenchmarkAckSize reports the bytes on the wire of a handshaken ack
// (PROTOCOL.md §9) a minute into a session typing about 10 key events a
// second: packet 3,000, stamp 60,000 ms, held 250 µs, the receiver's
// clock in 2026; with no packet missing, and with the two before newest
// missing. The datagram (header, index, body, tag) and the IPv4 packet
// (+ 28 bytes of IP and UDP headers). PROTOCOL.md §5 quotes them.
func BenchmarkAckSize(b *testing.B) {
	a := Ack{Header: Header{Type: TypeAck, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 900},
		Newest: 3000, Bits: ^uint64(0), Stamp: 60_000, Delay: 250, Wall: 1_795_000_000_000}
	lossy := a
	lossy.Bits &^= 0b11
	for _, tc := range []struct {
		name string
		a    Ack
	}{{"no-loss", a}, {"two-lost", lossy}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = tc.a.AppendBody(buf[:0])
			}
			datagram := HeaderLen + IndexLen + len(buf) + TagLen
			b.ReportMetric(float64(datagram), "bytes/datagram")
			b.ReportMetric(float64(datagram+28), "IPv4-bytes/datagram")
		})
	}
}
