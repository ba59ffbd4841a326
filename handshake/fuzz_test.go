package handshake

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/keyrelay/keyrelay/wire"
)

// Every parser's fuzz target: no input panics, whatever parses names its
// own bytes (the view is the datagram, its header re-encodes to the same
// bytes: 22, or a transport packet's compact header), and the consumer behind the parser then handles it without
// panicking. Seeds: the golden messages here, more under
// testdata/fuzz/FuzzXxx.

func fuzzSeeds(f *testing.F, golden string) {
	b := goldenMessages(f)[golden]
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Add(append(bytes.Clone(b), 0))
}

func checkHeader(t *testing.T, h Header, b []byte) {
	if got := h.Append(nil); len(got) != h.Len() || !bytes.Equal(got, b[:h.Len()]) {
		t.Fatalf("header re-encodes as % x, was % x", got, b[:min(h.Len(), len(b))])
	}
}

func FuzzParseInitiation(f *testing.F) {
	fuzzSeeds(f, "initiation.hex")
	fuzzSeeds(f, "initiation_mac2.hex")
	p := newPair(f, 1)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseInitiation(b)
		if err != nil {
			return
		}
		checkHeader(t, m.Header, b)
		if len(m.Bytes()) != InitiationLen || m.Sender != binary.BigEndian.Uint32(b[offInitSender:]) {
			t.Fatalf("view %d bytes, sender %d", len(m.Bytes()), m.Sender)
		}
		for _, load := range []bool{false, true} {
			a, err := p.resp.ConsumeInitiation(nil, m, src, load, t0)
			if err == nil && len(a.Packet) > len(b) {
				t.Fatalf("answered %d bytes with %d", len(b), len(a.Packet))
			}
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	fuzzSeeds(f, "response.hex")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseResponse(b)
		if err != nil {
			return
		}
		checkHeader(t, m.Header, b)
		if len(m.Bytes()) != ResponseLen || m.Receiver != binary.BigEndian.Uint32(b[offRespReceiver:]) {
			t.Fatalf("view %d bytes, receiver %d", len(m.Bytes()), m.Receiver)
		}
		p := newPair(t, 1)
		initiation(t, p.init, 1, t0)
		p.init.pending[0].index = m.Sender // let it reach the Noise message
		binary.BigEndian.PutUint64(p.init.pending[0].initiation[offSession:], m.Header.Session)
		binary.BigEndian.PutUint64(p.init.pending[0].initiation[offCounter:], m.Header.Counter)
		p.init.ConsumeResponse(m, t0)
	})
}

func FuzzParseCookieReply(f *testing.F) {
	fuzzSeeds(f, "cookie_reply.hex")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseCookieReply(b)
		if err != nil {
			return
		}
		checkHeader(t, m.Header, b)
		if len(m.Bytes()) != CookieReplyLen || m.Sender != binary.BigEndian.Uint32(b[offCookieSender:]) {
			t.Fatalf("view %d bytes, sender %d", len(m.Bytes()), m.Sender)
		}
		p := newPair(t, 1)
		initiation(t, p.init, 1, t0)
		p.init.ConsumeCookieReply(m, t0)
	})
}

func FuzzParseTransport(f *testing.F) {
	fuzzSeeds(f, "transport_queue.hex")
	fuzzSeeds(f, "transport_ack.hex")
	p := newPair(f, 1)
	ks, kr := p.handshake(f, session, 1, t0)
	var ring Keyring
	ring.Begin(kr)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseTransport(b)
		if err != nil {
			return
		}
		checkHeader(t, m.Header, b)
		if len(m.Bytes()) != len(b) || m.Index != binary.BigEndian.Uint32(b[offTransportIndex:]) || m.Header.Session != 0 {
			t.Fatalf("view %d bytes, index %d, session %d", len(m.Bytes()), m.Index, m.Header.Session)
		}
		if pt, _, err := ring.Open(nil, m, t0); err == nil && len(pt) != len(b)-m.Header.Len()-tagLen {
			t.Fatalf("opened %d bytes of %d", len(pt), len(b))
		}
		ks.Open(nil, m, t0)
	})
}

// FuzzParse: the dispatcher agrees with the parser of the datagram's type,
// error for error and view for view.
func FuzzParse(f *testing.F) {
	for _, g := range []string{"initiation.hex", "response.hex", "cookie_reply.hex", "transport_queue.hex", "transport_ack.hex"} {
		fuzzSeeds(f, g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		h, herr := ParseHeader(b)
		if herr != nil {
			if err == nil {
				t.Fatalf("Parse took what ParseHeader refused: %v", herr)
			}
			return
		}
		var err2 error
		var same bool
		switch h.Type {
		case TypeInitiation:
			var v Initiation
			v, err2 = ParseInitiation(b)
			same = v.Header == m.Initiation.Header && v.Sender == m.Initiation.Sender && len(v.b) == len(m.Initiation.b)
		case TypeResponse:
			var v Response
			v, err2 = ParseResponse(b)
			same = v.Header == m.Response.Header && v.Sender == m.Response.Sender && v.Receiver == m.Response.Receiver && len(v.b) == len(m.Response.b)
		case TypeCookieReply:
			var v CookieReply
			v, err2 = ParseCookieReply(b)
			same = v.Header == m.CookieReply.Header && v.Sender == m.CookieReply.Sender && len(v.b) == len(m.CookieReply.b)
		case TypeQueue, TypeAck:
			if h.Flags&wire.FlagOneWay != 0 {
				// No handshake: passed on whole, for package wire.
				if err != nil || len(m.OneWay) != len(b) {
					t.Fatalf("flags %#x: Parse %v, passed on %d of %d bytes", h.Flags, err, len(m.OneWay), len(b))
				}
				return
			}
			var v Transport
			v, err2 = ParseTransport(b)
			same = v.Header == m.Transport.Header && v.Index == m.Transport.Index && len(v.b) == len(m.Transport.b)
		}
		if (err == nil) != (err2 == nil) || err == nil && !same {
			t.Fatalf("type %d: Parse %v, its parser %v (same view: %v)", h.Type, err, err2, same)
		}
	})
}
