package handshake

import (
	"math/rand/v2"

	"github.com/keyrelay/keyrelay/replay"
	"testing"
	"time"
)

// TestSealOpenDoNotAllocate: the transport path allocates nothing once the
// caller's buffer has room (package doc; the sender's send path, as
// wire.Sealer's).
func TestSealOpenDoNotAllocate(t *testing.T) {
	p := newPair(t, 1)
	ks, kr := p.handshake(t, session, 1, t0)
	plain := make([]byte, 64)
	buf := make([]byte, 0, 256)
	out := make([]byte, 0, 256)
	counter := uint64(1)
	var ring Keyring
	ring.Begin(kr)
	allocs := testing.AllocsPerRun(200, func() {
		counter++
		b, err := ks.Seal(buf[:0], Header{Type: TypeQueue, Session: session, Counter: counter}, plain, t0)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := ParseTransport(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := ring.Open(out[:0], tr, t0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("seal, parse and open allocate %v times a packet", allocs)
	}
}

// BenchmarkGarbage: a random datagram of an initiation's size, rejected
// by the header.
func BenchmarkGarbage(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	dgrams := make([][]byte, 256)
	for i := range dgrams {
		dgrams[i] = make([]byte, InitiationLen)
		for j := range dgrams[i] {
			dgrams[i][j] = byte(r.Uint32())
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := ParseInitiation(dgrams[i%len(dgrams)]); err == nil {
			b.Fatal("garbage parsed")
		}
		i++
	}
}

// BenchmarkForgedInitiation: a well-formed initiation for another key:
// parsed, mac1 fails, nothing more.
func BenchmarkForgedInitiation(b *testing.B) {
	p := newPair(b, 1)
	other := NewInitiator(InitiatorConfig{Private: key(0x10), Peer: PublicKey(key(0x41)), Random: seeded(9)})
	dgram, _ := other.Initiate(nil, session, 1, t0)
	b.ReportAllocs()
	for b.Loop() {
		m, err := ParseInitiation(dgram)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.resp.ConsumeInitiation(nil, m, src, true, t0); err == nil {
			b.Fatal("forged initiation accepted")
		}
	}
}

// BenchmarkInitiationUnderLoad: mac1 checks, no mac2, under load: the
// answer is a cookie reply, with no Diffie-Hellman.
func BenchmarkInitiationUnderLoad(b *testing.B) {
	p := newPair(b, 1)
	dgram, _ := p.init.Initiate(nil, session, 1, t0)
	out := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		m, err := ParseInitiation(dgram)
		if err != nil {
			b.Fatal(err)
		}
		a, err := p.resp.ConsumeInitiation(out[:0], m, src, true, t0)
		if err != nil || !a.Cookie {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandshake: a whole handshake, both ends: initiation, response,
// both keypairs.
func BenchmarkHandshake(b *testing.B) {
	p := newPair(b, 1)
	now := t0
	counter := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		counter++
		p.handshake(b, session, counter, now)
	}
}

// BenchmarkRespond is the responder's part of BenchmarkHandshake: what
// answering a valid initiation costs.
func BenchmarkRespond(b *testing.B) {
	p := newPair(b, 1)
	dgrams := make([]Initiation, 0, 1024)
	for i := range cap(dgrams) {
		dgrams = append(dgrams, initiation(b, p.init, uint64(i+1), t0.Add(time.Duration(i)*time.Second)))
	}
	out := make([]byte, 0, 256)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(dgrams) {
			b.StopTimer()
			p.resp.peers = map[[32]byte]*peerState{}
			i = 0
			b.StartTimer()
		}
		if _, err := p.resp.ConsumeInitiation(out[:0], dgrams[i], src, false, t0.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func benchTransport(b *testing.B, size int, open bool) {
	p := newPair(b, 1)
	ks, kr := p.handshake(b, session, 1, t0)
	plain := make([]byte, size)
	buf := make([]byte, 0, size+MaxTransportOverhead)
	out := make([]byte, 0, size)
	counter := uint64(1)
	if open {
		pkts := make([]Transport, 0, 1<<12)
		for range cap(pkts) {
			counter++
			pb, _ := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: counter}, plain, t0)
			pkts = append(pkts, mustTransport(b, pb))
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == len(pkts) {
				b.StopTimer()
				kr.filter = replay.Filter{}
				i = 0
				b.StartTimer()
			}
			if _, err := kr.Open(out[:0], pkts[i], t0); err != nil {
				b.Fatal(err)
			}
			i++
		}
		return
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		counter++
		if _, err := ks.Seal(buf[:0], Header{Type: TypeQueue, Session: session, Counter: counter}, plain, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeal and BenchmarkOpen: a 64-byte queue body (a typical queue
// packet of PROTOCOL.md §5).
func BenchmarkSeal(b *testing.B) { benchTransport(b, 64, false) }
func BenchmarkOpen(b *testing.B) { benchTransport(b, 64, true) }
