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
