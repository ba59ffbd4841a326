package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"crypto/subtle"
	"errors"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// An identity signs with its X25519 key itself, by XEdDSA (Signal's
// "XEdDSA and VXEdDSA Signature Schemes", revision 1, §2.3, §3, §5): the
// key's Edwards form signs as Ed25519 does, with a random value in the
// nonce, and the signature verifies as an Ed25519 signature (crypto/ed25519)
// under the Edwards form of the X25519 public key. So a machine's one key,
// the one `keyrelay id` prints and the peers files list, both runs the
// handshake and signs one-way packets (PROTOCOL.md §8.6): nothing about
// identities, peers files or pairing changes. Signal's X3DH uses one key
// for both in the same way; the specification (§8) asks that signing be
// constant-time, which calculateKeyPair and Sign are (filippo.io/edwards25519's
// scalar and point arithmetic; the choice of sign is a constant-time
// copy).

// SignatureLen is the length of a signature: R ‖ s, as Ed25519's.
const SignatureLen = ed25519.SignatureSize

// signingKey is an identity's XEdDSA key pair (the specification's
// calculate_key_pair): a, the clamped X25519 private scalar or its
// negation mod q, and A = aB, the Edwards point whose y is that of the
// X25519 key's point and whose sign bit is 0.
type signingKey struct {
	a edwards25519.Scalar
	A [32]byte
}

// hash1Prefix is the specification's hash_1 prefix for Curve25519:
// 2^256 − 1 − 1, little-endian.
var hash1Prefix = [32]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func calculateKeyPair(private []byte) signingKey {
	k, err := new(edwards25519.Scalar).SetBytesWithClamping(private)
	if err != nil {
		panic(err) // a programming error: an X25519 private key is 32 bytes
	}
	e := new(edwards25519.Point).ScalarBaseMult(k).Bytes()
	sign := int(e[31] >> 7)
	neg := new(edwards25519.Scalar).Negate(k)
	var ab [32]byte
	subtle.ConstantTimeCopy(1-sign, ab[:], k.Bytes())
	subtle.ConstantTimeCopy(sign, ab[:], neg.Bytes())
	var sk signingKey
	if _, err := sk.a.SetCanonicalBytes(ab[:]); err != nil {
		panic(err) // a Scalar's Bytes are canonical
	}
	// −E has E's y and the other sign: either way A is E's y, sign 0.
	copy(sk.A[:], e)
	sk.A[31] &^= 0x80
	return sk
}

// Sign is the XEdDSA signature of msg by this identity, with 64 fresh
// random bytes in its nonce (the specification's Z).
func (id *Identity) Sign(msg []byte) [SignatureLen]byte {
	var z [64]byte
	rand.Read(z[:]) // never fails (crypto/rand)
	return id.SignWith(msg, z)
}

// SignWith is Sign with the random bytes given: for test vectors. A z
// used twice with two messages gives the private key away.
func (id *Identity) SignWith(msg []byte, z [64]byte) [SignatureLen]byte {
	sk := &id.signing
	h := sha512.New()
	h.Write(hash1Prefix[:])
	h.Write(sk.a.Bytes())
	h.Write(msg)
	h.Write(z[:])
	var digest [64]byte
	r, err := new(edwards25519.Scalar).SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		panic(err) // a programming error: SHA-512 gives 64 bytes
	}
	var sig [SignatureLen]byte
	copy(sig[:32], new(edwards25519.Point).ScalarBaseMult(r).Bytes())
	h.Reset()
	h.Write(sig[:32])
	h.Write(sk.A[:])
	h.Write(msg)
	c, err := new(edwards25519.Scalar).SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		panic(err)
	}
	copy(sig[32:], new(edwards25519.Scalar).MultiplyAdd(c, &sk.a, r).Bytes())
	return sig
}

// ErrNotSigningKey is EdwardsPublic's error for a public key that is no
// X25519 key in its canonical form.
var ErrNotSigningKey = errors.New("not a canonical X25519 public key")

// EdwardsPublic is the Ed25519 public key an identity's signatures verify
// under (the specification's convert_mont): the Edwards point with y =
// (u − 1)/(u + 1) for the X25519 public key u, and sign bit 0. It refuses
// a u of 2^255 − 19 or more (the specification's u ≥ p), where the X25519
// function would read another value than the bytes say.
func EdwardsPublic(pub [KeyLen]byte) (ed25519.PublicKey, error) {
	u, err := new(field.Element).SetBytes(pub[:])
	if err != nil || subtle.ConstantTimeCompare(u.Bytes(), pub[:]) != 1 {
		return nil, ErrNotSigningKey
	}
	one := new(field.Element).One()
	den := new(field.Element).Add(u, one)
	y := new(field.Element).Multiply(new(field.Element).Subtract(u, one), den.Invert(den))
	return ed25519.PublicKey(y.Bytes()), nil
}

// Verify reports whether sig is the signature of msg by the identity whose
// EdwardsPublic key is pub.
func Verify(pub ed25519.PublicKey, msg []byte, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, msg, sig)
}
