package receiver

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/wire"
)

// One-way packets prove their sender (PROTOCOL.md §8.6, §8.7): the key
// file opens them, and the sending machine's signature says who sent
// them; recv --one-way takes them only from machines it pairs.

// oneWayRx is a receiver run with --one-way and the key file psk, pairing
// the machines for which paired says so, with what it logs.
type oneWayRx struct {
	r      *Receiver
	rec    *fake.Recorder
	logs   []string
	paired map[[identity.KeyLen]byte]bool
	// changed: the peers file was edited since the receiver last asked.
	changed bool
}

func newOneWayRx(t *testing.T, paired ...*identity.Identity) *oneWayRx {
	t.Helper()
	x := &oneWayRx{rec: &fake.Recorder{}, paired: map[[identity.KeyLen]byte]bool{}}
	for _, id := range paired {
		x.paired[id.Public()] = true
	}
	r, err := New(Config{OneWay: true, Identity: testID, Conn: nopConn{}, Injector: x.rec, PSK: psk,
		Peer: func(k [identity.KeyLen]byte) (string, bool) { return "peer", x.paired[k] },
		Recheck: func(time.Time) bool {
			c := x.changed
			x.changed = false
			return c
		},
		Logf: func(f string, a ...any) { x.logs = append(x.logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	x.r = r
	return x
}

func (x *oneWayRx) said(s string) int {
	n := 0
	for _, l := range x.logs {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func mustIdentity(t *testing.T) *identity.Identity {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var lan = &net.UDPAddr{IP: net.IPv4(192, 0, 2, 9), Port: 40000}

// TestOneWayFromAnUnpairedMachineTypesNothing: a machine that holds the
// key file but is not paired here types nothing, however long it sends (a
// minute and 40 s of packets, 100 ms apart), its packets counted and said
// once a minute with its fingerprint and the fix; the paired machine,
// with the same key file, from the same address, types. This machine's
// own identity is taken from a loopback address only (§8.1).
func TestOneWayFromAnUnpairedMachineTypesNothing(t *testing.T) {
	tx, stranger := mustIdentity(t), mustIdentity(t)
	x := newOneWayRx(t, tx)
	const n = 1000
	for i := range n {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		x.r.Handle(sealedBy(t, stranger, psk, 7, uint64(i+1), uint64(i*100), at, dn(kA, 1)), lan, at)
	}
	expect(t, x.rec, "")
	if st := x.r.Stats(); st.UnpairedOneWay != n || st.Sessions != 0 || st.Accepted != 0 {
		t.Errorf("%d one-way packets of an unpaired machine counted, %d sessions, %d applied; want %d, none", st.UnpairedOneWay, st.Sessions, st.Accepted, n)
	}
	fp := identity.Fingerprint(stranger.Public())
	if got := x.said("signed by the identity " + fp + ", which is not paired here"); got != 2 {
		t.Errorf("said %d times in 100 s, want twice (once a minute): %q", got, x.logs)
	}
	at := t0.Add(n * 100 * time.Millisecond)
	x.r.Handle(sealedBy(t, tx, psk, 8, 1, 10, at, dn(kB, 1)), lan, at)
	expect(t, x.rec, "KeyB down")

	// This machine's own identity: its own send, from loopback, types;
	// from elsewhere it is a copy of the identity file.
	at = at.Add(time.Minute) // past the minute of the stranger's last line
	x.r.Handle(sealedBy(t, testID, psk, 9, 1, 10, at, dn(kA, 2)), lan, at)
	expect(t, x.rec, "")
	if x.said("this machine's own, which is accepted from this machine only") != 1 {
		t.Errorf("the copied identity is not named: %q", x.logs)
	}
	x.r.Handle(sealedBy(t, testID, psk, 10, 1, 10, at, dn(kA, 2)), addr1, at)
	expect(t, x.rec, "KeyA down")
}

// TestOneWaySessionKeepsItsMachine: a packet of a live one-way session's
// id signed by another machine, even a paired one, is not that session's
// and types nothing; neither does a holder of the key file that opens a
// paired machine's packet and seals it again changed, or signs it itself
// (it is not paired).
func TestOneWaySessionKeepsItsMachine(t *testing.T) {
	tx, other, holder := mustIdentity(t), mustIdentity(t), mustIdentity(t)
	x := newOneWayRx(t, tx, other)
	x.r.Handle(sealedBy(t, tx, psk, 7, 1, 10, t0, dn(kA, 1)), lan, t0)
	expect(t, x.rec, "KeyA down")
	x.r.Handle(sealedBy(t, other, psk, 7, 2, 20, t0, up(kA, 2), dn(kA, 1)), lan, t0)
	expect(t, x.rec, "")
	if st := x.r.Stats(); st.Forged != 1 {
		t.Errorf("stats %+v, want the other machine's packet counted forged", st)
	}

	// The key file's holder: tx's next packet, opened and changed.
	genuine := sealedBy(t, tx, psk, 7, 3, 30, t0, dn(kB, 3), dn(kA, 1))
	a, err := wire.OneWayAEAD(psk, 7)
	if err != nil {
		t.Fatal(err)
	}
	var n [12]byte
	n[11] = 3
	plain, err := a.Open(nil, n[:], genuine[wire.HeaderLen:], genuine[:wire.HeaderLen])
	if err != nil {
		t.Fatal(err)
	}
	body := plain[:len(plain)-wire.SignedLen]
	changed := append([]byte(nil), plain...)
	i := bytes.Index(body, []byte{1, 0, 0x05}) // entry 0: down KeyB
	if i < 0 {
		t.Fatalf("no down KeyB in % x", body)
	}
	changed[i+2] = 0x06 // down KeyC
	resigned := append([]byte(nil), plain...)
	pub := holder.Public()
	copy(resigned[len(body):], pub[:])
	sig := holder.Sign(wire.AppendSignedMessage(nil, genuine[:wire.HeaderLen], body))
	copy(resigned[len(body)+wire.SignerLen:], sig[:])
	for _, p := range [][]byte{changed, resigned} {
		b := a.Seal(append([]byte(nil), genuine[:wire.HeaderLen]...), n[:], p, genuine[:wire.HeaderLen])
		x.r.Handle(b, lan, t0)
		expect(t, x.rec, "")
	}
	if st := x.r.Stats(); st.Forged != 3 || st.Accepted != 1 {
		t.Errorf("stats %+v, want 3 forged, 1 applied", st)
	}
	x.r.Handle(genuine, lan, t0)
	expect(t, x.rec, "KeyB down")
}

// TestUnsignedOneWayIsRefused (PROTOCOL.md §8.6): a one-way packet of the
// layout from before one-way packets were signed (flags SEALED|ONEWAY,
// sealed with the key file alone) types nothing; it is counted as refused
// and said once a minute as an older sender's, with the fix.
func TestUnsignedOneWayIsRefused(t *testing.T) {
	x := newOneWayRx(t, oneWayTx)
	a, err := wire.OneWayAEAD(psk, 7)
	if err != nil {
		t.Fatal(err)
	}
	const count = 700 // 70 s at 100 ms
	for i := range count {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		// The old layout: the 22-byte header with flags 03, the body
		// sealed, nothing after it.
		q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 7, Counter: uint64(i + 1)},
			Clock: uint64(i * 100), Wall: uint64(at.UnixMilli()), Events: []eventqueue.Event{dn(kA, 1), {}, {}, {}}}
		plain, err := q.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		h := plain[:wire.HeaderLen]
		h[4] = wire.FlagSealed | wire.FlagOneWay
		var n [12]byte
		n[11] = byte(i + 1)
		n[10] = byte((i + 1) >> 8)
		b := a.Seal(append([]byte(nil), h...), n[:], plain[wire.HeaderLen:], h)
		x.r.Handle(b, lan, at)
	}
	expect(t, x.rec, "")
	if st := x.r.Stats(); st.Refused != count || st.Malformed != 0 || st.Sessions != 0 {
		t.Errorf("stats %+v, want %d refused, none malformed, no session", st, count)
	}
	if got := x.said("keyrelay build from before one-way packets were signed"); got != 2 {
		t.Errorf("said %d times in 70 s, want twice (once a minute): %q", got, x.logs)
	}
}

// TestRemovedMachinesOneWayStops (PROTOCOL.md §8.1): a machine removed
// from the peers file while it holds a key one-way has its key released
// within RecheckInterval, and types nothing after.
func TestRemovedMachinesOneWayStops(t *testing.T) {
	tx := mustIdentity(t)
	x := newOneWayRx(t, tx)
	x.r.Handle(sealedBy(t, tx, psk, 7, 1, 10, t0, dn(kA, 1)), lan, t0)
	expect(t, x.rec, "KeyA down")
	delete(x.paired, tx.Public())
	x.changed = true
	next := x.r.Next()
	if next.IsZero() || next.After(t0.Add(RecheckInterval)) {
		t.Fatalf("Next %v: the removal is not looked at within %v", next, RecheckInterval)
	}
	x.r.Expire(next)
	expect(t, x.rec, "KeyA up(revoked)")
	at := next.Add(100 * time.Millisecond)
	x.r.Handle(sealedBy(t, tx, psk, 7, 2, 110, at, dn(kB, 2), dn(kA, 1)), lan, at)
	expect(t, x.rec, "")
	if st := x.r.Stats(); st.UnpairedOneWay != 1 || st.Revoked != 1 {
		t.Errorf("stats %+v, want 1 revoked and the packet after refused", st)
	}
}
