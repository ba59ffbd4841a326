package handshake

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"net/netip"
	"time"

	"github.com/keyrelay/keyrelay/wire"
	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/chacha20poly1305"
)

// Cookie lifetimes (WireGuard paper §5.4.7).
const (
	// CookieRefreshTime is how long a responder keeps the secret its
	// cookies are made with: a cookie checks for at most this long.
	CookieRefreshTime = 120 * time.Second
	// CookieLife is how long an initiator puts a cookie it received in its
	// initiations' mac2: CookieRefreshTime less a margin for the time the
	// reply took, so it does not send a cookie the responder has already
	// forgotten (one that does is answered by a new cookie reply anyway).
	CookieLife = CookieRefreshTime - 5*time.Second
)

var (
	labelMAC1   = []byte("mac1----")
	labelCookie = []byte("cookie--")
)

// labelKey is BLAKE2s-256(label ‖ public key): the key of mac1 or of the
// cookie's encryption for messages to the owner of pub.
func labelKey(label []byte, pub [keyLen]byte) [keyLen]byte {
	h, _ := blake2s.New256(nil)
	h.Write(label)
	h.Write(pub[:])
	var k [keyLen]byte
	h.Sum(k[:0])
	return k
}

// mac computes BLAKE2s-128(key, msg) into out.
func mac(key []byte, msg []byte, out *[macLen]byte) {
	h, err := blake2s.New128(key)
	if err != nil {
		// Only a key longer than 32 bytes fails; every key here is 16 or 32.
		panic(err)
	}
	h.Write(msg)
	h.Sum(out[:0])
}

// macer computes one keyed MAC repeatedly without allocating: its hash is
// made once and Reset to the keyed state for each message.
type macer struct {
	h   hash.Hash
	sum [macLen]byte
}

func newMacer(key []byte) macer {
	h, err := blake2s.New128(key)
	if err != nil {
		panic(err)
	}
	return macer{h: h}
}

// check reports whether msg's MAC is want, in constant time.
func (m *macer) check(msg, want []byte) bool {
	m.h.Reset()
	m.h.Write(msg)
	return subtle.ConstantTimeCompare(m.h.Sum(m.sum[:0]), want) == 1
}

// put writes msg's MAC into out.
func (m *macer) put(msg, out []byte) {
	m.h.Reset()
	m.h.Write(msg)
	copy(out, m.h.Sum(m.sum[:0]))
}

// sourceBytes is what a cookie binds: the source IP (4 or 16 bytes) and
// port (big-endian).
func sourceBytes(src netip.AddrPort, buf *[18]byte) []byte {
	a := src.Addr().Unmap()
	b := append(buf[:0], a.AsSlice()...)
	return binary.BigEndian.AppendUint16(b, src.Port())
}

// cookieChecker is the responder's half: mac1 under its own public key,
// mac2 under cookies made from its rotating secret, and cookie replies.
type cookieChecker struct {
	mac1      macer
	sealKey   [keyLen]byte
	secret    [keyLen]byte
	secretSet time.Time // zero: no secret yet
}

func newCookieChecker(pub [keyLen]byte) cookieChecker {
	k := labelKey(labelMAC1, pub)
	return cookieChecker{mac1: newMacer(k[:]), sealKey: labelKey(labelCookie, pub)}
}

// checkMAC1 checks the mac1 of msg, whose mac1 starts at offMAC1.
func (c *cookieChecker) checkMAC1(msg []byte, offMAC1 int) bool {
	return c.mac1.check(msg[:offMAC1], msg[offMAC1:offMAC1+macLen])
}

// cookie is the cookie of src under the current secret.
func (c *cookieChecker) cookie(src netip.AddrPort) [cookieLen]byte {
	var buf [18]byte
	var ck [cookieLen]byte
	mac(c.secret[:], sourceBytes(src, &buf), &ck)
	return ck
}

// checkMAC2 checks the mac2 of msg against src's cookie under a secret
// younger than CookieRefreshTime.
func (c *cookieChecker) checkMAC2(msg []byte, offMAC2 int, src netip.AddrPort, now time.Time) bool {
	if c.secretSet.IsZero() || now.Sub(c.secretSet) >= CookieRefreshTime {
		return false
	}
	ck := c.cookie(src)
	var want [macLen]byte
	mac(ck[:], msg[:offMAC2], &want)
	return subtle.ConstantTimeCompare(want[:], msg[offMAC2:offMAC2+macLen]) == 1
}

// appendReply appends the cookie reply to m for src to b, renewing the
// secret from rand when it is CookieRefreshTime old.
func (c *cookieChecker) appendReply(b []byte, m Initiation, src netip.AddrPort, now time.Time, rand io.Reader) ([]byte, error) {
	if c.secretSet.IsZero() || now.Sub(c.secretSet) >= CookieRefreshTime {
		if _, err := io.ReadFull(rand, c.secret[:]); err != nil {
			return b, fmt.Errorf("unable to draw a cookie secret: %w", err)
		}
		c.secretSet = now
	}
	start := len(b)
	h := m.Header
	h.Type = TypeCookieReply
	b = h.Append(b)
	b = binary.BigEndian.AppendUint32(b, m.Sender)
	b = append(b, make([]byte, nonceLenX)...)
	nonce := b[start+offCookieNonce : start+offCookieSealed]
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return b[:start], fmt.Errorf("unable to draw a cookie nonce: %w", err)
	}
	aead, _ := chacha20poly1305.NewX(c.sealKey[:])
	ck := c.cookie(src)
	return aead.Seal(b, nonce, ck[:], m.MAC1()), nil
}

// cookieGenerator is the initiator's half: mac1 under the responder's
// public key, and mac2 under the newest cookie the responder sent.
type cookieGenerator struct {
	mac1      macer
	openKey   [keyLen]byte
	cookie    [cookieLen]byte
	cookieSet time.Time // zero: no cookie
	// lastMAC1 is the mac1 of the last initiation sent: a cookie reply
	// must answer it (its associated data), so one cannot be replayed or
	// made for another initiation.
	lastMAC1    [macLen]byte
	hasLastMAC1 bool
}

func newCookieGenerator(peer [keyLen]byte) cookieGenerator {
	k := labelKey(labelMAC1, peer)
	return cookieGenerator{mac1: newMacer(k[:]), openKey: labelKey(labelCookie, peer)}
}

// addMACs fills in the mac1 and mac2 of msg (mac1 at offMAC1, mac2 right
// after); mac2 stays zero without a cookie younger than CookieLife.
func (g *cookieGenerator) addMACs(msg []byte, offMAC1 int, now time.Time) {
	offMAC2 := offMAC1 + macLen
	g.mac1.put(msg[:offMAC1], msg[offMAC1:offMAC2])
	copy(g.lastMAC1[:], msg[offMAC1:offMAC2])
	g.hasLastMAC1 = true
	clear(msg[offMAC2 : offMAC2+macLen])
	if !g.cookieSet.IsZero() && now.Sub(g.cookieSet) < CookieLife {
		var m2 [macLen]byte
		mac(g.cookie[:], msg[:offMAC2], &m2)
		copy(msg[offMAC2:], m2[:])
	}
}

// consume takes the cookie of a reply to the last initiation sent.
func (g *cookieGenerator) consume(r CookieReply, now time.Time) error {
	if !g.hasLastMAC1 {
		return fmt.Errorf("cookie reply: %w", ErrNoHandshake)
	}
	aead, _ := chacha20poly1305.NewX(g.openKey[:])
	var ck [cookieLen]byte
	if _, err := aead.Open(ck[:0], r.nonce(), r.sealed(), g.lastMAC1[:]); err != nil {
		return fmt.Errorf("cookie reply: %w", wire.ErrAuth)
	}
	g.cookie, g.cookieSet = ck, now
	// One cookie per initiation: a replay of this reply opens no more.
	g.hasLastMAC1 = false
	return nil
}
