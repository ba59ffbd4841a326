package handshake

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// t0 is the time every test starts at.
var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

var src = netip.MustParseAddrPort("192.0.2.7:40123")

// seeded is a deterministic random source.
func seeded(seed byte) *rand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

func key(b byte) [32]byte {
	var k [32]byte
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

// pair is a sender and a receiver that know each other.
type pair struct {
	init *Initiator
	resp *Responder
	// senderPub, receiverPub are the static public keys.
	senderPub, receiverPub [32]byte
}

func newPair(t testing.TB, seed byte) *pair {
	t.Helper()
	sPriv, rPriv := key(0x10), key(0x40)
	p := &pair{senderPub: PublicKey(sPriv), receiverPub: PublicKey(rPriv)}
	psk := key(0x80)
	p.init = NewInitiator(InitiatorConfig{Private: sPriv, Peer: p.receiverPub, PSK: psk, Random: seeded(seed)})
	p.resp = NewResponder(ResponderConfig{
		Private: rPriv, PSK: psk, Random: seeded(seed + 1),
		Paired: func(pub [32]byte) bool { return pub == p.senderPub },
	})
	return p
}

// handshake runs one handshake at now and returns both keypairs.
func (p *pair) handshake(t testing.TB, session, counter uint64, now time.Time) (sender, receiver *Keypair) {
	t.Helper()
	b, err := p.init.Initiate(nil, session, counter, now)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseInitiation(b)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.resp.ConsumeInitiation(nil, m, src, false, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseResponse(a.Packet)
	if err != nil {
		t.Fatal(err)
	}
	k, err := p.init.ConsumeResponse(r, now)
	if err != nil {
		t.Fatal(err)
	}
	return k, a.Keypair
}

// TestHandshakeAgrees: a full handshake gives both ends keypairs that
// open each other's packets, in both directions and not in the same one
// (package doc: transport).
func TestHandshakeAgrees(t *testing.T) {
	p := newPair(t, 1)
	ks, kr := p.handshake(t, 0x0123456789abcdef, 1, t0)
	if ks.Local != kr.Remote || ks.Remote != kr.Local || ks.Session != kr.Session {
		t.Fatalf("indices: sender %d/%d receiver %d/%d", ks.Local, ks.Remote, kr.Local, kr.Remote)
	}
	if ks.Peer != p.receiverPub || kr.Peer != p.senderPub {
		t.Fatal("peers not the other end's static keys")
	}
	q, err := ks.Seal(nil, Header{Type: TypeQueue, Session: ks.Session, Counter: 2}, []byte("queue"), t0)
	if err != nil {
		t.Fatal(err)
	}
	tq, err := ParseTransport(q)
	if err != nil {
		t.Fatal(err)
	}
	if tq.Index != kr.Local {
		t.Fatalf("queue packet carries index %d, want the receiver's %d", tq.Index, kr.Local)
	}
	if _, err := ks.Open(nil, tq, t0); !errors.Is(err, ErrIndex) {
		t.Fatalf("sender opened its own packet: %v", err)
	}
	got, err := kr.Open(nil, tq, t0)
	if err != nil || string(got) != "queue" {
		t.Fatalf("receiver opened %q, %v", got, err)
	}
	a, err := kr.Seal(nil, Header{Type: TypeAck, Session: kr.Session, Counter: 1}, []byte("ack"), t0)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := ParseTransport(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err = ks.Open(nil, ta, t0)
	if err != nil || string(got) != "ack" {
		t.Fatalf("sender opened %q, %v", got, err)
	}
	if bytes.Equal(q[tq.Header.Len():], a[ta.Header.Len():]) {
		t.Fatal("directions share a key stream")
	}
	_ = wire.ErrAuth
}
