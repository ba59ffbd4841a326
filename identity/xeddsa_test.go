package identity

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"testing"

	"filippo.io/edwards25519"
	"pgregory.net/rapid"
)

// XEdDSA (xeddsa.go; PROTOCOL.md §8.6): a machine's X25519 identity signs,
// and crypto/ed25519 verifies under the key's Edwards form.

func zBytes() (z [64]byte) {
	for i := range z {
		z[i] = byte(i)
	}
	return z
}

// TestXEdDSAVector: RFC 7748's Alice signs "keyrelay" with the random
// bytes 00 01 … 3f. The Edwards key and the signature were computed apart
// from this code, by the integer arithmetic of
// testdata/golden/check_oneway.py (its point has sign 1, so the scalar is
// negated; the golden one-way packet's sender's has sign 0), and the
// signature verifies under Python's cryptography package too.
func TestXEdDSAVector(t *testing.T) {
	id := alice(t)
	pub, err := EdwardsPublic(id.Public())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(pub), "8120f299c37ae1ca64a179f638a6c6fafde968f1c33705e28c413c7579d9884f"; got != want {
		t.Errorf("Edwards key %s, want %s", got, want)
	}
	if !bytes.Equal(pub, id.signing.A[:]) {
		t.Errorf("the signing key's A %x is not the public key's Edwards form %x", id.signing.A, pub)
	}
	sig := id.SignWith([]byte("keyrelay"), zBytes())
	if got, want := hex.EncodeToString(sig[:]), "78c889cdf99fc4838f1aa98db4d270d6601b47e6f97b0d77bb2f1b7668d429ef0aeea3a0cb4b7c636822bc1c8ffc8348d00536ed592043ed09c0dda17f0ad201"; got != want {
		t.Errorf("signature %s\nwant      %s", got, want)
	}
	if !Verify(pub, []byte("keyrelay"), sig[:]) {
		t.Error("the vector's signature does not verify")
	}
}

// TestSignaturesVerify: for any identity (both signs of its point) and
// message, its signature verifies under its Edwards key, and under no
// other identity's, for no other message, and not with any bit flipped;
// and the Edwards key is the X25519 key's: its Montgomery form is the
// public key.
func TestSignaturesVerify(t *testing.T) {
	signs := map[int]bool{}
	rapid.Check(t, func(t *rapid.T) {
		priv := rapid.SliceOfN(rapid.Byte(), KeyLen, KeyLen).Draw(t, "private")
		id, err := FromPrivate(priv)
		if err != nil {
			t.Fatal(err)
		}
		other, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		msg := rapid.SliceOf(rapid.Byte()).Draw(t, "message")
		pub, err := EdwardsPublic(id.Public())
		if err != nil {
			t.Fatal(err)
		}
		p, err := new(edwards25519.Point).SetBytes(pub)
		if err != nil {
			t.Fatalf("the Edwards key %x is no point: %v", pub, err)
		}
		if !bytes.Equal(p.BytesMontgomery(), id.pub[:]) {
			t.Fatalf("the Edwards key's Montgomery form %x is not the public key %x", p.BytesMontgomery(), id.pub)
		}
		e := new(edwards25519.Point).ScalarBaseMult(mustClamped(t, priv)).Bytes()
		signs[int(e[31]>>7)] = true
		sig := id.Sign(msg)
		if !Verify(pub, msg, sig[:]) {
			t.Fatalf("a signature of %x does not verify", msg)
		}
		if again := id.Sign(msg); again == sig {
			t.Fatal("two signatures of one message are the same: the nonce takes no random bytes")
		}
		otherPub, err := EdwardsPublic(other.Public())
		if err != nil {
			t.Fatal(err)
		}
		if Verify(otherPub, msg, sig[:]) {
			t.Fatal("verifies under another identity")
		}
		if Verify(pub, append(bytes.Clone(msg), 0), sig[:]) {
			t.Fatal("verifies for another message")
		}
		bit := rapid.IntRange(0, 8*SignatureLen-1).Draw(t, "bit")
		bad := sig
		bad[bit/8] ^= 1 << (bit % 8)
		if Verify(pub, msg, bad[:]) {
			t.Fatalf("verifies with bit %d flipped", bit)
		}
	})
	if !signs[0] || !signs[1] {
		t.Errorf("points of sign %v seen: both must be (a negated scalar, and not)", signs)
	}
}

func mustClamped(t *rapid.T, priv []byte) *edwards25519.Scalar {
	k, err := new(edwards25519.Scalar).SetBytesWithClamping(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEdwardsPublicRefusesNonCanonical: a public key whose bytes are not
// its value's canonical form (2^255 − 19 or more, or bit 255 set) has no
// Edwards form here: X25519 would read another value than the bytes say.
func TestEdwardsPublicRefusesNonCanonical(t *testing.T) {
	var p, top [KeyLen]byte
	p[0] = 0xed
	for i := 1; i < 31; i++ {
		p[i] = 0xff
	}
	p[31] = 0x7f // 2^255 − 19
	top = alice(t).Public()
	top[31] |= 0x80
	for name, k := range map[string][KeyLen]byte{"p": p, "bit 255 set": top} {
		if _, err := EdwardsPublic(k); err == nil {
			t.Errorf("%s: an Edwards key was given", name)
		}
	}
	if Verify(ed25519.PublicKey{1, 2, 3}, nil, make([]byte, SignatureLen)) {
		t.Error("a short public key verified")
	}
}

func BenchmarkSign(b *testing.B) {
	id, err := Generate()
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 150)
	b.ReportAllocs()
	for b.Loop() {
		id.Sign(msg)
	}
}

func BenchmarkVerify(b *testing.B) {
	id, err := Generate()
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 150)
	sig := id.Sign(msg)
	pub, err := EdwardsPublic(id.Public())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !Verify(pub, msg, sig[:]) {
			b.Fatal("does not verify")
		}
	}
}

func BenchmarkEdwardsPublic(b *testing.B) {
	id, err := Generate()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EdwardsPublic(id.Public()); err != nil {
			b.Fatal(err)
		}
	}
}
