package handshake

import (
	"bytes"
	"errors"
	"testing"

	"github.com/keyrelay/keyrelay/wire"
)

// goldenMessages are the golden exchange's datagrams, by type.
func goldenMessages(t testing.TB) map[string][]byte {
	m := map[string][]byte{}
	for _, g := range goldenRun(t) {
		m[g.file] = g.b
	}
	return m
}

// TestParseHeaderRejects: the header checks of PROTOCOL.md §2 and §4, each
// with its sentinel error.
func TestParseHeaderRejects(t *testing.T) {
	good := goldenMessages(t)["initiation.hex"]
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, wire.ErrTruncated},
		{"other magic", edit(func(b []byte) []byte { b[0] = 'k'; return b }), wire.ErrMagic},
		{"short", good[:HeaderLen-1], wire.ErrTruncated},
		{"protocol 4", edit(func(b []byte) []byte { b[offVersion] = 4; return b }), wire.ErrVersion},
		{"reserved byte", edit(func(b []byte) []byte { b[offReserved] = 1; return b }), wire.ErrFlags},
		{"type 0", edit(func(b []byte) []byte { b[offType] = 0; return b }), wire.ErrType},
		{"type 5 (a notice: wire.ParseNotice)", edit(func(b []byte) []byte { b[offType] = 5; return b }), wire.ErrType},
		{"type 7", edit(func(b []byte) []byte { b[offType] = 7; return b }), wire.ErrType},
		{"flags on a handshake message", edit(func(b []byte) []byte { b[offFlags] = FlagSealed; return b }), wire.ErrFlags},
		{"transport not sealed", edit(func(b []byte) []byte { b[offType], b[offFlags] = byte(TypeQueue), 0; return b }), wire.ErrFlags},
		{"transport, unknown flag", edit(func(b []byte) []byte { b[offType], b[offFlags] = byte(TypeAck), 3; return b }), wire.ErrFlags},
		{"session 0", edit(func(b []byte) []byte { clear(b[offSession:offCounter]); return b }), wire.ErrHeader},
		{"counter 0", edit(func(b []byte) []byte { clear(b[offCounter:HeaderLen]); return b }), wire.ErrHeader},
		{"too large", append(bytes.Clone(good), make([]byte, wire.MaxPacketSize)...), wire.ErrTooLarge},
	}
	for _, tt := range tests {
		if _, err := ParseHeader(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

// parsers are the package's message parsers, each with the golden message
// it reads.
var parsers = []struct {
	name   string
	golden string
	parse  func([]byte) error
}{
	{"initiation", "initiation.hex", func(b []byte) error { _, err := ParseInitiation(b); return err }},
	{"response", "response.hex", func(b []byte) error { _, err := ParseResponse(b); return err }},
	{"cookie reply", "cookie_reply.hex", func(b []byte) error { _, err := ParseCookieReply(b); return err }},
	{"transport", "transport_queue.hex", func(b []byte) error { _, err := ParseTransport(b); return err }},
}

// TestParseTruncatedAndTrailing: every prefix of a message is an error
// (ErrTruncated once the header is whole; for transport, every prefix
// shorter than TransportMinLen); a handshake message with bytes
// after it is ErrTrailing (its MACs cover a fixed length); another
// message's type is ErrType.
func TestParseTruncatedAndTrailing(t *testing.T) {
	msgs := goldenMessages(t)
	for _, p := range parsers {
		b := msgs[p.golden]
		if err := p.parse(b); err != nil {
			t.Fatalf("%s: the golden message: %v", p.name, err)
		}
		whole := len(b)
		if p.name == "transport" {
			whole = TransportMinLen // a longer prefix is a shorter ciphertext: Open refuses it
		}
		for n := range whole {
			err := p.parse(b[:n])
			if err == nil || n >= HeaderLen && !errors.Is(err, wire.ErrTruncated) {
				t.Fatalf("%s: %d of %d bytes: %v", p.name, n, len(b), err)
			}
		}
		long := append(bytes.Clone(b), 0)
		if err := p.parse(long); p.name != "transport" && !errors.Is(err, wire.ErrTrailing) {
			t.Fatalf("%s: a byte more: %v", p.name, err)
		}
		for other, ob := range msgs {
			if other != p.golden && ob[offType] != b[offType] && len(ob) == len(b) {
				if err := p.parse(ob); !errors.Is(err, wire.ErrType) {
					t.Fatalf("%s parses %s: %v", p.name, other, err)
				}
			}
		}
		ob := bytes.Clone(b)
		ob[offType] = byte(TypeInitiation)
		if b[offType] == byte(TypeInitiation) {
			ob[offType] = byte(TypeResponse)
		}
		ob[offFlags] = 0
		if err := p.parse(ob); !errors.Is(err, wire.ErrType) {
			t.Fatalf("%s: another type: %v", p.name, err)
		}
	}
}

// TestParsedFields: the views name the bytes the layout says.
func TestParsedFields(t *testing.T) {
	msgs := goldenMessages(t)
	i, _ := ParseInitiation(msgs["initiation.hex"])
	r, _ := ParseResponse(msgs["response.hex"])
	c, _ := ParseCookieReply(msgs["cookie_reply.hex"])
	q, _ := ParseTransport(msgs["transport_queue.hex"])
	a, _ := ParseTransport(msgs["transport_ack.hex"])
	if i.Header.Type != TypeInitiation || i.Header.Counter != 1 || r.Header.Counter != 2 || c.Header.Counter != 1 {
		t.Fatalf("headers: %+v %+v %+v", i.Header, r.Header, c.Header)
	}
	if c.Sender != i.Sender || r.Sender == 0 || r.Receiver == 0 {
		t.Fatalf("indices: initiation %d, cookie %d, response %d/%d", i.Sender, c.Sender, r.Sender, r.Receiver)
	}
	if q.Index != r.Receiver || a.Index != r.Sender {
		t.Fatalf("transport indices: queue %d (want the receiver's %d), ack %d (want the sender's %d)", q.Index, r.Receiver, a.Index, r.Sender)
	}
	if !bytes.Equal(i.MAC1(), i.Bytes()[134:150]) || !bytes.Equal(r.MAC2(), make([]byte, 16)) {
		t.Fatal("MAC views")
	}
}
