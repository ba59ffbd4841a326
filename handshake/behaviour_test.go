package handshake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/wire"
)

const session = 0x0123456789abcdef

func initiation(t testing.TB, i *Initiator, counter uint64, now time.Time) Initiation {
	t.Helper()
	b, err := i.Initiate(nil, session, counter, now)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseInitiation(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWrongResponderKeyFailsMAC1WithoutDH: an initiation made for another
// receiver's public key fails mac1, and is rejected before any Noise state
// or Diffie-Hellman exists: the rejection allocates nothing (package doc:
// mac1).
func TestWrongResponderKeyFailsMAC1WithoutDH(t *testing.T) {
	p := newPair(t, 1)
	other := NewInitiator(InitiatorConfig{Private: key(0x10), Peer: PublicKey(key(0x41)), Random: seeded(9)})
	m := initiation(t, other, 1, t0)
	a, err := p.resp.ConsumeInitiation(nil, m, src, false, t0)
	if !errors.Is(err, ErrMAC1) || a.Keypair != nil || len(a.Packet) != 0 {
		t.Fatalf("got %v, %+v; want ErrMAC1 and nothing else", err, a)
	}
	allocs := testing.AllocsPerRun(100, func() { p.resp.ConsumeInitiation(nil, m, src, true, t0) })
	if allocs != 0 {
		t.Fatalf("mac1 rejection allocates %v times: it did more than hash", allocs)
	}
}

// TestInitiationRefused: initiations that pass mac1 but must make no
// keypair, each with its reason.
func TestInitiationRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(p *pair)
		want  error
	}{
		{"unpaired initiator", func(p *pair) { p.resp.cfg.Paired = func([32]byte) bool { return false } }, ErrUnpaired},
		{"no pairing callback", func(p *pair) { p.resp.cfg.Paired = nil }, ErrUnpaired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, 1)
			tt.setup(p)
			a, err := p.resp.ConsumeInitiation(nil, initiation(t, p.init, 1, t0), src, false, t0)
			if !errors.Is(err, tt.want) || a.Keypair != nil || len(a.Packet) != 0 {
				t.Fatalf("got %v, keypair %v, %d bytes back; want %v and nothing", err, a.Keypair, len(a.Packet), tt.want)
			}
		})
	}
}

// TestOtherPSKFailsAtTheSender: with psk2 the pre-shared key enters at the
// end of message 2, so the receiver answers an initiation whatever the
// sender's PSK; the sender then refuses the response and the receiver's
// keypair never opens a packet (it stays next, unconfirmed).
func TestOtherPSKFailsAtTheSender(t *testing.T) {
	for _, psk := range [][32]byte{key(0x81), {}} {
		p := newPair(t, 1)
		p.resp.cfg.PSK = psk
		a, err := p.resp.ConsumeInitiation(nil, initiation(t, p.init, 1, t0), src, false, t0)
		if err != nil {
			t.Fatal(err)
		}
		if k, err := p.init.ConsumeResponse(mustResponse(t, a.Packet), t0); !errors.Is(err, ErrHandshake) || k != nil {
			t.Fatalf("PSK %x: sender got %v, %v; want ErrHandshake", psk[:2], err, k)
		}
	}
}

// TestInitiationReplayAndFlood: a replayed initiation creates nothing;
// nor does a fresh one within InitiationInterval of the last accepted;
// one after it does (package doc; WireGuard paper §5.1).
func TestInitiationReplayAndFlood(t *testing.T) {
	p := newPair(t, 1)
	first := initiation(t, p.init, 1, t0)
	if _, err := p.resp.ConsumeInitiation(nil, first, src, false, t0); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		m    Initiation
		at   time.Time
		want error
	}{
		{"the same initiation again, later", first, t0.Add(time.Minute), ErrReplayedInitiation},
		{"a new one stamped in the same 2^24 ns", initiation(t, p.init, 2, t0.Add(10*time.Millisecond)), t0.Add(time.Minute), ErrReplayedInitiation},
		{"a new one stamped earlier", initiation(t, p.init, 3, t0.Add(-time.Second)), t0.Add(time.Minute), ErrReplayedInitiation},
		{"a newer one within InitiationInterval", initiation(t, p.init, 4, t0.Add(18*time.Millisecond)), t0.Add(18 * time.Millisecond), ErrFlood},
		{"a newer one after it", initiation(t, p.init, 5, t0.Add(InitiationInterval)), t0.Add(InitiationInterval), nil},
		{"the first, once more", first, t0.Add(time.Hour), ErrReplayedInitiation},
	}
	for _, s := range steps {
		a, err := p.resp.ConsumeInitiation(nil, s.m, src, false, s.at)
		if !errors.Is(err, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
		if (a.Keypair != nil) != (s.want == nil) {
			t.Fatalf("%s: keypair %v with error %v", s.name, a.Keypair, err)
		}
	}
}

// TestUnderLoadCookieRoundTrip: under load an initiation without mac2 gets
// a cookie reply and nothing else; the initiator takes the cookie, and its
// next initiation from the same address is accepted; from another address,
// or once the cookie is older than CookieLife, it gets a cookie reply
// again (package doc: mac2; WireGuard paper §5.4.7).
func TestUnderLoadCookieRoundTrip(t *testing.T) {
	p := newPair(t, 1)
	m := initiation(t, p.init, 1, t0)
	a, err := p.resp.ConsumeInitiation(nil, m, src, true, t0)
	if err != nil || !a.Cookie || a.Keypair != nil || len(a.Packet) != CookieReplyLen {
		t.Fatalf("under load without mac2: %v, %+v", err, a)
	}
	c, err := ParseCookieReply(a.Packet)
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.Session != session || c.Header.Counter != 1 || c.Sender != m.Sender {
		t.Fatalf("cookie reply echoes %+v, sender %d", c.Header, c.Sender)
	}
	if err := p.init.ConsumeCookieReply(c, t0); err != nil {
		t.Fatal(err)
	}
	if err := p.init.ConsumeCookieReply(c, t0); !errors.Is(err, ErrNoHandshake) {
		t.Fatalf("a cookie reply taken twice: %v", err)
	}

	retry := initiation(t, p.init, 2, t0.Add(time.Second))
	if bytes.Equal(retry.MAC2(), make([]byte, macLen)) {
		t.Fatal("the initiation after a cookie has no mac2")
	}
	elsewhere := netip.MustParseAddrPort("192.0.2.8:40123")
	if a, err := p.resp.ConsumeInitiation(nil, retry, elsewhere, true, t0.Add(time.Second)); err != nil || !a.Cookie {
		t.Fatalf("a cookie of another address: %v, %+v", err, a)
	}
	a, err = p.resp.ConsumeInitiation(nil, retry, src, true, t0.Add(time.Second))
	if err != nil || a.Cookie || a.Keypair == nil {
		t.Fatalf("with the cookie: %v, %+v", err, a)
	}
	if _, err := p.init.ConsumeResponse(mustResponse(t, a.Packet), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}

	late := initiation(t, p.init, 3, t0.Add(CookieLife))
	if !bytes.Equal(late.MAC2(), make([]byte, macLen)) {
		t.Fatal("a cookie CookieLife old still used")
	}
}

// TestCookieSecretRotates: a responder's cookies check for at most
// CookieRefreshTime: then its secret is renewed.
func TestCookieSecretRotates(t *testing.T) {
	p := newPair(t, 1)
	a, _ := p.resp.ConsumeInitiation(nil, initiation(t, p.init, 1, t0), src, true, t0)
	if err := p.init.ConsumeCookieReply(mustCookie(t, a.Packet), t0); err != nil {
		t.Fatal(err)
	}
	// The initiator would use it until CookieLife; the responder's secret
	// is older by then than CookieRefreshTime since it was drawn at t0.
	at := t0.Add(CookieRefreshTime)
	p.init.cookies.cookieSet = at
	a, err := p.resp.ConsumeInitiation(nil, initiation(t, p.init, 2, at), src, true, at)
	if err != nil || !a.Cookie {
		t.Fatalf("a cookie of the old secret: %v, %+v", err, a)
	}
}

// TestCookieReplyMustAnswerTheInitiation: a cookie reply opens only with
// the mac1 of the last initiation as associated data, and only for the
// pending handshake's index and header.
func TestCookieReplyMustAnswerTheInitiation(t *testing.T) {
	p := newPair(t, 1)
	a, _ := p.resp.ConsumeInitiation(nil, initiation(t, p.init, 1, t0), src, true, t0)
	old := bytes.Clone(a.Packet)
	initiation(t, p.init, 2, t0.Add(time.Second)) // replaces the pending one
	if err := p.init.ConsumeCookieReply(mustCookie(t, old), t0); !errors.Is(err, ErrNoHandshake) {
		t.Fatalf("a reply to an older initiation: %v", err)
	}
	m := initiation(t, p.init, 3, t0.Add(2*time.Second))
	a, _ = p.resp.ConsumeInitiation(nil, m, src, true, t0.Add(2*time.Second))
	forged := bytes.Clone(a.Packet)
	forged[CookieReplyLen-1] ^= 1
	if err := p.init.ConsumeCookieReply(mustCookie(t, forged), t0); !errors.Is(err, wire.ErrAuth) {
		t.Fatalf("a tampered reply: %v", err)
	}
}

func mustResponse(t testing.TB, b []byte) Response {
	t.Helper()
	r, err := ParseResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustCookie(t testing.TB, b []byte) CookieReply {
	t.Helper()
	c, err := ParseCookieReply(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustTransport(t testing.TB, b []byte) Transport {
	t.Helper()
	tr, err := ParseTransport(b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestResponseChecks: a response that does not answer the pending
// initiation, or does not authenticate, completes nothing and leaves the
// handshake pending: the genuine response still completes it.
func TestResponseChecks(t *testing.T) {
	p := newPair(t, 1)
	m := initiation(t, p.init, 1, t0)
	a, err := p.resp.ConsumeInitiation(nil, m, src, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	good := a.Packet
	edit := func(off int, x byte) []byte {
		b := bytes.Clone(good)
		b[off] ^= x
		return b
	}
	refmac := func(b []byte) []byte { // a forger who knows the sender's public key
		g := newCookieGenerator(p.senderPub)
		g.addMACs(b, offRespMAC1, t0)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"other sender index", edit(offRespSender+3, 1), ErrNoHandshake},
		{"other session", edit(offSession+7, 2), ErrNoHandshake},
		{"other counter", edit(offCounter+7, 2), ErrNoHandshake},
		{"bad mac1", edit(offRespMAC1, 1), ErrMAC1},
		{"tampered ephemeral, mac1 redone", refmac(edit(offRespEphemeral, 1)), ErrHandshake},
		{"tampered tag, mac1 redone", refmac(edit(offRespEmpty, 1)), ErrHandshake},
		{"low-order ephemeral, mac1 redone", refmac(func() []byte { b := bytes.Clone(good); clear(b[offRespEphemeral:offRespEmpty]); return b }()), ErrHandshake},
	}
	for _, tt := range tests {
		k, err := p.init.ConsumeResponse(mustResponse(t, tt.b), t0)
		if !errors.Is(err, tt.want) || k != nil {
			t.Fatalf("%s: got %v, %v; want %v", tt.name, err, k, tt.want)
		}
		if !p.init.Pending() {
			t.Fatalf("%s: the pending handshake was dropped", tt.name)
		}
	}
	k, err := p.init.ConsumeResponse(mustResponse(t, good), t0)
	if err != nil || k.Remote != a.Keypair.Local {
		t.Fatalf("the genuine response after forged ones: %v", err)
	}
	if _, err := p.init.ConsumeResponse(mustResponse(t, good), t0); !errors.Is(err, ErrNoHandshake) {
		t.Fatalf("the response twice: %v", err)
	}
}

// TestHandshakeBindsHeaderAndIndex: an initiation whose session id,
// counter or sender index was changed on the way (and mac1 made again,
// which anyone can) does not authenticate: they are in the prologue.
func TestHandshakeBindsHeaderAndIndex(t *testing.T) {
	for _, off := range []int{offSession, offCounter + 7, offInitSender} {
		p := newPair(t, 1)
		b := bytes.Clone(initiation(t, p.init, 1, t0).Bytes())
		b[off] ^= 2
		g := newCookieGenerator(p.receiverPub)
		g.addMACs(b, offInitMAC1, t0)
		m, err := ParseInitiation(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.resp.ConsumeInitiation(nil, m, src, false, t0); !errors.Is(err, ErrHandshake) {
			t.Fatalf("byte %d changed: %v, want ErrHandshake", off, err)
		}
	}
}

// TestTransportOpen: what a keypair opens, once, and what it refuses
// (package doc: transport; PROTOCOL.md §8.5 for the window).
func TestTransportOpen(t *testing.T) {
	p := newPair(t, 1)
	ks, kr := p.handshake(t, session, 1, t0)
	seal := func(counter uint64, msg string) []byte {
		b, err := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: counter}, []byte(msg), t0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	open := func(b []byte) error {
		tr, err := ParseTransport(b)
		if err != nil {
			return err
		}
		_, err = kr.Open(nil, tr, t0)
		return err
	}
	p5, p3, p4 := seal(5, "five"), seal(3, "three"), seal(4, "four")
	steps := []struct {
		name string
		b    []byte
		want error
	}{
		{"5", p5, nil},
		{"3, out of order within the window", p3, nil},
		{"5 again", p5, ErrReplay},
		{"4", p4, nil},
		{"3 again", p3, ErrReplay},
		{"far ahead", seal(5+replay.Window+10, "ahead"), nil},
		{"4, now older than the window", seal(4, "old"), ErrReplay},
		{"wrong index", func() []byte { b := seal(6000, "x"); b[offTransportIndex] ^= 1; return b }(), ErrIndex},
		{"flipped counter", func() []byte { b := seal(6002, "x"); b[offTransportCounter+1] ^= 1; return b }(), wire.ErrAuth},
		{"flipped ciphertext", func() []byte { b := seal(6004, "x"); b[offTransportCounter+2] ^= 1; return b }(), wire.ErrAuth},
		{"flipped tag", func() []byte { b := seal(6005, "x"); b[len(b)-1] ^= 1; return b }(), wire.ErrAuth},
		{"6002 (it failed before: the window did not move)", seal(6002, "x"), nil},
		{"sealed by the receiver", func() []byte {
			b, _ := kr.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: 7000}, nil, t0)
			binaryPutIndex(b, kr.Local)
			return b
		}(), wire.ErrAuth},
	}
	for _, s := range steps {
		if err := open(s.b); !errors.Is(err, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
	}
	if _, err := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: 1}, nil, t0.Add(RejectAfterTime)); !errors.Is(err, ErrExpired) {
		t.Fatalf("sealing RejectAfterTime later: %v", err)
	}
	if _, err := kr.Open(nil, mustTransport(t, seal(9000, "x")), t0.Add(RejectAfterTime)); !errors.Is(err, ErrExpired) {
		t.Fatalf("opening RejectAfterTime later: %v", err)
	}
}

func binaryPutIndex(b []byte, i uint32) {
	b[offTransportIndex], b[offTransportIndex+1], b[offTransportIndex+2], b[offTransportIndex+3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
}

// TestEveryByteAuthenticated: changing any byte of a transport packet
// makes it fail, however it fails: the compact header is the associated
// data whole (PROTOCOL.md §2, §8.3), so a wrong index, a wrong counter
// or any other header byte changed does not open, at every length of the
// counter's uvarint.
func TestEveryByteAuthenticated(t *testing.T) {
	for _, counter := range []uint64{2, 127, 128, 16384, 1 << 62} {
		p := newPair(t, 1)
		ks, kr := p.handshake(t, session, 1, t0)
		b, _ := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: counter}, []byte("typed keys"), t0)
		for i := range b {
			for _, flip := range []byte{0x01, 0x20, 0x80} {
				c := bytes.Clone(b)
				c[i] ^= flip
				tr, err := ParseTransport(c)
				if err == nil {
					_, err = kr.Open(nil, tr, t0)
				}
				if err == nil {
					t.Fatalf("counter %d: byte %d ^ %#02x and the packet still opens", counter, i, flip)
				}
			}
		}
		// A changed index names another keypair (ErrIndex above); even one
		// that had that index would not open it: the index is associated
		// data too.
		for i := offTransportIndex; i < offTransportCounter; i++ {
			c := bytes.Clone(b)
			c[i] ^= 0x01
			other := *kr
			other.Local = mustTransport(t, c).Index
			if _, err := other.Open(nil, mustTransport(t, c), t0); !errors.Is(err, wire.ErrAuth) {
				t.Fatalf("counter %d: index byte %d changed, opened under a keypair of that index: %v, want ErrAuth", counter, i, err)
			}
		}
		if _, err := kr.Open(nil, mustTransport(t, b), t0); err != nil {
			t.Fatalf("counter %d: the packet as sealed: %v", counter, err)
		}
	}
}

// TestTransportHeaderIsCompact: a transport packet's header is the six
// bytes every packet starts with, the recipient's index and the counter as
// a uvarint (PROTOCOL.md §2): 11 bytes up to counter 127, 12 up to 16383,
// 13 up to 2^21-1; no session id, which the receiver takes from the
// keypair the index names.
func TestTransportHeaderIsCompact(t *testing.T) {
	p := newPair(t, 1)
	ks, kr := p.handshake(t, session, 1, t0)
	for _, tc := range []struct {
		counter uint64
		header  int
	}{{1, 11}, {127, 11}, {128, 12}, {16383, 12}, {16384, 13}, {1<<21 - 1, 13}, {1<<64 - 1, 20}} {
		b, err := ks.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: tc.counter}, []byte("keys"), t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(b) - len("keys") - tagLen; got != tc.header {
			t.Errorf("counter %d: header %d bytes, want %d", tc.counter, got, tc.header)
		}
		want := binary.AppendUvarint(binary.BigEndian.AppendUint32([]byte{'K', 'R', Version, byte(TypeQueue), FlagSealed, 0}, kr.Local), tc.counter)
		if !bytes.Equal(b[:tc.header], want) {
			t.Errorf("counter %d: header % x, want % x", tc.counter, b[:tc.header], want)
		}
		tr := mustTransport(t, b)
		if tr.Header.Len() != tc.header || tr.Index != kr.Local || tr.Header.Counter != tc.counter || tr.Header.Session != 0 {
			t.Errorf("counter %d: parsed %+v, index %d", tc.counter, tr.Header, tr.Index)
		}
	}
}

// TestRekey: the responder keeps using its current keypair after a new
// handshake and switches when the first packet under the new one opens;
// packets under the previous keypair still open until it is
// RejectAfterTime old (RekeyAfterTime's doc).
func TestRekey(t *testing.T) {
	p := newPair(t, 1)
	var sring, rring Keyring
	ks1, kr1 := p.handshake(t, session, 1, t0)
	sring.Use(ks1)
	rring.Begin(kr1)
	if rring.Current(t0) != nil {
		t.Fatal("an unconfirmed keypair is current")
	}
	counter := uint64(1)
	seal := func(k *Keypair, at time.Time) Transport {
		counter++
		b, err := k.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: counter}, []byte("k"), at)
		if err != nil {
			t.Fatal(err)
		}
		return mustTransport(t, b)
	}
	send := func(k *Keypair, at time.Time) (*Keypair, error) {
		_, used, err := rring.Open(nil, seal(k, at), at)
		return used, err
	}
	if k, err := send(ks1, t0); err != nil || k != kr1 || rring.Current(t0) != kr1 {
		t.Fatalf("first packet: %v, confirmed %v", err, rring.Current(t0) == kr1)
	}
	t1 := t0.Add(RekeyAfterTime)
	if !ks1.NeedsRekey(t1) || ks1.NeedsRekey(t1.Add(-time.Nanosecond)) {
		t.Fatal("NeedsRekey not at RekeyAfterTime")
	}
	ks2, kr2 := p.handshake(t, session, counter+1, t1)
	counter++
	rring.Begin(kr2)
	if rring.Current(t1) != kr1 {
		t.Fatal("the receiver seals with the new keypair before it is confirmed")
	}
	if _, err := send(ks1, t1); err != nil {
		t.Fatalf("old keypair before confirmation: %v", err)
	}
	sring.Use(ks2)
	if sring.Current(t1) != ks2 || sring.Lookup(ks1.Local, t1) != ks1 {
		t.Fatal("the sender's keyring did not keep the old keypair as previous")
	}
	if k, err := send(ks2, t1); err != nil || k != kr2 || rring.Current(t1) != kr2 {
		t.Fatalf("first packet under the new keypair: %v", err)
	}
	// An ack under the new current opens at the sender.
	ack, _ := rring.Current(t1).Seal(nil, Header{Type: TypeAck, Session: session, Counter: 1}, nil, t1)
	if _, k, err := sring.Open(nil, mustTransport(t, ack), t1); err != nil || k != ks2 {
		t.Fatalf("ack under the new keypair: %v", err)
	}
	if _, err := send(ks1, t0.Add(RejectAfterTime-time.Nanosecond)); err != nil {
		t.Fatalf("previous keypair before RejectAfterTime: %v", err)
	}
	late := seal(ks1, t1)
	if _, _, err := rring.Open(nil, late, t0.Add(RejectAfterTime)); !errors.Is(err, ErrIndex) {
		t.Fatalf("previous keypair at RejectAfterTime: %v", err)
	}
	// A third handshake drops the first keypair altogether.
	t2 := t1.Add(RekeyAfterTime)
	ks3, kr3 := p.handshake(t, session, counter+1, t2)
	counter++
	rring.Begin(kr3)
	if _, err := send(ks3, t2); err != nil {
		t.Fatal(err)
	}
	if got := rring.Indices(); len(got) != 2 || got[0] != kr3.Local || got[1] != kr2.Local {
		t.Fatalf("keyring holds %v, want [%d %d]", got, kr3.Local, kr2.Local)
	}
}

// TestKeyringKeepsUnconfirmedAnswers: a sender that takes the keypair of one
// response while its next initiation is already answered (it wanted a new
// handshake before any packet under the first reached the receiver, as under
// heavy loss) is still heard: the receiver keeps up to MaxNext unconfirmed
// keypairs, and a packet under one confirms it and drops only the older
// ones, so the sender may still move to a newer one (Keyring's doc). With
// only the newest kept, the first keypair's packets would be dropped, and a
// held key released by the silence under heavy loss.
func TestKeyringKeepsUnconfirmedAnswers(t *testing.T) {
	p := newPair(t, 1)
	var rring Keyring
	ks1, kr1 := p.handshake(t, session, 1, t0)
	rring.Begin(kr1)
	ks2, kr2 := p.handshake(t, session, 2, t0.Add(time.Second))
	rring.Begin(kr2)
	counter := uint64(2)
	send := func(k *Keypair) (*Keypair, error) {
		counter++
		b, err := k.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: counter}, []byte("k"), t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		_, used, err := rring.Open(nil, mustTransport(t, b), t0.Add(2*time.Second))
		return used, err
	}
	if k, err := send(ks1); err != nil || k != kr1 || rring.Current(t0) != kr1 {
		t.Fatalf("a packet under the older answer: %v (confirmed: %v)", err, rring.Current(t0) == kr1)
	}
	if k, err := send(ks2); err != nil || k != kr2 || rring.Current(t0) != kr2 {
		t.Fatalf("then one under the newer: %v (confirmed: %v)", err, rring.Current(t0) == kr2)
	}
	// Past MaxNext unconfirmed answers the oldest goes.
	var ring Keyring
	var first *Keypair
	for i := range MaxNext + 1 {
		_, kr := p.handshake(t, session, uint64(10+i), t0.Add(time.Duration(3+i)*time.Second))
		if first == nil {
			first = kr
		}
		ring.Begin(kr)
	}
	if got := len(ring.Indices()); got != MaxNext {
		t.Errorf("keyring holds %d unconfirmed keypairs, want MaxNext (%d)", got, MaxNext)
	}
	if ring.Lookup(first.Local, t0.Add(10*time.Second)) != nil {
		t.Error("the oldest unconfirmed keypair is still held past MaxNext")
	}
}

// TestRateLimiter: a source gets its burst, then PerSecond; sources do not
// share buckets, but an IPv6 /64 is one source; the table forgets the
// source heard least recently, only it (package doc).
func TestRateLimiter(t *testing.T) {
	l := NewRateLimiter(20, 5, 3)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	allowed := func(src netip.Addr, n int, at time.Time) int {
		k := 0
		for range n {
			if l.Allow(src, at) {
				k++
			}
		}
		return k
	}
	if got := allowed(a, 10, t0); got != 5 {
		t.Fatalf("burst: %d of 10 allowed, want 5", got)
	}
	if got := allowed(b, 10, t0); got != 5 {
		t.Fatalf("another source's burst: %d, want 5", got)
	}
	if got := allowed(a, 10, t0.Add(100*time.Millisecond)); got != 2 {
		t.Fatalf("100 ms later: %d allowed, want 2 (20/s)", got)
	}
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:2")
	if got := allowed(v6a, 5, t0) + allowed(v6b, 5, t0); got != 5 {
		t.Fatalf("one /64: %d allowed, want 5", got)
	}
	if l.Len() != 3 {
		t.Fatalf("%d sources remembered, want 3", l.Len())
	}
	// b is now the least recently heard; a fourth source evicts it alone.
	allowed(a, 1, t0.Add(time.Second))
	allowed(v6a, 1, t0.Add(time.Second))
	if got := allowed(netip.MustParseAddr("192.0.2.9"), 1, t0.Add(time.Second)); got != 1 || l.Len() != 3 {
		t.Fatalf("new source: %d allowed, %d remembered", got, l.Len())
	}
	if _, ok := l.table[b]; ok {
		t.Fatal("the least recently heard source was kept")
	}
	if _, ok := l.table[a]; !ok {
		t.Fatal("a recently heard source was forgotten")
	}
}

// TestSenderKeypairDatesFromInitiation: however long the response takes,
// the sender's keypair is never younger than the receiver's copy, so the
// sender rekeys and stops sealing before the receiver drops it
// (RekeyAfterTime's doc; TestHandshakeOverBadNetwork delays a response
// over a minute).
func TestSenderKeypairDatesFromInitiation(t *testing.T) {
	p := newPair(t, 1)
	m := initiation(t, p.init, 1, t0)
	a, err := p.resp.ConsumeInitiation(nil, m, src, false, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := p.init.ConsumeResponse(mustResponse(t, a.Packet), t0.Add(70*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !ks.Created.Equal(t0) || ks.Created.After(a.Keypair.Created) {
		t.Fatalf("sender's keypair created %v, receiver's %v", ks.Created, a.Keypair.Created)
	}
	if at := a.Keypair.Created.Add(RejectAfterTime); !ks.Expired(at) {
		t.Fatal("the sender still seals when the receiver has dropped the keypair")
	}
	initiation(t, p.init, 2, t0.Add(time.Minute))
	a, _ = p.resp.ConsumeInitiation(nil, initiation(t, p.init, 3, t0.Add(2*time.Minute)), src, false, t0.Add(2*time.Minute))
	if _, err := p.init.ConsumeResponse(mustResponse(t, a.Packet), t0.Add(2*time.Minute+RejectAfterTime)); !errors.Is(err, ErrExpired) || p.init.Pending() {
		t.Fatalf("a response RejectAfterTime after its initiation: %v", err)
	}
}

// TestResponseToAnEarlierRetryCompletes (PROTOCOL.md §8.2: a sender
// retries sooner than a round trip while keys wait): the response to any
// of the last MaxNext initiations completes the handshake, and the
// receiver, which answered each of them in turn, still holds that
// keypair, so the sender's first packet under it opens there. A response
// to an initiation older than that, or one after the handshake completed,
// completes nothing.
func TestResponseToAnEarlierRetryCompletes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		retries  int // initiations after the answered one
		complete bool
	}{
		{"the newest", 0, true},
		{"one retry later", 1, true},
		{"MaxNext-1 retries later", MaxNext - 1, true},
		{"MaxNext retries later: forgotten", MaxNext, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, 1)
			var ring Keyring
			at := t0
			answer := func(counter uint64) []byte {
				m := initiation(t, p.init, counter, at)
				a, err := p.resp.ConsumeInitiation(nil, m, src, false, at)
				if err != nil {
					t.Fatal(err)
				}
				ring.Begin(a.Keypair)
				at = at.Add(2 * InitiationInterval)
				return a.Packet
			}
			first := answer(1)
			var last []byte
			for n := range tt.retries {
				last = answer(uint64(2 + n))
			}
			k, err := p.init.ConsumeResponse(mustResponse(t, first), at)
			if !tt.complete {
				if !errors.Is(err, ErrNoHandshake) {
					t.Fatalf("a response to an initiation %d retries back: %v, want ErrNoHandshake", tt.retries, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a response to an initiation %d retries back: %v", tt.retries, err)
			}
			b, err := k.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: 100}, []byte("k"), at)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := ring.Open(nil, mustTransport(t, b), at); err != nil {
				t.Fatalf("the receiver cannot open the first packet under the keypair taken: %v", err)
			}
			if p.init.Pending() {
				t.Fatal("handshakes still pending after one completed")
			}
			if last != nil {
				if _, err := p.init.ConsumeResponse(mustResponse(t, last), at); !errors.Is(err, ErrNoHandshake) {
					t.Fatalf("a later response after completion: %v, want ErrNoHandshake", err)
				}
			}
		})
	}
}
