# Run from the repository's top: python3 testdata/golden/check_oneway.py
# (needs the cryptography package).
# Independent check of the golden one-way packet (PROTOCOL.md §8.6, §8.9),
# written from the protocol and Signal's XEdDSA specification, not from the
# Go code: the XEdDSA signature in plain integer arithmetic on the Edwards
# curve, checked by the cryptography package's own Ed25519 verifier under
# the Edwards form of the X25519 key; HKDF-SHA256 from hmac; the sealing
# with the cryptography package's ChaCha20-Poly1305. Prints the packet;
# exits non-zero if it differs from queue_v5_oneway.hex.
import hashlib, hmac, struct, sys
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

def rd(f):
    return bytes.fromhex(''.join(l.split('#')[0].replace(' ', '').strip() for l in open('testdata/golden/' + f)))

p = 2**255 - 19
q = 2**252 + 27742317777372353535851937790883648493
d = -121665 * pow(121666, p - 2, p) % p
def inv(x): return pow(x, p - 2, p)
def add(P, Q):
    (x1, y1), (x2, y2) = P, Q
    t = d * x1 * x2 * y1 * y2 % p
    return ((x1 * y2 + x2 * y1) * inv(1 + t) % p, (y1 * y2 + x1 * x2) * inv(1 - t) % p)
def mul(k, P):
    R = (0, 1)
    while k:
        if k & 1: R = add(R, P)
        P = add(P, P); k >>= 1
    return R
def xfromy(y, sign):
    x2 = (y * y - 1) * inv(d * y * y + 1) % p
    x = pow(x2, (p + 3) // 8, p)
    if (x * x - x2) % p: x = x * pow(2, (p - 1) // 4, p) % p
    assert (x * x - x2) % p == 0
    return p - x if x & 1 != sign else x
By = 4 * inv(5) % p
B = (xfromy(By, 0), By)
def enc(P): return (P[1] | (P[0] & 1) << 255).to_bytes(32, 'little')
def le(b): return int.from_bytes(b, 'little')

def xsign(priv, M, Z):
    """XEdDSA (the specification's xeddsa_sign) by the X25519 private key
    priv: its public key u, the Edwards form A, and the signature of M."""
    u = X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    k = bytearray(priv); k[0] &= 248; k[31] &= 127; k[31] |= 64
    k = le(k)
    E = mul(k, B)
    a = (q - k % q) % q if E[0] & 1 else k % q   # calculate_key_pair
    A = E[1].to_bytes(32, 'little')              # sign bit 0
    # convert_mont: the X25519 key's Edwards form is A.
    assert ((le(u) - 1) * inv(le(u) + 1) % p).to_bytes(32, 'little') == A, 'convert_mont'
    r = le(hashlib.sha512(b'\xfe' + b'\xff' * 31 + a.to_bytes(32, 'little') + M + Z).digest()) % q
    R = enc(mul(r, B))
    h = le(hashlib.sha512(R + A + M).digest()) % q
    sig = R + ((r + h * a) % q).to_bytes(32, 'little')
    Ed25519PublicKey.from_public_bytes(A).verify(sig, M)   # raises if it does not hold
    return u, A, sig, E[0] & 1

# identity.TestXEdDSAVector: RFC 7748's Alice signs "keyrelay" with random
# bytes 00 ... 3f (her key's point has sign 1: a is negated; the golden
# sender's has sign 0).
alice = bytes.fromhex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a')
_, A, sig, neg = xsign(alice, b'keyrelay', bytes(range(64)))
print('Alice: Edwards key', A.hex(), 'negated' if neg else 'not negated')
print('Alice: signature', sig.hex())
assert neg and A.hex() == '8120f299c37ae1ca64a179f638a6c6fafde968f1c33705e28c413c7579d9884f'
assert sig.hex() == '78c889cdf99fc4838f1aa98db4d270d6601b47e6f97b0d77bb2f1b7668d429ef0aeea3a0cb4b7c636822bc1c8ffc8348d00536ed592043ed09c0dda17f0ad201', 'Alice'

# The golden sender: X25519 private key 10 11 ... 2f; random bytes 00 ... 3f.
plain = rd('queue_v5.hex')
header = plain[:4] + b'\x07' + plain[5:22]       # flags SEALED|ONEWAY|SIGNED
body = plain[22:]
M = b'keyrelay protocol 5 one-way packet' + header + body
u, A, sig, neg = xsign(bytes(range(0x10, 0x30)), M, bytes(range(64)))
assert not neg

def hkdf(ikm, salt, info, n):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b'', b'', 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest(); out += t; i += 1
    return out[:n]
session, counter = header[6:14], struct.unpack('>Q', header[14:22])[0]
key = hkdf(bytes(range(32)), session, b'keyrelay v5 one-way sender-to-receiver', 32)
packet = header + ChaCha20Poly1305(key).encrypt(b'\0' * 4 + struct.pack('>Q', counter), body + u + sig, header)
print(packet.hex(' '))
if packet != rd('queue_v5_oneway.hex'):
    sys.exit('queue_v5_oneway.hex differs from the packet made here')
print('queue_v5_oneway.hex: the same bytes; the signature holds under the Edwards form of the sender key')
