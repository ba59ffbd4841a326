# Run from handshake/: python3 testdata/golden/check.py (needs the cryptography package).
# Independent check of the golden handshake messages: mac1 with hashlib's
# keyed BLAKE2s, and Noise message 1 read from scratch (HMAC-BLAKE2s HKDF,
# X25519, ChaCha20-Poly1305 from the cryptography package) as the receiver.
import hashlib, hmac, struct
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization
def rd(f):
    return bytes.fromhex(''.join(l.split('#')[0].replace(' ','').strip() for l in open('testdata/golden/'+f)))
def key(b): return bytes((b+i)&255 for i in range(32))
def pub(priv): return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
def H(*d):
    h=hashlib.blake2s()
    for x in d: h.update(x)
    return h.digest()
def mac(k,d): return hashlib.blake2s(d,key=k,digest_size=16).digest()
def hk(ck,ikm,n):
    t=hmac.new(ck,ikm,hashlib.blake2s).digest(); out=[]; prev=b''
    for i in range(1,n+1):
        prev=hmac.new(t,prev+bytes([i]),hashlib.blake2s).digest(); out.append(prev)
    return out
def dh(priv,pubk): return X25519PrivateKey.from_private_bytes(priv).exchange(X25519PublicKey.from_public_bytes(pubk))
def nonce(n): return b'\0'*4+struct.pack('<Q',n)
spriv, rpriv, psk = key(0x10), key(0x40), key(0x80)
spub, rpub = pub(spriv), pub(rpriv)
for f in ['initiation.hex','initiation_mac2.hex']:
    m=rd(f); assert len(m)==166
    assert mac(H(b'mac1----'+rpub), m[:134])==m[134:150], f+' mac1'
    # Noise IKpsk2 message 1, responder side
    name=b'Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s'
    h=H(name); ck=h
    h=H(h, b'keyrelay protocol 5'+m[:26])
    h=H(h, rpub)
    e=m[26:58]; h=H(h,e); ck,=hk(ck,e,1)  # psk modifier: MixKey(e)
    ck,k=hk(ck,dh(rpriv,e),2)
    s=ChaCha20Poly1305(k).decrypt(nonce(0), m[58:106], h); h=H(h,m[58:106])
    assert s==spub, f+' static'
    ck,k=hk(ck,dh(rpriv,s),2)
    ts=ChaCha20Poly1305(k).decrypt(nonce(0), m[106:134], h)
    secs,ns=struct.unpack('>QI',ts)
    print(f, 'mac1 ok, static = sender key, TAI64N', secs-(1<<62)-10, ns)
r=rd('response.hex'); assert len(r)==110
assert mac(H(b'mac1----'+spub), r[:78])==r[78:94]; print('response.hex mac1 ok (key of the sender)')
