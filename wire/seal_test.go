package wire

import (
	"bytes"
	"crypto/cipher"
	"errors"
	"fmt"
	"testing"
)

func testPSK() []byte {
	k := make([]byte, KeyLen)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func oneWay(psk []byte, session uint64) cipher.AEAD {
	a, err := OneWayAEAD(psk, session)
	if err != nil {
		panic(err)
	}
	return a
}

func sealedGolden(t testing.TB) []byte {
	t.Helper()
	b, err := golden.AppendSealed(nil, oneWay(testPSK(), golden.Header.Session))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSealedGolden: PROTOCOL.md §8's worked example is the sealed golden
// vector, and it opens to the plaintext golden packet.
func TestSealedGolden(t *testing.T) {
	want := readHex(t, "../testdata/golden/queue_v5_oneway.hex")
	got := sealedGolden(t)
	if !bytes.Equal(got, want) {
		t.Fatalf("sealed % x\nwant   % x", got, want)
	}
	if len(got)-golden.Len() != TagLen {
		t.Errorf("overhead %d bytes, want %d", len(got)-golden.Len(), TagLen)
	}
	var q Queue
	if _, err := OpenQueue(got, oneWay(testPSK(), golden.Header.Session), nil, &q); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q.Events) != fmt.Sprint(golden.Events) || q.Wall != golden.Wall || q.Header.Flags != FlagSealed|FlagOneWay {
		t.Errorf("opened %+v", q)
	}
}

// TestTamperingIsRejected: a bit flipped at every position of a sealed
// packet, a wrong key, another direction's key, truncation and extension:
// all rejected (PROTOCOL.md §8).
func TestTamperingIsRejected(t *testing.T) {
	good := sealedGolden(t)
	open := oneWay(testPSK(), golden.Header.Session)
	var q Queue
	for i := range good {
		for bit := range 8 {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if _, err := OpenQueue(b, open, nil, &q); err == nil {
				t.Fatalf("bit %d of byte %d flipped: accepted", bit, i)
			}
		}
	}
	wrong := testPSK()
	wrong[0] ^= 1
	for name, f := range map[string]cipher.AEAD{
		"wrong key":     oneWay(wrong, golden.Header.Session),
		"other session": oneWay(testPSK(), golden.Header.Session+1),
	} {
		if _, err := OpenQueue(good, f, nil, &q); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", name, err)
		}
	}
	for i := range len(good) {
		if _, err := OpenQueue(good[:i], open, nil, &q); err == nil {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
	if _, err := OpenQueue(append(bytes.Clone(good), 0), open, nil, &q); !errors.Is(err, ErrAuth) {
		t.Errorf("extended: %v, want ErrAuth", err)
	}
	plain, _ := golden.Append(nil)
	if _, err := OpenQueue(plain, open, nil, &q); !errors.Is(err, ErrNotSealed) {
		t.Errorf("plaintext to a keyed receiver: %v, want ErrNotSealed", err)
	}
	if err := ParseQueue(good, &q); !errors.Is(err, ErrSealed) {
		t.Errorf("sealed to a receiver without a key: %v, want ErrSealed", err)
	}
	if _, err := OneWayAEAD(make([]byte, 16), 1); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}

func FuzzOpenQueue(f *testing.F) {
	good := sealedGolden(f)
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Queue
		a := oneWay(testPSK(), golden.Header.Session)
		body, err := OpenQueue(b, a, nil, &q)
		if err != nil {
			return
		}
		// Only the genuine packet authenticates; it re-seals to itself.
		out, err := q.AppendSealed(nil, a)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("opened a packet (body % x) that does not re-seal to itself: %v", body, err)
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a, _ := OneWayAEAD(testPSK(), q.Header.Session)
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = q.AppendSealed(buf[:0], a)
			}
			b.ReportMetric(float64(len(buf)), "bytes/packet")
			b.ReportMetric(float64(len(buf)-q.Len()), "overhead-bytes")
		})
		b.Run(fmt.Sprintf("Sealer/N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a, _ := OneWayAEAD(testPSK(), q.Header.Session)
			s := &Sealer{AEAD: a}
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = q.AppendSealedBy(buf[:0], s)
			}
		})
	}
}

// A Sealer seals exactly as AppendSealed does, and allocates nothing once
// its buffer has room: the sender's send path (issue 14 must-have 4); an
// Opener opens what it sealed, allocating nothing either.
func TestSealerMatchesAndDoesNotAllocate(t *testing.T) {
	q := typingQueue(t, 16)
	a, err := OneWayAEAD(testPSK(), q.Header.Session)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{AEAD: a}
	buf := make([]byte, 0, MaxPacketSize)
	for _, counter := range []uint64{1, 2, 1 << 40} {
		q.Header.Counter = counter
		want, err := q.AppendSealed(nil, a)
		if err != nil {
			t.Fatal(err)
		}
		if buf, err = q.AppendSealedBy(buf[:0], s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("counter %d: Sealer gave % x, AppendSealed % x", counter, buf, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { buf, _ = q.AppendSealedBy(buf[:0], s) }); n != 0 {
		t.Errorf("AppendSealedBy: %v allocations per packet, want 0", n)
	}
	// And opening it (PROTOCOL.md §8.4): the receive path of a one-way
	// session allocates nothing either.
	var o Opener
	var got Queue
	scratch := make([]byte, 0, MaxPacketSize)
	h, err := ParseHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	if scratch, err = o.OpenOneWay(buf, h, a, scratch, &got); err != nil || got.Header.Session != q.Header.Session || got.Header.Counter != q.Header.Counter || len(got.Events) != len(q.Events) {
		t.Fatalf("Opener: %v, header %+v with %d events, want %+v with %d", err, got.Header, len(got.Events), q.Header, len(q.Events))
	}
	if n := testing.AllocsPerRun(100, func() { scratch, _ = o.OpenOneWay(buf, h, a, scratch, &got) }); n != 0 {
		t.Errorf("Opener.OpenOneWay: %v allocations per packet, want 0", n)
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a := oneWay(testPSK(), q.Header.Session)
			pkt, _ := q.AppendSealed(nil, a)
			aeadOf := a
			var dst Queue
			scratch := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if scratch, err = OpenQueue(pkt, aeadOf, scratch, &dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOneWayAEAD is the per-session key derivation a receiver pays
// for a one-way packet of a session it has not authenticated yet.
func BenchmarkOneWayAEAD(b *testing.B) {
	psk := testPSK()
	b.ReportAllocs()
	for i := uint64(0); b.Loop(); i++ {
		if _, err := OneWayAEAD(psk, i); err != nil {
			b.Fatal(err)
		}
	}
}
