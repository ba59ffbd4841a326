package relaytest_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// The attacks on protocol 4's design (PROTOCOL.md §8.3) as regression
// tests of protocol 5: each would succeed against one pre-shared key
// sealing every link, hello/ticket handshakes and acks keyed by it.

// twoLinks is a sender Core with two destinations, receivers A (rxID) and
// B (otherID), each answering at its own address; what went to each is
// recorded.
type twoLinks struct {
	c       *sender.Core
	rx      [2]*rx
	pending [2][][]byte
	record  [2][][]byte
	from    *net.UDPAddr
	addrs   [2]string
}

func newTwoLinks(t *testing.T) *twoLinks {
	t.Helper()
	l := &twoLinks{rx: [2]*rx{newRx(t), newRxAs(t, otherID)}, addrs: [2]string{"10.0.0.1:7575", "10.0.0.3:7575"},
		from: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000"))}
	c, err := sender.NewCore(sender.CoreConfig{PSK: hsKey, Feedback: true, Identity: txID,
		Dests: []sender.Dest{{Addr: l.addrs[0], PeerKey: rxID.Public()}, {Addr: l.addrs[1], PeerKey: otherID.Public()}},
		Output: func(b []byte, to int) {
			b = bytes.Clone(b)
			l.pending[to] = append(l.pending[to], b)
			l.record[to] = append(l.record[to], b)
		}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	l.c = c
	return l
}

func (l *twoLinks) pump(now time.Time) {
	for l.pending[0] != nil || l.pending[1] != nil {
		for i := range 2 {
			ps := l.pending[i]
			l.pending[i] = nil
			for _, b := range ps {
				l.rx[i].r.Handle(b, l.from, now)
				back := l.rx[i].conn.sent
				l.rx[i].conn.sent = nil
				for _, a := range back {
					l.c.Ack(a.b, l.addrs[i], now)
				}
			}
		}
	}
}

// TestTwoDestinationsShareNoKeys (PROTOCOL.md §8.3; protocol 4 sealed
// both links under one key and nonce): every packet the sender sealed for
// A, handed to B (an attacker holding B's identity and the key file, or
// spoofing A's address at B), opens nothing there, and no two packets of
// the two links with the same counter carry the same ciphertext.
func TestTwoDestinationsShareNoKeys(t *testing.T) {
	l := newTwoLinks(t)
	l.c.Start(t0)
	l.pump(t0)
	now := t0.Add(50 * time.Millisecond)
	for _, k := range word {
		l.c.Key(k, true, now)
		l.pump(now)
		l.c.Key(k, false, now.Add(10*time.Millisecond))
		l.pump(now.Add(10 * time.Millisecond))
		now = now.Add(100 * time.Millisecond)
	}
	for i := range 2 {
		if got := downs(l.rx[i].rec); !slices.Equal(got, word) {
			t.Fatalf("receiver %d typed %v, want %v", i, got, word)
		}
	}
	// Same counter, both links: the bodies are the same queue, the
	// ciphertexts differ (different keys; one key and nonce would seal
	// both to the same bytes).
	byCounter := map[uint64][]byte{}
	for _, b := range l.record[0] {
		if h, err := handshake.ParseHeader(b); err == nil && h.Type == handshake.TypeQueue {
			byCounter[h.Counter] = b[h.Len():]
		}
	}
	same := 0
	for _, b := range l.record[1] {
		if h, err := handshake.ParseHeader(b); err == nil && h.Type == handshake.TypeQueue {
			if a, ok := byCounter[h.Counter]; ok && bytes.Equal(a[:16], b[h.Len():][:16]) {
				same++
			}
		}
	}
	if same != 0 {
		t.Errorf("%d packets share ciphertext across the two links: one key and nonce", same)
	}
	// A's packets at B, from A's sender's address and another.
	before := len(l.rx[1].rec.Events())
	replayInto(l.rx[1], l.record[0], "10.0.0.2:40000", now)
	replayInto(l.rx[1], l.record[0], "10.0.0.66:1", now.Add(time.Second))
	if got := l.rx[1].rec.Events(); len(got) != before {
		t.Errorf("B typed %v from the packets sealed for A", got[before:])
	}
	if st := l.rx[1].r.Stats(); st.MAC1 == 0 || st.Accepted == 0 {
		t.Errorf("B: %+v, want A's initiations refused by mac1", st)
	}
}

// TestForeignResponseChangesNothing (PROTOCOL.md §8.3; protocol 4's
// tickets could be taken from another receiver): a response made by another receiver
// (another identity) for this session, sent to the sender from any
// address, even with the pending initiation's index and counter pasted
// in, gives the sender no keypair: no key goes anywhere under it.
func TestForeignResponseChangesNothing(t *testing.T) {
	a := newRx(t)
	l := newLink(t, "10.0.0.2:40000", a)
	l.rx = nil // A hears nothing: the handshake stays pending
	l.c.Start(t0)
	l.pump(t0)
	if len(l.record) != 1 {
		t.Fatalf("%d packets at start, want the initiation", len(l.record))
	}
	init := l.record[0]
	h, _ := handshake.ParseHeader(init)
	// The other receiver answers an initiation for this session and
	// counter addressed to it (from the same sender identity: the
	// strongest case, a response genuinely made for this sender).
	other := newRxAs(t, otherID)
	var psk [32]byte
	copy(psk[:], hsKey)
	in := handshake.NewInitiator(handshake.InitiatorConfig{Private: [32]byte(txID.Private().Bytes()), Peer: otherID.Public(), PSK: psk, Random: rand.Reader})
	b, err := in.Initiate(nil, h.Session, h.Counter, t0)
	if err != nil {
		t.Fatal(err)
	}
	other.r.Handle(b, l.from, t0)
	if len(other.conn.sent) != 1 {
		t.Fatalf("the other receiver sent %d answers, want a response", len(other.conn.sent))
	}
	resp := other.conn.sent[0].b
	pasted := bytes.Clone(resp)
	copy(pasted[22:26], init[22:26]) // the pending initiation's sender index
	for name, r := range map[string][]byte{"as made": resp, "index pasted": pasted} {
		for _, from := range []string{hsRxAddr, "10.0.0.3:7575"} {
			if err := l.c.Ack(r, from, t0.Add(time.Millisecond)); err == nil {
				t.Errorf("%s from %s: taken", name, from)
			}
		}
	}
	if st := l.c.Stats(); st.Handshakes != 0 {
		t.Errorf("%d handshakes completed by a foreign response", st.Handshakes)
	}
	if u := l.c.Unanswered(nil); len(u) != 1 {
		t.Errorf("unanswered %v, want the destination still waiting", u)
	}
	// Keys typed now go nowhere: only initiations leave.
	l.c.Key(kX, true, t0.Add(10*time.Millisecond))
	l.tick(t0.Add(time.Second))
	for _, b := range l.record {
		if h, _ := handshake.ParseHeader(b); h.Type != handshake.TypeInitiation {
			t.Fatalf("a packet of type %d left without a handshake", h.Type)
		}
	}
}

// TestAckNoncesNeverRepeat (PROTOCOL.md §9; protocol 4's acks restarted
// their count under one key at each receiver restart): two receiver
// processes, one after the other under a running sender, seal their acks
// under different keypairs (the sender's index in them differs), so no
// key and nonce repeat; and an ack replayed, or forged, is refused.
func TestAckNoncesNeverRepeat(t *testing.T) {
	first := newRx(t)
	l := newLink(t, "10.0.0.2:40000", first)
	var acks [][]byte
	tapAll := func(x *rx, now time.Time) time.Time {
		for _, k := range word {
			l.c.Key(k, true, now)
			l.pumpKeep(now, &acks)
			l.c.Key(k, false, now.Add(10*time.Millisecond))
			l.pumpKeep(now.Add(10*time.Millisecond), &acks)
			now = now.Add(100 * time.Millisecond)
		}
		return now
	}
	l.c.Start(t0)
	l.pumpKeep(t0, &acks)
	now := tapAll(first, t0.Add(50*time.Millisecond))
	n1 := len(acks)
	second := newRx(t)
	l.rx = second
	for end := now.Add(3 * time.Second); now.Before(end); now = now.Add(50 * time.Millisecond) {
		l.c.Tick(now)
		l.pumpKeep(now, &acks)
	}
	tapAll(second, now)
	if n1 == 0 || len(acks) == n1 {
		t.Fatalf("%d acks from the first process, %d from the second: want both", n1, len(acks)-n1)
	}
	type nonce struct {
		index   uint32
		counter uint64
	}
	seen := map[nonce]bool{}
	indices := map[uint32]int{}
	for i, a := range acks {
		m, err := handshake.Parse(a)
		if err != nil || m.Header.Type != handshake.TypeAck {
			continue
		}
		k := nonce{m.Transport.Index, m.Header.Counter}
		if seen[k] {
			t.Errorf("ack %d repeats index %d counter %d: a key and nonce sealed twice", i, k.index, k.counter)
		}
		seen[k] = true
		who := 1
		if i >= n1 {
			who = 2
		}
		if p := indices[k.index]; p != 0 && p != who {
			t.Errorf("both processes sealed acks under the sender's index %d", k.index)
		}
		indices[k.index] = who
	}
	// Replayed and forged acks are refused.
	st := l.c.Stats()
	for i, a := range acks[len(acks)-3:] {
		if err := l.c.Ack(a, hsRxAddr, now.Add(time.Second)); err == nil {
			t.Errorf("replayed ack %d taken", i)
		}
		f := bytes.Clone(a)
		f[len(f)-1] ^= 1
		if err := l.c.Ack(f, hsRxAddr, now.Add(time.Second)); err == nil {
			t.Errorf("forged ack %d taken", i)
		}
	}
	if got := l.c.Stats(); got.Acks != st.Acks {
		t.Errorf("%d acks applied from replays and forgeries", got.Acks-st.Acks)
	}
}

// pumpKeep is pump, keeping every datagram the receiver sent back.
func (l *link) pumpKeep(now time.Time, kept *[][]byte) {
	for len(l.pending) > 0 {
		ps := l.pending
		l.pending = nil
		for _, b := range ps {
			l.rx.r.Handle(b, l.from, now)
			back := l.rx.conn.sent
			l.rx.conn.sent = nil
			for _, a := range back {
				*kept = append(*kept, a.b)
				l.c.Ack(a.b, hsRxAddr, now)
			}
		}
	}
}

// TestUnpairedOrMisaddressedSenderTypesNothing (PROTOCOL.md §8.3;
// protocol 4 let every key holder pose as every machine): a sender whose
// identity is not in the receiver's peers file types nothing there, and
// the receiver names it by fingerprint; a sender holding the wrong key for
// the receiver types nothing either (its initiations fail mac1).
func TestUnpairedOrMisaddressedSenderTypesNothing(t *testing.T) {
	var logs []string
	x := &rx{conn: &hsConn{}, rec: &fake.Recorder{}}
	r, err := receiver.New(receiver.Config{Conn: x.conn, Injector: x.rec, PSK: hsKey, Timeout: time.Hour, Identity: rxID,
		Peer: func([32]byte) (string, bool) { return "", false },
		Logf: func(f string, a ...any) { logs = append(logs, f) }})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r
	for name, peer := range map[string]*identity.Identity{"unpaired": rxID, "wrong receiver key": otherID} {
		l := newLinkTo(t, "10.0.0.2:40000", x, peer)
		l.start(t0)
		l.tap(kX, t0.Add(50*time.Millisecond))
		l.tick(t0.Add(3 * time.Second))
		if got := x.rec.Events(); len(got) != 0 {
			t.Errorf("%s: typed %v", name, got)
		}
		if l.c.Stats().Handshakes != 0 {
			t.Errorf("%s: the sender completed a handshake", name)
		}
	}
	st := r.Stats()
	if st.Unpaired == 0 || st.MAC1 == 0 || st.Responses != 0 || st.Accepted != 0 {
		t.Errorf("receiver %+v: want unpaired and mac1 refusals, no response, nothing applied", st)
	}
	said := false
	for _, l := range logs {
		said = said || bytes.Contains([]byte(l), []byte("is not paired here"))
	}
	if !said {
		t.Errorf("the log does not name the unpaired sender: %q", logs)
	}
}

// TestOwnIdentityOnlyFromThisMachine (PROTOCOL.md §8.1, §8.7): the
// receiver's own identity is its own send's, accepted from a loopback
// address or an address Config.Local names, and from nowhere else, even
// when the peers file lists it: a copy of the identity file used on
// another machine types nothing, and the log says why.
func TestOwnIdentityOnlyFromThisMachine(t *testing.T) {
	for _, tc := range []struct {
		name, from string
		listed     bool // the peers file lists the receiver's own key
		typed      bool
	}{
		{"loopback", "127.0.0.1:40000", false, true},
		{"IPv6 loopback", "[::1]:40000", false, true},
		{"an address of this host", "192.168.1.7:40000", false, true},
		{"another machine", "10.0.0.2:40000", false, false},
		{"another machine, own key listed as a peer", "10.0.0.2:40000", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs []string
			x := &rx{conn: &hsConn{}, rec: &fake.Recorder{}}
			r, err := receiver.New(receiver.Config{Conn: x.conn, Injector: x.rec, PSK: hsKey, Timeout: time.Hour, Identity: rxID,
				Peer:  func(k [32]byte) (string, bool) { return "self", tc.listed && k == rxID.Public() },
				Local: func(a netip.Addr) bool { return a == netip.MustParseAddr("192.168.1.7") },
				Logf:  func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
			if err != nil {
				t.Fatal(err)
			}
			x.r = r
			l := newLinkAs(t, tc.from, x, rxID, rxID)
			l.start(t0)
			l.tap(kX, t0.Add(50*time.Millisecond))
			l.tick(t0.Add(3 * time.Second))
			got := x.rec.Events()
			st := r.Stats()
			if !tc.typed {
				if len(got) != 0 || st.Responses != 0 || st.Unpaired == 0 {
					t.Errorf("typed %v; %d responses, %d refused as unpaired: want nothing typed, no response, refusals", got, st.Responses, st.Unpaired)
				}
				if !slices.ContainsFunc(logs, func(l string) bool { return strings.Contains(l, "accepted from this machine only") }) {
					t.Errorf("the log does not say why: %q", logs)
				}
				return
			}
			if d := downs(x.rec); len(d) != 1 || d[0] != kX {
				t.Errorf("typed %v, want X from this machine's own send", got)
			}
		})
	}
}

// TestInitiationFloodLeavesTypingIntact (PROTOCOL.md §8.3): while a
// paired sender types, a flood of forged initiations from many addresses
// (random bytes in an initiation's shape, and initiations with a valid
// mac1 from an unpaired identity) leaves every key typed, each at once;
// the receiver answers at most what its limiter allows, and none to the
// random ones.
func TestInitiationFloodLeavesTypingIntact(t *testing.T) {
	x := newRx(t)
	l := newLink(t, "10.0.0.2:40000", x)
	l.start(t0)
	stranger, _ := identity.Generate()
	var psk [32]byte
	forger := handshake.NewInitiator(handshake.InitiatorConfig{Private: [32]byte(stranger.Private().Bytes()), Peer: rxID.Public(), PSK: psk, Random: rand.Reader})
	now := t0.Add(50 * time.Millisecond)
	var typed []keys.Key
	for i := range 40 {
		// 100 forged initiations every 25 ms: 4,000 a second.
		for j := range 100 {
			src := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 168, byte(j), byte(i)}), 4000))
			var b []byte
			if j%2 == 0 {
				b = make([]byte, handshake.InitiationLen)
				rand.Read(b)
				copy(b, []byte{'K', 'R', 5, 3, 0, 0})
				binary.BigEndian.PutUint64(b[14:], uint64(i*100+j+1))
			} else {
				b, _ = forger.Initiate(nil, uint64(i*100+j+1), 1, now)
			}
			x.r.Handle(b, src, now)
		}
		if i%4 == 0 {
			k := word[(i/4)%len(word)]
			typed = append(typed, k)
			before := len(x.rec.Events())
			l.tap(k, now)
			if len(x.rec.Events()) == before {
				t.Fatalf("the key at +%v was not typed at once during the flood", now.Sub(t0))
			}
		}
		now = now.Add(25 * time.Millisecond)
	}
	l.tick(now.Add(time.Second))
	if got := downs(x.rec); !slices.Equal(got, typed) {
		t.Errorf("typed %v during the flood, want %v", got, typed)
	}
	st := x.r.Stats()
	if st.Responses > 2 {
		t.Errorf("%d responses: the flood got handshakes", st.Responses)
	}
	if st.Cookies+st.Responses > 20*2000 || st.Unpaired+st.Cookies == 0 {
		t.Errorf("answers %+v", st)
	}
}
