package handshake

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the code")

// field is a named span of a golden message, for the annotated hex.
type field struct {
	name     string
	from, to int
}

// golden is one golden message: its file, what it is, and its fields.
type golden struct {
	file, about string
	b           []byte
	fields      []field
}

var headerFields = []field{{"\"KR\", version 5, type, flags, reserved", 0, offSession}, {"session id", offSession, offCounter}, {"packet counter", offCounter, HeaderLen}}

const goldenAbout = `keys: sender static private 10 11 .. 2f, receiver static private
40 41 .. 5f, pre-shared key 80 81 .. 9f; randomness: math/rand/v2 ChaCha8
seeded 01 00 .. 00 (sender) and 02 00 .. 00 (receiver); session
0x0123456789abcdef; time 2026-11-26T08:00:00Z (t0).`

// goldenRun makes the golden exchange: an initiation at t0 (counter 1),
// answered under load by a cookie reply; the retry at t0+1s (counter 2)
// with mac2, answered by a response; the sender's first queue packet
// (counter 3); the receiver's first ack (its counter 1).
func goldenRun(t testing.TB) []golden {
	p := newPair(t, 1)
	t1 := t0.Add(time.Second)
	init1 := initiation(t, p.init, 1, t0)
	a, err := p.resp.ConsumeInitiation(nil, init1, src, true, t0)
	if err != nil || !a.Cookie {
		t.Fatalf("golden cookie reply: %v", err)
	}
	cookie := a.Packet
	if err := p.init.ConsumeCookieReply(mustCookie(t, cookie), t0); err != nil {
		t.Fatal(err)
	}
	init2 := initiation(t, p.init, 2, t1)
	a, err = p.resp.ConsumeInitiation(nil, init2, src, true, t1)
	if err != nil || a.Keypair == nil {
		t.Fatalf("golden response: %v", err)
	}
	resp := a.Packet
	ks, err := p.init.ConsumeResponse(mustResponse(t, resp), t1)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: 3}, []byte("keyrelay protocol 5 queue"), t1)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := a.Keypair.Seal(nil, Header{Type: TypeAck, Session: session, Counter: 1}, []byte("ack"), t1)
	if err != nil {
		t.Fatal(err)
	}
	initFields := append(headerFields[:len(headerFields):len(headerFields)],
		field{"sender index", offInitSender, offInitEphemeral}, field{"ephemeral public key", offInitEphemeral, offInitStatic},
		field{"static public key, sealed", offInitStatic, offInitTimestamp}, field{"TAI64N timestamp, sealed", offInitTimestamp, offInitMAC1},
		field{"mac1", offInitMAC1, offInitMAC2}, field{"mac2", offInitMAC2, InitiationLen})
	// A transport packet's compact header (PROTOCOL.md §2): no session
	// id, the counter a uvarint.
	transportFields := func(b []byte) []field {
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		return []field{headerFields[0], {"recipient index", offTransportIndex, offTransportCounter},
			{"packet counter, uvarint", offTransportCounter, h.Len()}, {"ciphertext and tag", h.Len(), -1}}
	}
	return []golden{
		{"initiation.hex", "the initiation at t0, packet counter 1, no cookie yet (mac2 zero)", init1.Bytes(), initFields},
		{"cookie_reply.hex", "the receiver, under load, answers it from " + src.String() + " with a cookie reply", cookie, append(headerFields[:len(headerFields):len(headerFields)],
			field{"sender index, echoed", offCookieSender, offCookieNonce}, field{"nonce", offCookieNonce, offCookieSealed}, field{"cookie, sealed", offCookieSealed, CookieReplyLen})},
		{"initiation_mac2.hex", "the retry at t0+1s, packet counter 2, mac2 under that cookie", init2.Bytes(), initFields},
		{"response.hex", "the receiver's response to it", resp, append(headerFields[:len(headerFields):len(headerFields)],
			field{"sender index, echoed", offRespSender, offRespReceiver}, field{"receiver index", offRespReceiver, offRespEphemeral},
			field{"ephemeral public key", offRespEphemeral, offRespEmpty}, field{"empty payload, sealed (tag)", offRespEmpty, offRespMAC1},
			field{"mac1", offRespMAC1, offRespMAC2}, field{"mac2 (zero: a sender is never under load)", offRespMAC2, ResponseLen})},
		{"transport_queue.hex", "the sender's queue packet 3, plaintext \"keyrelay protocol 5 queue\"", queue, transportFields(queue)},
		{"transport_ack.hex", "the receiver's ack 1, plaintext \"ack\"", ack, transportFields(ack)},
	}
}

func (g golden) encode() []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "# keyrelay protocol 5 golden %s: %s.\n", strings.TrimSuffix(g.file, ".hex"), g.about)
	fmt.Fprintf(&w, "# %s\n", strings.ReplaceAll(goldenAbout, "\n", "\n# "))
	fmt.Fprintf(&w, "# Made by handshake.TestGolden (go test ./handshake -run TestGolden -update).\n")
	for _, f := range g.fields {
		to := f.to
		if to < 0 {
			to = len(g.b)
		}
		for i := f.from; i < to; i += 16 {
			line := strings.TrimSpace(fmt.Sprintf("% x", g.b[i:min(i+16, to)]))
			note := ""
			if i == f.from {
				note = fmt.Sprintf("# %d: %s", f.from, f.name)
			}
			fmt.Fprintln(&w, strings.TrimRight(fmt.Sprintf("%-48s %s", line, note), " "))
		}
	}
	return w.Bytes()
}

// decodeGolden reads an annotated hex file: '#' starts a comment.
func decodeGolden(t testing.TB, text []byte) []byte {
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden: the checked-in golden messages decode as what they are, and
// the code, given the same keys, randomness and time, makes them again
// byte for byte (package doc's layouts).
func TestGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	for _, g := range goldenRun(t) {
		path := filepath.Join(dir, g.file)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, g.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to make it)", err)
		}
		b := decodeGolden(t, text)
		if !bytes.Equal(b, g.b) {
			t.Errorf("%s: the code makes\n% x\nthe file holds\n% x", g.file, g.b, b)
		}
		h, err := ParseHeader(b)
		if err != nil || h.Session != session && !h.Compact() {
			t.Fatalf("%s: header %+v, %v", g.file, h, err)
		}
		switch h.Type {
		case TypeInitiation:
			_, err = ParseInitiation(b)
		case TypeResponse:
			_, err = ParseResponse(b)
		case TypeCookieReply:
			_, err = ParseCookieReply(b)
		default:
			_, err = ParseTransport(b)
		}
		if err != nil {
			t.Errorf("%s: %v", g.file, err)
		}
	}
}

// TestGoldenOpens: the golden transport packets open with keys made from
// the golden handshake's messages alone, read by fresh ends.
func TestGoldenOpens(t *testing.T) {
	read := func(name string) []byte {
		text, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		return decodeGolden(t, text)
	}
	p := newPair(t, 1)
	// The sender's side: replay the randomness up to the retry, so its
	// pending handshake is the golden one.
	initiation(t, p.init, 1, t0)
	if err := p.init.ConsumeCookieReply(mustCookie(t, read("cookie_reply.hex")), t0); err != nil {
		t.Fatal(err)
	}
	initiation(t, p.init, 2, t0.Add(time.Second))
	ks, err := p.init.ConsumeResponse(mustResponse(t, read("response.hex")), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ks.Open(nil, mustTransport(t, read("transport_ack.hex")), t0.Add(time.Second))
	if err != nil || string(got) != "ack" {
		t.Fatalf("golden ack: %q, %v", got, err)
	}
	// The receiver's side, not under load: the golden retry alone.
	m, err := ParseInitiation(read("initiation_mac2.hex"))
	if err != nil {
		t.Fatal(err)
	}
	q := newPair(t, 1)
	q.resp.cfg.Random = seeded(2)
	// Advance its randomness past the cookie secret and nonce the golden
	// run drew, so its ephemeral is the golden one.
	var skip [32 + 24]byte
	q.resp.cfg.Random.Read(skip[:])
	a, err := q.resp.ConsumeInitiation(nil, m, src, false, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := read("response.hex"); !bytes.Equal(a.Packet, want) {
		t.Fatalf("response made again:\n% x\nwant\n% x", a.Packet, want)
	}
	got, err = a.Keypair.Open(nil, mustTransport(t, read("transport_queue.hex")), t0.Add(time.Second))
	if err != nil || string(got) != "keyrelay protocol 5 queue" {
		t.Fatalf("golden queue packet: %q, %v", got, err)
	}
}
