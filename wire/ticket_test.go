package wire

import (
	"bytes"
	"crypto/cipher"
	"errors"
	"testing"
)

// The handshake's golden vectors (PROTOCOL.md §8.6): the key 00 01 … 1f,
// session 0x0123456789ABCDEF, a receiver secret of 32 bytes 0xAA, epoch 7.
var (
	goldenSecret = bytes.Repeat([]byte{0xAA}, 32)
	goldenTicket = MintTicket(goldenSecret, 0x0123456789ABCDEF, 7)
)

func handshakeKey(t testing.TB) []byte {
	t.Helper()
	k, err := HandshakeKey(testPSK(), 0x0123456789ABCDEF)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyFor(k []byte) func(uint64) ([]byte, error) {
	return func(uint64) ([]byte, error) { return k, nil }
}

// ticketedGolden is §6's packet in a handshaken session: flag TICKET, the
// golden ticket after the header, since 1490 in place of the wall clock,
// sealed with the ticket's keys.
func ticketedGolden(t testing.TB) []byte {
	t.Helper()
	q := golden
	q.Header.Flags, q.Header.Ticket = FlagTicket, goldenTicket
	q.Wall, q.Since = 0, 1490
	a, err := TicketAEAD(testPSK(), q.Header.Session, goldenTicket, SenderToReceiver)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.AppendSealed(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandshakeGolden (PROTOCOL.md §8.6): the hello, the ticket and a
// ticketed queue packet are the bytes of the golden files, and each parses
// back to what made it.
func TestHandshakeGolden(t *testing.T) {
	k := handshakeKey(t)
	hello := AppendHello(nil, 0x0123456789ABCDEF, 1, k)
	ticket := AppendTicket(nil, 0x0123456789ABCDEF, 1, goldenTicket, k)
	for _, g := range []struct {
		file string
		got  []byte
		n    int
	}{
		{"hello_v4.hex", hello, HelloLen},
		{"ticket_v4.hex", ticket, TicketMsgLen},
		{"queue_v4_ticket_sealed.hex", ticketedGolden(t), 0},
	} {
		want := readHex(t, "../testdata/golden/"+g.file)
		if !bytes.Equal(g.got, want) {
			t.Errorf("%s:\n got % x\nwant % x", g.file, g.got, want)
		}
		if g.n != 0 && len(g.got) != g.n {
			t.Errorf("%s: %d bytes, want %d", g.file, len(g.got), g.n)
		}
	}
	if h, err := ParseHello(hello, keyFor(k)); err != nil || h.Counter != 1 || h.Session != 0x0123456789ABCDEF {
		t.Errorf("hello parses to %+v, %v", h, err)
	}
	h, tk, err := ParseTicket(ticket, keyFor(k))
	if err != nil || h.Counter != 1 || tk != goldenTicket || tk.Epoch() != 7 || !tk.Minted(goldenSecret, 0x0123456789ABCDEF) {
		t.Errorf("ticket parses to %+v %x (epoch %d), %v", h, tk, tk.Epoch(), err)
	}
	var q Queue
	a := func(uint64) (cipher.AEAD, error) {
		return TicketAEAD(testPSK(), 0x0123456789ABCDEF, goldenTicket, SenderToReceiver)
	}
	if _, err := OpenQueue(ticketedGolden(t), a, nil, &q); err != nil || q.Since != 1490 || q.Wall != 0 || q.Header.Ticket != goldenTicket {
		t.Errorf("ticketed packet opens to since %d wall %d ticket %x: %v", q.Since, q.Wall, q.Header.Ticket, err)
	}
}

// TestTicketsAreTheirReceiversOwn (PROTOCOL.md §8.3): a ticket checks only
// with the secret and the session it was made for, and each byte matters.
func TestTicketsAreTheirReceiversOwn(t *testing.T) {
	other := bytes.Repeat([]byte{0xAB}, 32)
	if goldenTicket.Minted(other, 0x0123456789ABCDEF) {
		t.Error("another receiver's secret checks the ticket")
	}
	if goldenTicket.Minted(goldenSecret, 0x0123456789ABCDEE) {
		t.Error("the ticket checks for another session")
	}
	for i := range TicketLen {
		tk := goldenTicket
		tk[i] ^= 1
		if tk.Minted(goldenSecret, 0x0123456789ABCDEF) {
			t.Errorf("a ticket with byte %d flipped still checks", i)
		}
	}
	// The keys of two tickets (two receivers, or one restarted) differ:
	// a packet sealed for one does not open with the other's.
	b := ticketedGolden(t)
	var q Queue
	_, err := OpenQueue(b, func(s uint64) (cipher.AEAD, error) {
		return TicketAEAD(testPSK(), s, MintTicket(other, s, 7), SenderToReceiver)
	}, nil, &q)
	if !errors.Is(err, ErrAuth) {
		t.Errorf("a packet sealed for one ticket opened with another's keys: %v", err)
	}
}

// TestHandshakeTampering (PROTOCOL.md §8.3): a hello or ticket with any
// bit flipped, cut short, extended, with another key, or unsealed where a
// key is expected is rejected.
func TestHandshakeTampering(t *testing.T) {
	k := handshakeKey(t)
	hello := AppendHello(nil, 0x0123456789ABCDEF, 1, k)
	ticket := AppendTicket(nil, 0x0123456789ABCDEF, 1, goldenTicket, k)
	parseH := func(b []byte, k []byte) error {
		var f func(uint64) ([]byte, error)
		if k != nil {
			f = keyFor(k)
		}
		_, err := ParseHello(b, f)
		return err
	}
	parseT := func(b []byte, k []byte) error {
		var f func(uint64) ([]byte, error)
		if k != nil {
			f = keyFor(k)
		}
		_, _, err := ParseTicket(b, f)
		return err
	}
	for name, c := range map[string]struct {
		b     []byte
		parse func([]byte, []byte) error
	}{"hello": {hello, parseH}, "ticket": {ticket, parseT}} {
		for i := range len(c.b) * 8 {
			b := bytes.Clone(c.b)
			b[i/8] ^= 1 << (i % 8)
			if c.parse(b, k) == nil {
				t.Errorf("%s with bit %d flipped accepted", name, i)
			}
		}
		if c.parse(c.b[:len(c.b)-1], k) == nil || c.parse(append(bytes.Clone(c.b), 0), k) == nil {
			t.Errorf("%s cut short or extended accepted", name)
		}
		if err := c.parse(c.b, bytes.Repeat([]byte{1}, 32)); !errors.Is(err, ErrAuth) {
			t.Errorf("%s with another key: %v, want ErrAuth", name, err)
		}
		if err := c.parse(c.b, nil); !errors.Is(err, ErrSealed) {
			t.Errorf("sealed %s without a key: %v, want ErrSealed", name, err)
		}
	}
	plain := AppendHello(nil, 5, 9, nil)
	if err := parseH(plain, k); !errors.Is(err, ErrNotSealed) {
		t.Errorf("plaintext hello with a key: %v, want ErrNotSealed", err)
	}
	if err := parseH(plain, nil); err != nil {
		t.Errorf("plaintext hello without a key: %v", err)
	}
	if h, err := ParseHeader(hello); err != nil || h.Type != TypeHello {
		t.Errorf("hello header: %+v %v", h, err)
	}
	// The ticket flag belongs to queue packets and acks only.
	bad := bytes.Clone(hello)
	bad[4] |= FlagTicket
	if _, err := ParseHeader(bad); !errors.Is(err, ErrFlags) {
		t.Errorf("a hello with the ticket flag: %v, want ErrFlags", err)
	}
	// A ticketed packet cut inside its ticket is truncated.
	if _, err := ParseHeader(ticketedGolden(t)[:HeaderLen+5]); !errors.Is(err, ErrTruncated) {
		t.Errorf("a header cut inside its ticket: %v, want ErrTruncated", err)
	}
}

// TestHelloIsNoSmallerThanItsAnswer: a receiver's ticket is never larger
// than the hello that asked for it, so hellos cannot be used to amplify
// traffic at a third party (PROTOCOL.md §8.3).
func TestHelloIsNoSmallerThanItsAnswer(t *testing.T) {
	k := handshakeKey(t)
	if h, tk := len(AppendHello(nil, 1, 1, k)), len(AppendTicket(nil, 1, 1, goldenTicket, k)); h < tk {
		t.Errorf("hello %d bytes, ticket %d", h, tk)
	}
	if h, tk := len(AppendHello(nil, 1, 1, nil)), len(AppendTicket(nil, 1, 1, goldenTicket, nil)); h < tk {
		t.Errorf("plaintext hello %d bytes, ticket %d", h, tk)
	}
}

func FuzzParseHello(f *testing.F) {
	k := handshakeKey(f)
	f.Add(AppendHello(nil, 0x0123456789ABCDEF, 1, k))
	f.Add(AppendHello(nil, 0x0123456789ABCDEF, 1, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, key := range [][]byte{k, nil} {
			var kf func(uint64) ([]byte, error)
			if key != nil {
				kf = keyFor(key)
			}
			h, err := ParseHello(b, kf)
			if err != nil {
				continue
			}
			// What parses re-encodes to itself.
			if out := AppendHello(nil, h.Session, h.Counter, key); !bytes.Equal(out, b) {
				t.Fatalf("hello % x re-encodes to % x", b, out)
			}
		}
	})
}

func FuzzParseTicket(f *testing.F) {
	k := handshakeKey(f)
	f.Add(AppendTicket(nil, 0x0123456789ABCDEF, 1, goldenTicket, k))
	f.Add(AppendTicket(nil, 0x0123456789ABCDEF, 1, goldenTicket, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, key := range [][]byte{k, nil} {
			var kf func(uint64) ([]byte, error)
			if key != nil {
				kf = keyFor(key)
			}
			h, tk, err := ParseTicket(b, kf)
			if err != nil {
				continue
			}
			if out := AppendTicket(nil, h.Session, h.Counter, tk, key); !bytes.Equal(out, b) {
				t.Fatalf("ticket % x re-encodes to % x", b, out)
			}
		}
	})
}
