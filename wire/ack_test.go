package wire

import (
	"bytes"
	"errors"
	"testing"
)

var goldenAck = Ack{Header: Header{Type: TypeAck, Session: 0x0123456789ABCDEF, Counter: 7}, Newest: 42, Bits: 0b1011, Stamp: 1497, Delay: 250, Wall: 1_700_000_000_123}

// TestAckRoundTrip (PROTOCOL.md §9): plaintext and sealed acks round-trip;
// a sealed ack opens only with the receiver-to-sender key.
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
	r2s, _ := SessionAEAD(testPSK(), goldenAck.Header.Session, ReceiverToSender)
	s2r, _ := SessionAEAD(testPSK(), goldenAck.Header.Session, SenderToReceiver)
	sb, err := goldenAck.AppendSealed(nil, r2s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenAck(sb, r2s, nil, &a)
	a.Header.Flags &^= FlagSealed // the only difference from the plaintext ack
	if err != nil || a != goldenAck {
		t.Fatalf("OpenAck = %+v, %v", a, err)
	}
	if _, err := OpenAck(sb, s2r, nil, &a); !errors.Is(err, ErrAuth) {
		t.Errorf("ack opened with the sender-to-receiver key: %v", err)
	}
	for i := range sb {
		f := bytes.Clone(sb)
		f[i] ^= 0x80
		if _, err := OpenAck(f, r2s, nil, &a); err == nil {
			t.Errorf("byte %d flipped: accepted", i)
		}
	}
	// A queue packet is not an ack and vice versa.
	q := sealedGolden(t)
	if _, err := OpenAck(q, s2r, nil, &a); !errors.Is(err, ErrType) {
		t.Errorf("queue as ack: %v", err)
	}
}

func FuzzParseAck(f *testing.F) {
	b, _ := goldenAck.Append(nil)
	f.Add(b)
	// A handshaken session's ack carries its ticket (PROTOCOL.md §8.3).
	ticketed := goldenAck
	ticketed.Header.Flags, ticketed.Header.Ticket = FlagTicket, Ticket{0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8}
	b, _ = ticketed.Append(nil)
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
