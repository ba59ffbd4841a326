package wire

import (
	"bytes"
	"crypto/cipher"
	"errors"
	"fmt"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
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

// goldenSender is the sending machine of the golden one-way packet: the
// identity of private key 10 11 … 2f, the sender of handshake's golden
// vectors (PROTOCOL.md §8.9), signing with the random bytes 00 01 … 3f.
var goldenSender = func() fixedSigner {
	priv := make([]byte, 32)
	for i := range priv {
		priv[i] = byte(0x10 + i)
	}
	id, err := identity.FromPrivate(priv)
	if err != nil {
		panic(err)
	}
	var z [64]byte
	for i := range z {
		z[i] = byte(i)
	}
	return fixedSigner{id, z}
}()

// fixedSigner signs with fixed random bytes, so a packet's bytes are
// fixed: for golden vectors and re-sealing only.
type fixedSigner struct {
	id *identity.Identity
	z  [64]byte
}

func (f fixedSigner) Public() [SignerLen]byte            { return f.id.Public() }
func (f fixedSigner) Sign(msg []byte) [SignatureLen]byte { return f.id.SignWith(msg, f.z) }

// verify reports whether sig is a good signature of its message by the
// machine it names.
func verify(t testing.TB, sig *Signed) bool {
	t.Helper()
	pub, err := identity.EdwardsPublic(sig.Signer)
	return err == nil && identity.Verify(pub, sig.Message, sig.Signature[:])
}

func sealedGolden(t testing.TB) []byte {
	t.Helper()
	b, err := golden.AppendSealed(nil, oneWay(testPSK(), golden.Header.Session), goldenSender)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSealedGolden: PROTOCOL.md §8.9's worked example is the sealed golden
// vector (testdata/golden/check_oneway.py makes the same bytes
// independently), and it opens to the plaintext golden packet, signed by
// the golden sender.
func TestSealedGolden(t *testing.T) {
	want := readHex(t, "../testdata/golden/queue_v5_oneway.hex")
	got := sealedGolden(t)
	if !bytes.Equal(got, want) {
		t.Fatalf("sealed % x\nwant   % x", got, want)
	}
	if len(got)-golden.Len() != SignedLen+TagLen {
		t.Errorf("overhead %d bytes, want %d", len(got)-golden.Len(), SignedLen+TagLen)
	}
	var q Queue
	var sig Signed
	if _, err := OpenQueue(got, oneWay(testPSK(), golden.Header.Session), nil, &q, &sig); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(q.Events) != fmt.Sprint(golden.Events) || q.Wall != golden.Wall || q.Header.Flags != OneWaySealed {
		t.Errorf("opened %+v", q)
	}
	if sig.Signer != goldenSender.Public() || !verify(t, &sig) {
		t.Errorf("signed by %x, good %v; want the golden sender's good signature", sig.Signer, verify(t, &sig))
	}
}

// TestTamperingIsRejected: a bit flipped at every position of a sealed
// packet, a wrong key, another direction's key, truncation and extension:
// all rejected (PROTOCOL.md §8).
func TestTamperingIsRejected(t *testing.T) {
	good := sealedGolden(t)
	open := oneWay(testPSK(), golden.Header.Session)
	var q Queue
	var sig Signed
	for i := range good {
		for bit := range 8 {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if _, err := OpenQueue(b, open, nil, &q, &sig); err == nil {
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
		if _, err := OpenQueue(good, f, nil, &q, &sig); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", name, err)
		}
	}
	for i := range len(good) {
		if _, err := OpenQueue(good[:i], open, nil, &q, &sig); err == nil {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
	if _, err := OpenQueue(append(bytes.Clone(good), 0), open, nil, &q, &sig); !errors.Is(err, ErrAuth) {
		t.Errorf("extended: %v, want ErrAuth", err)
	}
	plain, _ := golden.Append(nil)
	if _, err := OpenQueue(plain, open, nil, &q, &sig); !errors.Is(err, ErrNotSealed) {
		t.Errorf("plaintext to a keyed receiver: %v, want ErrNotSealed", err)
	}
	if err := ParseQueue(good, &q); !errors.Is(err, ErrSealed) {
		t.Errorf("sealed to a receiver without a key: %v, want ErrSealed", err)
	}
	if _, err := OneWayAEAD(make([]byte, 16), 1); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}

// reseal opens b with the key file's key, lets change alter the plaintext
// (body ‖ signer ‖ signature), and seals it again under the same key: what
// any holder of the key file can do.
func reseal(t *testing.T, b []byte, change func(plain []byte) []byte) []byte {
	t.Helper()
	a := oneWay(testPSK(), golden.Header.Session)
	n := nonce(golden.Header.Counter)
	plain, err := a.Open(nil, n[:], b[HeaderLen:], b[:HeaderLen])
	if err != nil {
		t.Fatal(err)
	}
	plain = change(plain)
	return a.Seal(bytes.Clone(b[:HeaderLen]), n[:], plain, b[:HeaderLen])
}

// TestKeyFileAloneSignsNothing (PROTOCOL.md §8.6, §8.7): a holder of the
// key file opens a paired machine's one-way packet and seals it again
// changed: it opens (the key file is all the AEAD proves), but its
// signature no longer holds whatever was changed: a key event, the header
// (here the counter, moved to 43 under the matching nonce), or the signer
// named (the holder's own identity, or its key with a signature of its
// own over another machine's packet). And one signed by another machine
// is that machine's: the receiver pairs by the signer, never by the key.
func TestKeyFileAloneSignsNothing(t *testing.T) {
	good := sealedGolden(t)
	var q Queue
	var sig Signed
	if _, err := OpenQueue(good, oneWay(testPSK(), golden.Header.Session), nil, &q, &sig); err != nil || !verify(t, &sig) {
		t.Fatalf("the genuine packet: %v, signature good %v", err, verify(t, &sig))
	}
	holder, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	body := len(good) - HeaderLen - TagLen - SignedLen
	for name, change := range map[string]func([]byte) []byte{
		// Entry 0's key: up KeyH becomes up KeyG (body byte 14).
		"a key event changed":  func(p []byte) []byte { p[14] ^= 0x01; return p },
		"the wall clock moved": func(p []byte) []byte { p[2] ^= 0x01; return p },
		"another signer named": func(p []byte) []byte {
			k := holder.Public()
			copy(p[body:], k[:])
			return p
		},
		"the holder's own signature of it": func(p []byte) []byte {
			k := holder.Public()
			copy(p[body:], k[:])
			s := holder.Sign(AppendSignedMessage(nil, good[:HeaderLen], p[:body]))
			copy(p[body+SignerLen:], s[:])
			return p
		},
	} {
		b := reseal(t, good, change)
		if _, err := OpenQueue(b, oneWay(testPSK(), golden.Header.Session), nil, &q, &sig); err != nil {
			t.Errorf("%s: %v, want it to open (the key file seals it)", name, err)
			continue
		}
		switch {
		case name == "the holder's own signature of it":
			// A good signature, by the holder: the receiver takes it only
			// if it pairs the holder.
			if !verify(t, &sig) || sig.Signer != holder.Public() {
				t.Errorf("%s: signed by %x (good %v), want the holder's good signature", name, sig.Signer, verify(t, &sig))
			}
		case verify(t, &sig):
			t.Errorf("%s: the signature still holds", name)
		}
	}
	// The header is signed too: the counter moved (and the nonce with it).
	moved := bytes.Clone(good)
	moved[HeaderLen-1] = 43
	a := oneWay(testPSK(), golden.Header.Session)
	n, m := nonce(golden.Header.Counter), nonce(43)
	plain, err := a.Open(nil, n[:], good[HeaderLen:], good[:HeaderLen])
	if err != nil {
		t.Fatal(err)
	}
	moved = a.Seal(moved[:HeaderLen], m[:], plain, moved[:HeaderLen])
	if _, err := OpenQueue(moved, a, nil, &q, &sig); err != nil || q.Header.Counter != 43 {
		t.Fatalf("the packet moved to counter 43: %v (counter %d)", err, q.Header.Counter)
	}
	if verify(t, &sig) {
		t.Error("the packet moved to counter 43: the signature still holds")
	}
}

// TestUnsignedOneWayIsNamed (PROTOCOL.md §4 rule 5, §8.6): the one-way
// layout from before one-way packets were signed (flags SEALED|ONEWAY) is
// refused at its header, before any crypto, as what it is: an older
// sender's. Other flags stay unknown.
func TestUnsignedOneWayIsNamed(t *testing.T) {
	hdr := func(flags byte) []byte {
		return unhex(t, fmt.Sprintf("4b52 05 01 %02x 00 0123456789abcdef 000000000000002a", flags))
	}
	if _, err := ParseHeader(hdr(0x03)); !errors.Is(err, ErrUnsigned) {
		t.Errorf("flags 03: %v, want ErrUnsigned", err)
	}
	for _, f := range []byte{0x04, 0x05, 0x06, 0x08} {
		if _, err := ParseHeader(hdr(f)); !errors.Is(err, ErrFlags) {
			t.Errorf("flags %02x: %v, want ErrFlags", f, err)
		}
	}
	if _, err := ParseHeader(hdr(0x07)); err != nil {
		t.Errorf("flags 07 (one-way, signed): %v", err)
	}
	ack := unhex(t, "4b52 05 02 07 00 0123456789abcdef 000000000000002a")
	if _, err := ParseHeader(ack); !errors.Is(err, ErrFlags) {
		t.Errorf("a one-way sealed ack: %v, want ErrFlags", err)
	}
}

func FuzzOpenQueue(f *testing.F) {
	good := sealedGolden(f)
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Queue
		var sig Signed
		a := oneWay(testPSK(), golden.Header.Session)
		body, err := OpenQueue(b, a, nil, &q, &sig)
		if err != nil {
			return
		}
		// Only the genuine packet authenticates; it re-seals to itself.
		out, err := q.AppendSealed(nil, a, goldenSender)
		if err != nil || !bytes.Equal(out, b) || !verify(t, &sig) {
			t.Fatalf("opened a packet (plaintext % x) that does not re-seal to itself: %v", body, err)
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	id, err := identity.Generate()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a, _ := OneWayAEAD(testPSK(), q.Header.Session)
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = q.AppendSealed(buf[:0], a, id)
			}
			b.ReportMetric(float64(len(buf)), "bytes/packet")
			b.ReportMetric(float64(len(buf)-q.Len()), "overhead-bytes")
		})
		b.Run(fmt.Sprintf("Sealer/N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a, _ := OneWayAEAD(testPSK(), q.Header.Session)
			s := &Sealer{AEAD: a, Signer: id}
			buf := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = q.AppendSealedBy(buf[:0], s)
			}
		})
	}
}

// A Sealer seals exactly as AppendSealed does; an Opener opens what it
// sealed, allocating nothing once its buffers have room: the receive path
// of a one-way session (PROTOCOL.md §8.6). Signing allocates (the
// identity, safe for concurrent use, keeps no buffer), a few times per
// packet.
func TestSealerMatchesAndOpenerDoesNotAllocate(t *testing.T) {
	q := typingQueue(t, 16)
	a, err := OneWayAEAD(testPSK(), q.Header.Session)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sealer{AEAD: a, Signer: goldenSender}
	buf := make([]byte, 0, MaxPacketSize)
	for _, counter := range []uint64{1, 2, 1 << 40} {
		q.Header.Counter = counter
		want, err := q.AppendSealed(nil, a, goldenSender)
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
	var o Opener
	var got Queue
	var sig Signed
	scratch := make([]byte, 0, MaxPacketSize)
	h, err := ParseHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	if scratch, err = o.OpenOneWay(buf, h, a, scratch, &got, &sig); err != nil || got.Header.Session != q.Header.Session || got.Header.Counter != q.Header.Counter || len(got.Events) != len(q.Events) || !verify(t, &sig) {
		t.Fatalf("Opener: %v, header %+v with %d events, want %+v with %d", err, got.Header, len(got.Events), q.Header, len(q.Events))
	}
	if n := testing.AllocsPerRun(100, func() { scratch, _ = o.OpenOneWay(buf, h, a, scratch, &got, &sig) }); n != 0 {
		t.Errorf("Opener.OpenOneWay: %v allocations per packet, want 0", n)
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			q := typingQueue(b, n)
			a := oneWay(testPSK(), q.Header.Session)
			pkt, _ := q.AppendSealed(nil, a, goldenSender)
			var dst Queue
			var sig Signed
			scratch := make([]byte, 0, MaxPacketSize)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if scratch, err = OpenQueue(pkt, a, scratch, &dst, &sig); err != nil {
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
