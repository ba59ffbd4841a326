package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
)

// readHex reads a hex file with '#' comments.
func readHex(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var golden = Queue{
	Header: Header{Type: TypeQueue, Flags: FlagOneWay, Session: 0x0123456789ABCDEF, Counter: 42},
	Clock:  1500,
	Wall:   1_795_000_000_000,
	Locks:  keys.LocksKnown | keys.LockNum,
	Events: []eventqueue.Event{
		{Key: keys.Key(keys.KeyH), Kind: eventqueue.Up, Stamp: 1497},
		{Key: keys.Key(keys.KeyH), Kind: eventqueue.Down, Stamp: 1495},
		{Key: keys.Key(keys.ShiftLeft), Kind: eventqueue.Down, Stamp: 1490},
		{},
	},
}

// TestGolden: the worked example of PROTOCOL.md §6 decodes field by field
// and re-encodes to the same bytes.
func TestGolden(t *testing.T) {
	b := readHex(t, "../testdata/golden/queue_v5.hex")
	var q Queue
	if err := ParseQueue(b, &q); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q) != fmt.Sprint(golden) {
		t.Errorf("decoded %+v\nwant    %+v", q, golden)
	}
	enc, err := golden.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Errorf("encoded % x\nwant    % x", enc, b)
	}
	if golden.Len() != len(b) || len(b) != 50 {
		t.Errorf("Len() = %d, file %d bytes, PROTOCOL.md says 50", golden.Len(), len(b))
	}
}

// goldenChars is PROTOCOL.md §6.1: characters typed from a terminal, "é€".
var goldenChars = Queue{
	Header: Header{Type: TypeQueue, Flags: FlagOneWay, Session: 0x0123456789ABCDEF, Counter: 43},
	Clock:  2000,
	Wall:   1_795_000_000_500,
	Events: []eventqueue.Event{
		{Key: keys.Char('€'), Kind: eventqueue.Up, Stamp: 1997},
		{Key: keys.Char('€'), Kind: eventqueue.Down, Stamp: 1994},
		{Key: keys.Char('é'), Kind: eventqueue.Up, Stamp: 1990},
		{Key: keys.Char('é'), Kind: eventqueue.Down, Stamp: 1985},
	},
}

// TestGoldenChars: the character example of PROTOCOL.md §6.1 decodes to
// character events and re-encodes to the same bytes.
func TestGoldenChars(t *testing.T) {
	b := readHex(t, "../testdata/golden/queue_v5_chars.hex")
	var q Queue
	if err := ParseQueue(b, &q); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q) != fmt.Sprint(goldenChars) {
		t.Errorf("decoded %+v\nwant    %+v", q, goldenChars)
	}
	for _, e := range q.Events {
		if r, ok := e.Key.Char(); !ok || (r != 'é' && r != '€') {
			t.Errorf("entry %+v is not the character é or €", e)
		}
	}
	enc, err := goldenChars.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Errorf("encoded % x\nwant    % x", enc, b)
	}
	if goldenChars.Len() != len(b) || len(b) != 49 {
		t.Errorf("Len() = %d, file %d bytes, PROTOCOL.md says 49", goldenChars.Len(), len(b))
	}
}

// TestTruncatedPrefixes: every proper prefix of a valid packet is an error
// (PROTOCOL.md §4), ErrTruncated except where the magic is already wrong.
func TestTruncatedPrefixes(t *testing.T) {
	for _, g := range []Queue{golden, goldenChars} {
		b, _ := g.Append(nil)
		var q Queue
		for i := range len(b) {
			if err := ParseQueue(b[:i], &q); !errors.Is(err, ErrTruncated) {
				t.Errorf("prefix of %d bytes: %v, want ErrTruncated", i, err)
			}
		}
		if err := ParseQueue(append(b, 0), &q); !errors.Is(err, ErrTrailing) {
			t.Errorf("extended packet: %v, want ErrTrailing", err)
		}
	}
}

// TestDecodeErrors: one case per decoding rule of PROTOCOL.md §4.
func TestDecodeErrors(t *testing.T) {
	hdr := "4b52 05 01 02 00 0123456789abcdef 000000000000002a"
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"valid, one none entry", hdr + "00 00 00 01 00 000000", nil},
		{"locks known, Caps Lock on", hdr + "00 00 81 01 00 000000", nil},
		{"locks known, Num Lock on", hdr + "00 00 82 01 00 000000", nil},
		{"Caps Lock without known", hdr + "00 00 01 01 00 000000", ErrQueue},
		{"unknown lock bit", hdr + "00 00 84 01 00 000000", ErrQueue},
		{"no locks byte", hdr + "00 00", ErrTruncated},
		{"overlong wall", hdr + "00 8000 01 00 000000", ErrVarint},
		{"bad magic", "4b53 05 01 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrMagic},
		{"version 4 (keyrelay with tickets)", "4b52 04 01 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrVersion},
		{"version 3 (keyrelay before the handshake)", "4b52 03 01 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrVersion},
		{"version 2 (keyrelay before characters)", "4b52 02 01 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrVersion},
		{"version 1 (plaintext keyrelay before keys)", "4b52 01 01 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrVersion},
		{"unknown type", "4b52 05 07 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrType},
		{"ack where a queue is expected", "4b52 05 02 02 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrType},
		{"unknown flag", "4b52 05 01 06 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrFlags},
		{"reserved byte set", "4b52 05 01 02 01 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrFlags},
		{"sealed", "4b52 05 01 07 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrSealed},
		{"one-way, not signed (an older sender)", "4b52 05 01 03 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrUnsigned},
		{"handshaken", "4b52 05 01 01 00 01234567 2a 00 00 00 01 00 000000", ErrSealed},
		{"handshaken, counter 0", "4b52 05 01 01 00 01234567 00 00 00 00 01 00 000000", ErrHeader},
		{"handshaken, overlong counter", "4b52 05 01 01 00 01234567 aa00 00 00 00 01 00 000000", ErrVarint},
		{"handshaken, no counter", "4b52 05 01 01 00 01234567", ErrTruncated},
		{"no flags", "4b52 05 01 00 00 0123456789abcdef 000000000000002a 00 00 00 01 00 000000", ErrFlags},
		{"session 0", "4b52 05 01 02 00 0000000000000000 000000000000002a 00 00 00 01 00 000000", ErrHeader},
		{"counter 0", "4b52 05 01 02 00 0123456789abcdef 0000000000000000 00 00 01 00 000000", ErrHeader},
		{"overlong clock", hdr + "8000 00 01 00 000000", ErrVarint},
		{"clock overflow", hdr + "ffffffffffffffffff02 00 01 00 000000", ErrVarint},
		{"zero entries", hdr + "00 00 00 00 00", ErrQueue},
		{"kind 5", hdr + "00 00 00 01 00 050004", ErrQueue},
		{"char-down 'a'", hdr + "00 00 00 01 05 0361", nil},
		{"char-up without a back is truncated", hdr + "00 00 00 02 05 0361 04", ErrTruncated},
		{"char-down U+10FFFF", hdr + "00 00 00 01 05 03 ffff43", nil},
		{"char beyond U+10FFFF", hdr + "00 00 00 01 05 03 808044", ErrQueue},
		{"char is a surrogate", hdr + "00 00 00 01 05 03 80b003", ErrQueue},
		{"char is a control character (Enter is a key)", hdr + "00 00 00 01 05 030d", ErrQueue},
		{"char is DEL", hdr + "00 00 00 01 05 037f", ErrQueue},
		{"char 0", hdr + "00 00 00 01 05 0300", ErrQueue},
		{"overlong char", hdr + "00 00 00 01 05 03e100", ErrVarint},
		{"char truncated", hdr + "00 00 00 01 05 03e1", ErrTruncated},
		{"char-down after none", hdr + "00 00 00 02 05 000000 036101", ErrQueue},
		{"none with a key", hdr + "00 00 00 01 00 000004", ErrQueue},
		{"down of key 0", hdr + "00 00 00 01 05 010000", ErrQueue},
		{"down after none", hdr + "00 00 00 02 05 000000 01000401", ErrQueue},
		{"equal stamps of real events", hdr + "00 00 00 02 05 010004 01000500", ErrQueue},
		{"stamp below zero", hdr + "00 00 00 02 05 010004 01000506", ErrQueue},
		{"overlong back", hdr + "00 00 00 02 05 010004 0100058100", ErrVarint},
		{"trailing byte", hdr + "00 00 00 01 00 000000 00", ErrTrailing},
		{"too large", hdr + strings.Repeat("00", MaxPacketSize), ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue
			err := ParseQueue(unhex(t, tt.hex), &q)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("ParseQueue = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestEncodeRefusesInvalid: the encoder never makes what the decoder
// rejects (PROTOCOL.md §4).
func TestEncodeRefusesInvalid(t *testing.T) {
	ok := golden
	bad := func(f func(q *Queue)) Queue {
		q := ok
		q.Events = append([]eventqueue.Event(nil), ok.Events...)
		f(&q)
		return q
	}
	for name, q := range map[string]Queue{
		"no entries":       bad(func(q *Queue) { q.Events = nil }),
		"256 entries":      bad(func(q *Queue) { q.Events = make([]eventqueue.Event, 256) }),
		"session 0":        bad(func(q *Queue) { q.Header.Session = 0 }),
		"ack type":         bad(func(q *Queue) { q.Header.Type = TypeAck }),
		"sealed":           bad(func(q *Queue) { q.Header.Flags = FlagSealed }),
		"stamp increasing": bad(func(q *Queue) { q.Events[1].Stamp = 1600 }),
		"none with key":    bad(func(q *Queue) { q.Events[3].Key = 4 }),
		"kind 9":           bad(func(q *Queue) { q.Events[0].Kind = 9 }),
		"control char":     bad(func(q *Queue) { q.Events[0].Key = keys.Char('\n') }),
		"surrogate char":   bad(func(q *Queue) { q.Events[0].Key = keys.Char(0xD800) }),
		"char beyond max":  bad(func(q *Queue) { q.Events[0].Key = keys.Char(0x110000) }),
		"key beyond u16":   bad(func(q *Queue) { q.Events[0].Key = 0x10004 }),
		"locks not known":  bad(func(q *Queue) { q.Locks = keys.LockCaps }),
	} {
		if b, err := q.Append([]byte("x")); err == nil || string(b) != "x" {
			t.Errorf("%s: Append = % x, %v; want an error and the buffer unchanged", name, b, err)
		}
	}
}

// genQueue draws a valid queue the way a sender makes them.
func genQueue(t *rapid.T) Queue {
	n := rapid.IntRange(1, MaxEvents).Draw(t, "n")
	q, _ := eventqueue.New(n)
	stamp := uint64(0)
	for range rapid.IntRange(0, 3*n).Draw(t, "events") {
		stamp += rapid.Uint64Range(1, 1<<40).Draw(t, "gap")
		k := eventqueue.Up
		if rapid.Bool().Draw(t, "down") {
			k = eventqueue.Down
		}
		_, _ = q.Add(eventqueue.Event{Key: genKey(t), Kind: k, Stamp: stamp})
	}
	return Queue{
		Header: Header{Type: TypeQueue, Flags: FlagOneWay, Session: rapid.Uint64Range(1, ^uint64(0)).Draw(t, "session"), Counter: rapid.Uint64Range(1, ^uint64(0)).Draw(t, "counter")},
		Clock:  rapid.Uint64().Draw(t, "clock"),
		Locks:  rapid.SampledFrom([]keys.Locks{0, keys.LocksKnown, keys.LocksKnown | keys.LockCaps, keys.LocksKnown | keys.LockNum, keys.LocksKnown | keys.LockCaps | keys.LockNum}).Draw(t, "locks"),
		Wall:   rapid.Uint64().Draw(t, "wall"),
		Events: append([]eventqueue.Event(nil), q.Events()...),
	}
}

// genKey draws a physical key or a character (PROTOCOL.md §3: any non-zero
// u16 usage; any Unicode scalar value but control characters).
func genKey(t *rapid.T) keys.Key {
	if rapid.Bool().Draw(t, "char") {
		r := rapid.Custom(func(t *rapid.T) rune {
			return rune(rapid.IntRange(0, utf8.MaxRune).Draw(t, "rune"))
		}).Filter(keys.ValidChar).Draw(t, "char")
		return keys.Char(r)
	}
	return keys.Key(rapid.IntRange(1, 0xFFFF).Draw(t, "code"))
}

// TestRoundTrip: any queue a sender makes encodes (if it fits), decodes to
// itself, and Len agrees with Append.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := genQueue(t)
		b, err := q.Append(nil)
		// Append refuses what would not fit once sealed (PROTOCOL.md §5).
		if q.Len()+TagLen > MaxPacketSize {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d bytes sealed: Append error %v, want ErrTooLarge", q.Len()+TagLen, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != q.Len() || len(b) > MaxQueueLen(len(q.Events)) {
			t.Fatalf("len %d, Len() %d, MaxQueueLen %d", len(b), q.Len(), MaxQueueLen(len(q.Events)))
		}
		var got Queue
		if err := ParseQueue(b, &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(q) {
			t.Fatalf("round trip: %+v != %+v", got, q)
		}
	})
}

// TestSizes backs PROTOCOL.md §5: N=64 always fits; the sizes of typical
// typing queues one-way (signed; the handshaken sizes are
// BenchmarkAbridgedSize's).
func TestSizes(t *testing.T) {
	if m := MaxQueueLen(64); m != 955 || m > MaxPacketSize {
		t.Errorf("MaxQueueLen(64) = %d, want 955 (< 1200)", m)
	}
	if m := MaxOneWayLen(64); m != 1052 || m > MaxPacketSize {
		t.Errorf("MaxOneWayLen(64) = %d, want 1052 (< 1200)", m)
	}
	// The worst case is real: 64 characters beyond U+FFFF with stamps 2^63
	// apart, and every varint of the header and body at its longest, make
	// a packet within 64 bytes of it, one-way (the 22-byte header, the
	// signer and signature) and handshaken (the compact header at its
	// longest counter, and the count carried).
	for _, tc := range []struct {
		h   Header
		max int
	}{
		{Header{Type: TypeQueue, Flags: OneWaySealed, Session: 1, Counter: ^uint64(0)}, MaxOneWayLen(64)},
		{Header{Type: TypeQueue, Flags: FlagSealed, Session: 1, Counter: ^uint64(0)}, MaxQueueLen(64)},
	} {
		worst := Queue{Header: tc.h, Clock: ^uint64(0), Wall: ^uint64(0), Since: ^uint64(0)}
		for i := range 64 {
			worst.Events = append(worst.Events, eventqueue.Event{Key: keys.Char(0x10FFFD - rune(i)), Kind: eventqueue.Down, Stamp: ^uint64(0) - uint64(i)*(1<<57)})
		}
		worst.Events[63].Stamp = 0
		worst.Events[62].Stamp = 1 << 63
		if got := worst.SealedLen(); got > tc.max || got < tc.max-64 {
			t.Errorf("flags %#02x: a 64-entry queue of long characters and wide stamps is %d bytes; the most is %d", tc.h.Flags, got, tc.max)
		}
	}
	// The compact header leaves room for one more entry than
	// MaxSafeEvents, but the limit stays where send's --queue has it. A
	// one-way packet's signer and signature (96 bytes) leave room for 74.
	if MaxQueueLen(MaxSafeEvents) > MaxPacketSize || MaxQueueLen(MaxSafeEvents+2) <= MaxPacketSize {
		t.Errorf("MaxSafeEvents %d does not always fit, or is far below what does", MaxSafeEvents)
	}
	if MaxOneWayLen(MaxSafeOneWayEvents) > MaxPacketSize || MaxOneWayLen(MaxSafeOneWayEvents+1) <= MaxPacketSize {
		t.Errorf("MaxSafeOneWayEvents %d does not always fit, or is not the most that does", MaxSafeOneWayEvents)
	}
	sealed := func(q Queue, flags uint8) int {
		q.Header.Flags = flags
		return q.SealedLen()
	}
	for _, tc := range []struct{ n, oneWay int }{{16, 212}, {64, 405}} {
		q := typingQueue(t, tc.n)
		if got := sealed(q, OneWaySealed); got != tc.oneWay {
			t.Errorf("typical one-way N=%d queue: %d bytes, PROTOCOL.md says %d", tc.n, got, tc.oneWay)
		}
	}
	// Text typed as characters (a terminal, a script's type): ASCII takes
	// one code byte where a key takes two.
	for _, tc := range []struct{ n, oneWay int }{{16, 195}, {64, 339}} {
		q := textQueue(t, tc.n)
		if got := sealed(q, OneWaySealed); got != tc.oneWay {
			t.Errorf("typical one-way N=%d text queue: %d bytes, PROTOCOL.md says %d", tc.n, got, tc.oneWay)
		}
	}
}

// typingQueue is a queue after a minute of typing at 100 ms per key event
// with ShiftLeft held from the start: stamps of a few bytes, deltas of one,
// a wall clock of 2026.
func typingQueue(t testing.TB, n int) Queue {
	q, _ := eventqueue.New(n)
	stamp := uint64(60_000 - 100*4*n)
	add := func(c keys.Code, k eventqueue.Kind) {
		stamp += 100
		if _, err := q.Add(eventqueue.Event{Key: keys.Key(c), Kind: k, Stamp: stamp}); err != nil {
			t.Fatal(err)
		}
	}
	add(keys.ShiftLeft, eventqueue.Down)
	for i := range 2 * n {
		add(keys.KeyA+keys.Code(i%26), eventqueue.Down)
		add(keys.KeyA+keys.Code(i%26), eventqueue.Up)
	}
	return Queue{Header: Header{Type: TypeQueue, Flags: FlagOneWay, Session: 1, Counter: 600}, Clock: stamp, Wall: 1_795_000_000_000, Events: q.Events()}
}

// textQueue is typingQueue's minute of typing as characters (a-z taps), as
// the terminal source sends them.
func textQueue(t testing.TB, n int) Queue {
	q, _ := eventqueue.New(n)
	stamp := uint64(60_000 - 100*4*n)
	for i := range 2 * n {
		for _, k := range []eventqueue.Kind{eventqueue.Down, eventqueue.Up} {
			stamp += 100
			if _, err := q.Add(eventqueue.Event{Key: keys.Char('a' + rune(i%26)), Kind: k, Stamp: stamp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Queue{Header: Header{Type: TypeQueue, Flags: FlagOneWay, Session: 1, Counter: 600}, Clock: stamp, Wall: 1_795_000_000_000, Events: q.Events()}
}

func TestParseHeader(t *testing.T) {
	b, _ := golden.Append(nil)
	h, err := ParseHeader(b)
	if err != nil || h != golden.Header {
		t.Errorf("ParseHeader = %+v, %v", h, err)
	}
	if _, err := ParseHeader(b[:HeaderLen-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("short header: %v", err)
	}
}

func FuzzParseQueue(f *testing.F) {
	for _, g := range []Queue{golden, goldenChars} {
		b, _ := g.Append(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Queue
		if err := ParseQueue(b, &q); err != nil {
			return
		}
		// Canonical form: what decodes re-encodes to the same bytes.
		out, err := q.Append(nil)
		if err != nil {
			t.Fatalf("decoded packet does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoded % x\nfrom        % x", out, b)
		}
	})
}

// FuzzParseHeader: every header that decodes re-encodes to its own bytes
// (PROTOCOL.md §2, §4): the 22-byte header, or a handshaken packet's
// compact one, whose uvarint counter must be in its shortest form.
func FuzzParseHeader(f *testing.F) {
	b, _ := golden.Append(nil)
	f.Add(b[:HeaderLen])
	for _, h := range compactHeaders {
		f.Add(h.Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		if h.Compact() && h.Session != 0 {
			t.Fatalf("a compact header decoded a session id %#x", h.Session)
		}
		if out := h.Append(nil); len(out) != h.Len() || !bytes.Equal(out, b[:h.Len()]) {
			t.Fatalf("header re-encodes to % x from % x", out, b[:min(len(b), h.Len())])
		}
	})
}

// compactHeaders are handshaken packets' headers, queue and ack, at each
// length of the counter's uvarint.
var compactHeaders = []Header{
	{Type: TypeQueue, Flags: FlagSealed, Index: 0x7a18f2bb, Counter: 1},
	{Type: TypeAck, Flags: FlagSealed, Index: 0x4efa2bd1, Counter: 127},
	{Type: TypeQueue, Flags: FlagSealed, Index: 0, Counter: 128},
	{Type: TypeQueue, Flags: FlagSealed, Index: 0xffffffff, Counter: 1 << 21},
	{Type: TypeAck, Flags: FlagSealed, Index: 1, Counter: ^uint64(0)},
}

// TestCompactHeader: a handshaken link's queue packet or ack has the
// compact header of PROTOCOL.md §2: the six bytes every packet starts
// with, the recipient's index, the counter as a uvarint (11 bytes up to
// counter 127), no session id; every other packet the 22-byte header. And
// the compact header's own decoding errors (§4 rules 2, 6, 7).
func TestCompactHeader(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		want string
	}{
		{compactHeaders[0], "4b52 05 01 01 00 7a18f2bb 01"},
		{compactHeaders[1], "4b52 05 02 01 00 4efa2bd1 7f"},
		{compactHeaders[2], "4b52 05 01 01 00 00000000 8001"},
		{compactHeaders[3], "4b52 05 01 01 00 ffffffff 808080 01"},
		{compactHeaders[4], "4b52 05 02 01 00 00000001 ffffffffffffffffff01"},
		// The session id is not encoded: it is the keypair's.
		{Header{Type: TypeQueue, Flags: FlagSealed, Session: 0x0123456789abcdef, Index: 9, Counter: 3}, "4b52 05 01 01 00 00000009 03"},
		// One-way and plaintext packets keep the 22-byte header, index or not.
		{Header{Type: TypeQueue, Flags: OneWaySealed, Session: 1, Index: 9, Counter: 3}, "4b52 05 01 07 00 0000000000000001 0000000000000003"},
		{Header{Type: TypeAck, Flags: FlagOneWay, Session: 1, Counter: 3}, "4b52 05 02 02 00 0000000000000001 0000000000000003"},
	} {
		b := tc.h.Append(nil)
		if want := unhex(t, tc.want); !bytes.Equal(b, want) || tc.h.Len() != len(want) {
			t.Errorf("%+v: encoded % x (Len %d), want % x", tc.h, b, tc.h.Len(), want)
			continue
		}
		got, err := ParseHeader(b)
		want := tc.h
		if want.Compact() {
			want.Session = 0
		} else {
			want.Index = 0
		}
		if err != nil || got != want {
			t.Errorf("% x: decoded %+v, %v; want %+v", b, got, err, want)
		}
	}
	if n := compactHeaders[0].Len(); n != 11 {
		t.Errorf("a handshaken packet's header at counter 1 is %d bytes, want 11", n)
	}
	for _, tc := range []struct {
		name, hex string
		want      error
	}{
		{"the prefix alone", "4b52 05 01 01 00", ErrTruncated},
		{"no counter", "4b52 05 01 01 00 7a18f2bb", ErrTruncated},
		{"counter cut short", "4b52 05 01 01 00 7a18f2bb 80", ErrTruncated},
		{"counter 0", "4b52 05 01 01 00 7a18f2bb 00", ErrHeader},
		{"overlong counter", "4b52 05 01 01 00 7a18f2bb 8100", ErrVarint},
		{"counter overflows", "4b52 05 01 01 00 7a18f2bb ffffffffffffffffff02", ErrVarint},
		{"one-way: read with the 22-byte header", "4b52 05 01 07 00 7a18f2bb 01 000000000000", ErrTruncated},
		{"reserved byte", "4b52 05 01 01 01 7a18f2bb 01", ErrFlags},
		{"version 4", "4b52 04 01 01 00 7a18f2bb 01", ErrVersion},
		{"ack one-way", "4b52 05 02 03 00 7a18f2bb 01", ErrFlags},
	} {
		if _, err := ParseHeader(unhex(t, tc.hex)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func BenchmarkAppendQueue(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = q.Append(buf[:0])
			}
			b.ReportMetric(float64(len(buf)), "bytes/packet")
		})
	}
}

func BenchmarkParseQueue(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			pkt, err := q.Append(nil)
			if err != nil {
				b.Fatal(err)
			}
			var dst Queue
			b.ReportAllocs()
			for b.Loop() {
				if err := ParseQueue(pkt, &dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
