package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
)

// handshakenHeader is §6's header as a handshaken link's packet has it.
var handshakenHeader = Header{Type: TypeQueue, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 42}

// The golden handshaken bodies (PROTOCOL.md §3.3): §6's queue whole, the
// same queue abridged to the entries newer than 1490, and an idle packet
// once 1497 was acknowledged.
var (
	goldenHandshaken = Queue{Header: handshakenHeader, Clock: 1500, Locks: golden.Locks, Events: golden.Events}
	goldenAbridged   = Queue{Header: handshakenHeader, Clock: 1500, Locks: golden.Locks,
		Events: golden.Events[:2], Abridged: true, N: 4, Base: 1490}
	goldenIdle = Queue{Header: Header{Type: TypeQueue, Flags: FlagSealed, Session: 0x0123456789ABCDEF, Counter: 43},
		Clock: 1600, Locks: golden.Locks, Events: []eventqueue.Event{}, Abridged: true, N: 4, Base: 1497}
)

// TestGoldenHandshakenBodies: the golden vectors of PROTOCOL.md §3.3
// decode field by field, re-encode to the same bytes, and are as long as
// Len and the text say.
func TestGoldenHandshakenBodies(t *testing.T) {
	for _, tc := range []struct {
		file   string
		q      Queue
		sealed int // the datagram's length, as PROTOCOL.md §3.3 gives it
	}{
		{"queue_v5_handshaken_body.hex", goldenHandshaken, 51},
		{"queue_v5_abridged_body.hex", goldenAbridged, 43},
		{"queue_v5_idle_body.hex", goldenIdle, 35},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b := readHex(t, "../testdata/golden/"+tc.file)
			var q Queue
			if err := ParseQueueBody(tc.q.Header, b, &q); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(q) != fmt.Sprint(tc.q) {
				t.Errorf("decoded %+v\nwant    %+v", q, tc.q)
			}
			enc, err := tc.q.AppendBody(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b) {
				t.Errorf("encoded % x\nwant    % x", enc, b)
			}
			if got := tc.q.Len() + TagLen; got != tc.sealed || got != CompactMinLen+len(b)+TagLen {
				t.Errorf("Len()+TagLen = %d, body %d bytes; PROTOCOL.md says %d sealed", got, len(b), tc.sealed)
			}
		})
	}
}

// TestAbridgedDecodeErrors: the rules of PROTOCOL.md §4 that only an
// abridged body has, and the count of entries carried.
func TestAbridgedDecodeErrors(t *testing.T) {
	// clock 0, since 0, locks 0, N = 4
	const pre = "00 00 00 04"
	for _, tc := range []struct {
		name string
		hex  string
		want error
	}{
		{"whole queue", pre + "04 05 010004 010005 01 000000 04 000000 00", nil},
		{"idle", pre + "00 05", nil},
		{"idle, base 0", pre + "00 00", nil},
		{"one entry carried", pre + "01 05 010004 02", nil},
		{"base 0 from the oldest carried", pre + "01 05 010004 05", nil},
		{"no count carried", pre, ErrTruncated},
		{"more carried than N", pre + "05 05 010004", ErrQueue},
		{"idle without a base", pre + "00", ErrTruncated},
		{"idle, overlong base", pre + "00 8000", ErrVarint},
		{"idle, trailing byte", pre + "00 05 00", ErrTrailing},
		{"no base back", pre + "01 05 010004", ErrTruncated},
		{"base back 0: an entry not newer than the base", pre + "01 05 010004 00", ErrQueue},
		{"base below zero", pre + "01 05 010004 06", ErrQueue},
		{"none entry carried", pre + "01 05 000000 01", ErrQueue},
		{"trailing byte", pre + "01 05 010004 01 00", ErrTrailing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q Queue
			err := ParseQueueBody(handshakenHeader, unhex(t, tc.hex), &q)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("ParseQueueBody = %v, want %v", err, tc.want)
			}
		})
	}
	// A one-way or plaintext body has no count carried: there the idle
	// body's 00 is the top stamp and its base an entry of kind 5.
	var q Queue
	if err := ParseQueueBody(golden.Header, unhex(t, pre+"00 05"), &q); !errors.Is(err, ErrQueue) {
		t.Errorf("plaintext body with a count carried: %v, want ErrQueue", err)
	}
}

// TestAbridgedEncodeRefusesInvalid: the encoder never makes an abridged
// body the decoder rejects (PROTOCOL.md §4 rule 8).
func TestAbridgedEncodeRefusesInvalid(t *testing.T) {
	bad := func(f func(q *Queue)) Queue {
		q := goldenAbridged
		q.Events = append([]eventqueue.Event(nil), goldenAbridged.Events...)
		f(&q)
		return q
	}
	for name, q := range map[string]Queue{
		"plaintext":               bad(func(q *Queue) { q.Header.Flags = FlagOneWay }),
		"one-way":                 bad(func(q *Queue) { q.Header.Flags = OneWaySealed }),
		"as many entries as N":    bad(func(q *Queue) { q.N = 2 }),
		"N 0":                     bad(func(q *Queue) { q.N, q.Events = 0, nil }),
		"N 256":                   bad(func(q *Queue) { q.N = 256 }),
		"base as new as an entry": bad(func(q *Queue) { q.Base = 1495 }),
		"none entry":              bad(func(q *Queue) { q.Events = append(q.Events, eventqueue.Event{}) }),
	} {
		if b, err := q.AppendBody([]byte("x")); err == nil || string(b) != "x" {
			t.Errorf("%s: AppendBody = % x, %v; want an error and the buffer unchanged", name, b, err)
		}
	}
}

// TestAbridgedRoundTrip: any queue a sender makes, abridged at any base
// below its newest stamp, encodes, decodes to itself, and Len agrees;
// never longer than the whole queue.
func TestAbridgedRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := genQueue(t)
		q.Header.Flags, q.Wall, q.Since = FlagSealed, 0, rapid.Uint64().Draw(t, "since")
		whole := q.Len()
		top := q.Events[0].Stamp
		base := rapid.Uint64Range(0, top).Draw(t, "base")
		c := 0
		for c < len(q.Events) && q.Events[c].Kind != eventqueue.None && q.Events[c].Stamp > base {
			c++
		}
		if c == len(q.Events) {
			return // all of it is newer than base: a whole queue
		}
		q.Abridged, q.N, q.Base, q.Events = true, len(q.Events), base, q.Events[:c]
		b, err := q.AppendBody(nil)
		if err != nil {
			if whole+TagLen > MaxPacketSize {
				return
			}
			t.Fatal(err)
		}
		if n := q.Header.Len() + len(b); n != q.Len() || n > whole {
			t.Fatalf("%d bytes, Len() %d, the whole queue %d", n, q.Len(), whole)
		}
		var got Queue
		if err := ParseQueueBody(q.Header, b, &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(q) {
			t.Fatalf("round trip: %+v != %+v", got, q)
		}
	})
}

// FuzzParseQueueBody: a handshaken body (PROTOCOL.md §3, §3.3), whole or
// abridged, decodes totally and canonically: what decodes re-encodes to
// the same bytes.
func FuzzParseQueueBody(f *testing.F) {
	for _, g := range []Queue{goldenHandshaken, goldenAbridged, goldenIdle} {
		b, _ := g.AppendBody(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Queue
		if err := ParseQueueBody(handshakenHeader, b, &q); err != nil {
			return
		}
		out, err := q.AppendBody(nil)
		if err != nil {
			t.Fatalf("decoded body does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoded % x\nfrom        % x", out, b)
		}
	})
}

// BenchmarkAbridgedSize reports the bytes on the wire of a handshaken
// packet of typingQueue (N = 16), whole, abridged to one new key event,
// and idle: the datagram (with its tag) and the IPv4 packet (+ 28 bytes of
// IP and UDP headers). PROTOCOL.md §5 quotes them.
func BenchmarkAbridgedSize(b *testing.B) {
	q := typingQueue(b, 16)
	q.Header.Flags, q.Wall, q.Since = FlagSealed, 0, 1
	whole := q
	event := q
	event.Abridged, event.N, event.Base, event.Events = true, 16, q.Events[1].Stamp, q.Events[:1]
	idle := q
	idle.Abridged, idle.N, idle.Base, idle.Events = true, 16, q.Events[0].Stamp, nil
	for _, tc := range []struct {
		name string
		q    Queue
	}{{"whole", whole}, {"event", event}, {"idle", idle}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = tc.q.AppendBody(buf[:0])
			}
			datagram := tc.q.Header.Len() + len(buf) + TagLen
			b.ReportMetric(float64(datagram), "bytes/datagram")
			b.ReportMetric(float64(datagram+28), "IPv4-bytes/datagram")
		})
	}
}
