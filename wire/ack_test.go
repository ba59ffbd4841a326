package wire

import (
	"bytes"
	"errors"
	"testing"
)

// The golden acks of PROTOCOL.md §9: a plaintext ack giving the wall clock
// with two packets missing, the body of a handshaken ack with none
// missing and the wall clock not given, and the body of the ack after it
// from a receiver that typed 3 key events into no application (no window
// had the keyboard focus).
var (
	goldenAck = Ack{Header: Header{Type: TypeAck, Flags: FlagOneWay, Session: 0x0123456789ABCDEF, Counter: 7},
		Newest: 42, Missing: 0b10100, Stamp: 1497, Delay: 250, Wall: 1_795_000_000_120}
	goldenAckBody = Ack{Header: Header{Type: TypeAck, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 8},
		Newest: 43, Stamp: 1497, Delay: 180}
	goldenAckNowhere = Ack{Header: Header{Type: TypeAck, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 9},
		Newest: 44, Stamp: 1530, Delay: 150, Nowhere: 3, Why: WhyNoFocus}
)

// TestGoldenAcks: the golden vectors of PROTOCOL.md §9 decode field by
// field, re-encode to the same bytes, and are as long as the text says.
func TestGoldenAcks(t *testing.T) {
	b := readHex(t, "../testdata/golden/ack_v5.hex")
	var a Ack
	if err := ParseAck(b, &a); err != nil || a != goldenAck {
		t.Fatalf("ack_v5.hex: ParseAck = %+v, %v\nwant %+v", a, err, goldenAck)
	}
	if enc, err := goldenAck.Append(nil); err != nil || !bytes.Equal(enc, b) {
		t.Errorf("encoded % x (%v)\nwant    % x", enc, err, b)
	}
	if len(b) != 34 {
		t.Errorf("ack_v5.hex is %d bytes, PROTOCOL.md says 34", len(b))
	}
	body := readHex(t, "../testdata/golden/ack_v5_body.hex")
	if err := ParseAckBody(goldenAckBody.Header, body, &a); err != nil || a != goldenAckBody {
		t.Fatalf("ack_v5_body.hex: ParseAckBody = %+v, %v\nwant %+v", a, err, goldenAckBody)
	}
	nowhere := readHex(t, "../testdata/golden/ack_v5_nowhere_body.hex")
	if err := ParseAckBody(goldenAckNowhere.Header, nowhere, &a); err != nil || a != goldenAckNowhere {
		t.Fatalf("ack_v5_nowhere_body.hex: ParseAckBody = %+v, %v\nwant %+v", a, err, goldenAckNowhere)
	}
	if enc, err := goldenAckNowhere.AppendBody(nil); err != nil || !bytes.Equal(enc, nowhere) {
		t.Errorf("goldenAckNowhere encodes to % x, want ack_v5_nowhere_body.hex % x (%v)", enc, nowhere, err)
	}
	if len(nowhere) != 9 {
		t.Errorf("ack_v5_nowhere_body.hex is %d bytes, PROTOCOL.md says 9", len(nowhere))
	}
	if enc, err := goldenAckBody.AppendBody(nil); err != nil || !bytes.Equal(enc, body) {
		t.Errorf("encoded % x (%v)\nwant    % x", enc, err, body)
	}
	if sealed := HeaderLen + IndexLen + len(body) + TagLen; len(body) != 7 || sealed != 49 {
		t.Errorf("ack_v5_body.hex is %d bytes (%d sealed), PROTOCOL.md says 7 (49)", len(body), sealed)
	}
}

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
	// After the wall clock only a count of keys typed into nothing, not
	// 0, and its reason may follow (PROTOCOL.md §9).
	if err := ParseAck(append(bytes.Clone(b), 0), &a); !errors.Is(err, ErrQueue) {
		t.Errorf("extended by a count of 0: %v, want ErrQueue", err)
	}
	if err := ParseAck(append(bytes.Clone(b), 1, 1, 0), &a); !errors.Is(err, ErrTrailing) {
		t.Errorf("extended past the reason: %v, want ErrTrailing", err)
	}
	// A one-way sealed ack does not exist (one-way sessions are never
	// acked, PROTOCOL.md §9), nor an ack with no flags.
	for _, flags := range []uint8{OneWaySealed, FlagSealed | FlagOneWay, 0} {
		bad := bytes.Clone(b)
		bad[4] = flags
		if err := ParseAck(bad, &a); !errors.Is(err, ErrFlags) {
			t.Errorf("ack with flags %#02x: %v, want ErrFlags", flags, err)
		}
	}
	// A handshaken link's ack body round-trips through AppendBody and
	// ParseAckBody (package handshake seals it), at the extremes of the
	// missing bits and the wall clock too.
	for _, h := range []Ack{goldenAckBody,
		{Newest: 65, Missing: 1 << 63, Wall: 1},
		{Newest: ^uint64(0), Missing: ^uint64(0), Stamp: ^uint64(0), Delay: ^uint64(0), Wall: ^uint64(0)},
		{Newest: 64, Missing: 1<<63 - 1},
		goldenAckNowhere,
		{Newest: 1, Nowhere: ^uint64(0), Why: 255},
	} {
		h.Header = goldenAckBody.Header
		body, err := h.AppendBody(nil)
		if err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		if err := ParseAckBody(h.Header, body, &a); err != nil || a != h {
			t.Fatalf("ParseAckBody(% x) = %+v, %v, want %+v", body, a, err, h)
		}
	}
}

// TestAckReceived (PROTOCOL.md §9): bit i of the missing bits set ⇔ packet
// newest−1−i was not received; newest itself was; nothing is said of
// packets after newest, more than 64 before it, or below counter 1.
func TestAckReceived(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a        Ack
		received []uint64
		not      []uint64
	}{
		{"the golden ack", goldenAck, []uint64{42, 41, 40, 38, 36, 1}, []uint64{39, 37, 43, 0}},
		{"nothing missing", Ack{Newest: 100}, []uint64{100, 99, 37, 36}, []uint64{35, 101, 0}},
		{"all 64 missing", Ack{Newest: 100, Missing: ^uint64(0)}, []uint64{100}, []uint64{99, 36, 35}},
		{"the top bit: 64 before newest", Ack{Newest: 65, Missing: 1 << 63}, []uint64{65, 64, 2}, []uint64{1, 0}},
		{"the first packet", Ack{Newest: 1}, []uint64{1}, []uint64{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.received {
				if !tc.a.Received(c) {
					t.Errorf("Received(%d) = false (newest %d, missing %#x)", c, tc.a.Newest, tc.a.Missing)
				}
			}
			for _, c := range tc.not {
				if tc.a.Received(c) {
					t.Errorf("Received(%d) = true (newest %d, missing %#x)", c, tc.a.Newest, tc.a.Missing)
				}
			}
		})
	}
}

// TestAckDecodeErrors: the rules of PROTOCOL.md §4 and §9 for an ack's
// body: newest not 0, missing bits only for packets from 1 up, shortest
// varints (a wall not given is the one byte 00), nothing after the wall.
// The encoder refuses what the decoder rejects.
func TestAckDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want error
	}{
		{"newest 0", "00 00 00 00 00", ErrQueue},
		{"a missing bit for packet 0", "05 10 00 00 00", ErrQueue},          // newest 5: bit 4 is counter 0
		{"the first packet with a missing bit", "01 01 00 00 00", ErrQueue}, // newest 1: no packet before it
		{"newest 64, the top bit", "40 80 80 80 80 80 80 80 80 80 01 00 00 00", ErrQueue},
		{"missing bits overlong", "2a 80 00 00 00 00", ErrVarint},
		{"missing bits beyond 64 bits", "2a ff ff ff ff ff ff ff ff ff 02 00 00 00", ErrVarint},
		{"wall 0 overlong", "2a 00 00 00 80 00", ErrVarint},
		{"ends after newest", "2a", ErrTruncated},
		{"ends after the missing bits", "2a 00", ErrTruncated},
		{"ends before the wall", "2a 00 00 00", ErrTruncated},
		{"a count of keys typed into nothing of 0", "2a 00 00 00 00 00", ErrQueue},
		{"the old fixed 8-byte bits", "2a 00 00 00 00 00 00 00 0b d9 0b fa 01 00", ErrQueue},
		{"a count and no reason", "2a 00 00 00 00 03", ErrTruncated},
		{"reason 0", "2a 00 00 00 00 03 00", ErrQueue},
		{"the count overlong", "2a 00 00 00 00 83 00 01", ErrVarint},
		{"a byte after the reason", "2a 00 00 00 00 03 01 00", ErrTrailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Ack
			if err := ParseAckBody(goldenAckBody.Header, unhex(t, tc.body), &a); !errors.Is(err, tc.want) {
				t.Errorf("ParseAckBody(%s) = %v, want %v", tc.body, err, tc.want)
			}
		})
	}
	for _, a := range []Ack{{Newest: 5, Missing: 1 << 4}, {Newest: 1, Missing: 1}, {Newest: 64, Missing: 1 << 63},
		{Newest: 5, Nowhere: 3}, {Newest: 5, Why: WhyNoFocus}} {
		a.Header = goldenAckBody.Header
		if b, err := a.AppendBody(nil); !errors.Is(err, ErrQueue) {
			t.Errorf("AppendBody(%+v) = % x, %v, want ErrQueue", a, b, err)
		}
	}
}

// TestAckSizes: the sizes PROTOCOL.md §5 quotes, a minute into a session
// typing (packet 3,000, stamp 60,000 ms, held 250 µs, the receiver's ack
// 900: a 12-byte compact header, §2): no packet missing and the wall clock
// not given, the common ack while typing, is 9 bytes of body, 37 sealed (21
// and 63 with Glenn Fiedler's 8-byte ack_bits, the wall clock in every ack
// and the 26 bytes of the 22-byte header and the index); with the wall
// clock, 14 and 42.
func TestAckSizes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		a            Ack
		body, sealed int
	}{
		{"nothing missing, no wall clock", Ack{Newest: 3000, Stamp: 60_000, Delay: 250}, 9, 37},
		{"nothing missing, the wall clock", Ack{Newest: 3000, Stamp: 60_000, Delay: 250, Wall: 1_795_000_000_000}, 14, 42},
		{"the packet before newest missing", Ack{Newest: 3000, Missing: 1, Stamp: 60_000, Delay: 250}, 9, 37},
		{"the oldest of the 64 missing", Ack{Newest: 3000, Missing: 1 << 63, Stamp: 60_000, Delay: 250}, 18, 46},
		{"3 key events typed into nothing", Ack{Newest: 3000, Stamp: 60_000, Delay: 250, Nowhere: 3, Why: WhyNoFocus}, 11, 39},
		{"the largest", Ack{Newest: ^uint64(0), Missing: ^uint64(0), Stamp: ^uint64(0), Delay: ^uint64(0), Wall: ^uint64(0), Nowhere: ^uint64(0), Why: 255}, 61, 89},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Header = goldenAckBody.Header
			tc.a.Header.Counter = 900
			b, err := tc.a.AppendBody(nil)
			if sealed := tc.a.Header.Len() + len(b) + TagLen; err != nil || len(b) != tc.body || sealed != tc.sealed {
				t.Errorf("body % x (%v): %d bytes, %d sealed; PROTOCOL.md says %d and %d", b, err, len(b), sealed, tc.body, tc.sealed)
			}
		})
	}
}

// FuzzParseAck: a plaintext ack (PROTOCOL.md §9) decodes totally and
// canonically: what decodes re-encodes to the same bytes.
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

// FuzzParseAckBody: a handshaken ack's body (PROTOCOL.md §9), as the
// sender has it once the keypair opened it, decodes totally and
// canonically; what decodes names no packet below counter 1 as missing.
func FuzzParseAckBody(f *testing.F) {
	b, _ := goldenAckBody.AppendBody(nil)
	f.Add(b)
	b, _ = goldenAckNowhere.AppendBody(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Ack
		if err := ParseAckBody(goldenAckBody.Header, b, &a); err != nil {
			return
		}
		if a.Missing&^MissingMask(a.Newest) != 0 || a.Received(0) {
			t.Fatalf("body % x decoded to newest %d, missing %#x: a packet below 1", b, a.Newest, a.Missing)
		}
		if (a.Nowhere == 0) != (a.Why == 0) {
			t.Fatalf("body % x decoded to %d keys typed into nothing for reason %d", b, a.Nowhere, a.Why)
		}
		out, err := a.AppendBody(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("body % x re-encodes to % x (%v)", b, out, err)
		}
	})
}

// BenchmarkAckSize reports the bytes on the wire of a handshaken ack
// (PROTOCOL.md §9) a minute into a session typing about 10 key events a
// second: packet 3,000, stamp 60,000 ms, held 250 µs; with no packet
// missing and the wall clock not given (most acks while typing), with the
// wall clock (one a second), and with the two packets before newest
// missing; the receiver's ack 900 (a 12-byte compact header, §2). The
// datagram (header, body, tag) and the IPv4 packet
// (+ 28 bytes of IP and UDP headers). PROTOCOL.md §5 quotes them.
func BenchmarkAckSize(b *testing.B) {
	a := Ack{Header: Header{Type: TypeAck, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 900},
		Newest: 3000, Stamp: 60_000, Delay: 250}
	wall := a
	wall.Wall = 1_795_000_000_000
	lossy := a
	lossy.Missing = 0b11
	for _, tc := range []struct {
		name string
		a    Ack
	}{{"no-loss", a}, {"wall", wall}, {"two-lost", lossy}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = tc.a.AppendBody(buf[:0])
			}
			datagram := tc.a.Header.Len() + len(buf) + TagLen
			b.ReportMetric(float64(datagram), "bytes/datagram")
			b.ReportMetric(float64(datagram+28), "IPv4-bytes/datagram")
		})
	}
}
