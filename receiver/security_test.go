package receiver

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/wire"
)

var psk = func() []byte {
	k := make([]byte, wire.KeyLen)
	for i := range k {
		k[i] = byte(7 * i)
	}
	return k
}()

// oneWayTx is the paired machine that sends the one-way packets of these
// tests (PROTOCOL.md §8.6); pairedOneWay is a peers file listing it.
var oneWayTx = func() *identity.Identity {
	id, err := identity.Generate()
	if err != nil {
		panic(err)
	}
	return id
}()

func pairedOneWay(k [identity.KeyLen]byte) (string, bool) { return "tx", k == oneWayTx.Public() }

// sealed encodes a one-way queue packet signed by oneWayTx, sent at wall
// time at, 10 ms of sender clock per counter; events newest first, padded
// to N=4.
func sealed(t *testing.T, key []byte, session, counter uint64, at time.Time, events ...eventqueue.Event) []byte {
	t.Helper()
	return sealedAt(t, key, session, counter, counter*10, at, events...)
}

// sealedAt is sealed with the sender clock (ms) given.
func sealedAt(t *testing.T, key []byte, session, counter, clock uint64, at time.Time, events ...eventqueue.Event) []byte {
	t.Helper()
	return sealedBy(t, oneWayTx, key, session, counter, clock, at, events...)
}

// sealedBy is sealedAt signed by the machine signer.
func sealedBy(t *testing.T, signer wire.Signer, key []byte, session, counter, clock uint64, at time.Time, events ...eventqueue.Event) []byte {
	t.Helper()
	for len(events) < 4 {
		events = append(events, eventqueue.Event{})
	}
	a, err := wire.OneWayAEAD(key, session)
	if err != nil {
		t.Fatal(err)
	}
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: session, Counter: counter},
		Clock: clock, Wall: uint64(at.UnixMilli()), Events: events}
	b, err := q.AppendSealed(nil, a, signer)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newSecureReceiver(t *testing.T, allow ...netip.Prefix) (*Receiver, *fake.Recorder) {
	t.Helper()
	rec := &fake.Recorder{}
	r, err := New(Config{OneWay: true, Identity: testID, Peer: pairedOneWay, Conn: nopConn{}, Injector: rec, PSK: psk, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

// TestOnlySealedPacketsWithTheKey (PROTOCOL.md §8): a keyed receiver takes
// packets sealed with its key and nothing else.
func TestOnlySealedPacketsWithTheKey(t *testing.T) {
	r, rec := newSecureReceiver(t)
	wrong := append([]byte(nil), psk...)
	wrong[5] ^= 0x40
	r.Handle(sealed(t, wrong, 1, 1, t0, dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0) // plaintext
	expect(t, rec, "")
	if st := r.Stats(); st.Forged != 2 || st.Sessions != 0 {
		t.Errorf("stats %+v, want 2 forged, no session", st)
	}
	r.Handle(sealed(t, psk, 1, 1, t0, dn(kA, 1)), addr1, t0)
	expect(t, rec, "KeyA down")

	// A receiver without a key refuses sealed packets rather than guess.
	plain, prec := newReceiver(t)
	plain.Handle(sealed(t, psk, 1, 1, t0, dn(kA, 1)), addr1, t0)
	expect(t, prec, "")
}

// TestForgedSessionCannotEndALiveOne: a packet with a new session id from a
// live session's address ends it only if it authenticates.
func TestForgedSessionCannotEndALiveOne(t *testing.T) {
	r, rec := newSecureReceiver(t)
	r.Handle(sealed(t, psk, 1, 1, t0, dn(kA, 1)), addr1, t0)
	expect(t, rec, "KeyA down")
	wrong := append([]byte(nil), psk...)
	wrong[0] ^= 1
	r.Handle(sealed(t, wrong, 2, 1, t0, dn(kB, 1)), addr1, t0)
	expect(t, rec, "")
	if got := r.Held(); len(got) != 1 || got[0] != kA {
		t.Errorf("held %v, want KeyA still held", got)
	}
}

// TestEveryReplayedPacketIsRejected: each packet of a live session sent
// again, in any order, injects nothing.
func TestEveryReplayedPacketIsRejected(t *testing.T) {
	r, rec := newSecureReceiver(t)
	var recorded [][]byte
	queues := [][]eventqueue.Event{
		{dn(kA, 1)},
		{up(kA, 2), dn(kA, 1)},
		{dn(kB, 3), up(kA, 2), dn(kA, 1)},
		{up(kB, 4), dn(kB, 3), up(kA, 2), dn(kA, 1)},
	}
	for i, q := range queues {
		b := sealed(t, psk, 9, uint64(i+1), t0, q...)
		recorded = append(recorded, b)
		r.Handle(b, addr1, t0)
	}
	expect(t, rec, "KeyA down, KeyA up, KeyB down, KeyB up")
	for _, i := range []int{0, 3, 1, 2, 2} {
		r.Handle(recorded[i], addr1, t0.Add(time.Second))
	}
	expect(t, rec, "")
	if st := r.Stats(); st.Replayed != 5 {
		t.Errorf("%d replays counted, want 5 (%+v)", st.Replayed, st)
	}
}

// TestRecordedSessionReplayedAfterRestart: a whole recorded session
// replayed to a restarted receiver (which has forgotten it) injects nothing,
// because its authenticated wall clock is older than the allowed skew
// (PROTOCOL.md §8); the same packets within the skew would be accepted, which
// is the stated assumption.
func TestRecordedSessionReplayedAfterRestart(t *testing.T) {
	recordedAt := t0
	var session [][]byte
	for i, q := range [][]eventqueue.Event{{dn(kA, 1)}, {up(kA, 2), dn(kA, 1)}} {
		session = append(session, sealed(t, psk, 5, uint64(i+1), recordedAt, q...))
	}
	restarted, rec := newSecureReceiver(t)
	for _, b := range session {
		restarted.Handle(b, addr1, recordedAt.Add(DefaultMaxSkew+time.Second))
	}
	expect(t, rec, "")
	if st := restarted.Stats(); st.Skewed != 2 || st.Sessions != 0 {
		t.Errorf("stats %+v, want 2 skewed, no session", st)
	}
	// Within the skew the packets are genuine-looking: accepted.
	fresh, rec2 := newSecureReceiver(t)
	for _, b := range session {
		fresh.Handle(b, addr1, recordedAt.Add(DefaultMaxSkew-time.Second))
	}
	expect(t, rec2, "KeyA down, KeyA up")
}

// TestAllowList: datagrams from outside --allow are dropped before any
// crypto (counted apart from forgeries).
func TestAllowList(t *testing.T) {
	r, rec := newSecureReceiver(t, netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	b := sealed(t, psk, 1, 1, t0, dn(kA, 1))
	r.Handle(b, &net.UDPAddr{IP: net.ParseIP("192.168.1.9"), Port: 5}, t0)
	expect(t, rec, "")
	r.Handle(b, &net.UDPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, t0)
	expect(t, rec, "KeyA down")
	if st := r.Stats(); st.NotAllowed != 1 || st.Forged != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestAcks (PROTOCOL.md §9): each new packet with news is acked with the
// newest counter, the ack bits of the ones before, the newest applied
// stamp, at most once per MinAckInterval per session unless it typed
// something, the rest flushed by Expire. (In plaintext here; handshaken acks: TestAckNonces.) A packet of
// the wrong security mode gets no ack.
func TestAcks(t *testing.T) {
	conn := &ackConn{}
	rec := &fake.Recorder{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: rec})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(packet(t, 3, 1, 0, dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 3, 3, 10, up(kA, 4), dn(kA, 1)), addr1, t0.Add(10*time.Millisecond))
	// A burst's re-send of the same queue: news (PROTOCOL.md §9 rule 4)
	// that types nothing, held back.
	r.Handle(packet(t, 3, 4, 11, up(kA, 4), dn(kA, 1)), addr1, t0.Add(10*time.Millisecond+MinAckInterval/2))
	if len(conn.sent) != 2 {
		t.Fatalf("%d acks sent, want 2 (the third packet, a re-send, came within %v)", len(conn.sent), MinAckInterval)
	}
	r.Expire(t0.Add(20 * time.Millisecond))
	if len(conn.sent) != 3 {
		t.Fatalf("%d acks after Expire, want the pending one flushed", len(conn.sent))
	}
	var a wire.Ack
	if err := wire.ParseAck(conn.sent[2], &a); err != nil {
		t.Fatal(err)
	}
	// Delay: from the newest packet's arrival to the flush at 20 ms.
	if a.Header.Counter != 3 || a.Header.Flags != wire.FlagOneWay || a.Newest != 4 || !a.Received(3) || a.Received(2) || !a.Received(1) || a.Stamp != 4 || a.Delay != uint64((10*time.Millisecond-MinAckInterval/2)/time.Microsecond) {
		t.Errorf("ack %+v", a)
	}
	// A one-way sealed packet to a plaintext receiver gets no ack.
	r.Handle(sealed(t, psk, 3, 9, t0, dn(kB, 9)), addr1, t0.Add(time.Second))
	if len(conn.sent) != 3 {
		t.Error("a packet of the wrong security mode was acked")
	}
}

// TestOneWayIsNeverAcked (PROTOCOL.md §9): a one-way session's packets are
// typed but never acked: an ack keyed by the key file and the session id
// alone could repeat a nonce across receivers.
func TestOneWayIsNeverAcked(t *testing.T) {
	conn := &ackConn{}
	rec := &fake.Recorder{}
	r, err := New(Config{OneWay: true, Identity: testID, Peer: pairedOneWay, Conn: conn, Injector: rec, PSK: psk})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(sealed(t, psk, 3, 1, t0, dn(kA, 1)), addr1, t0)
	r.Handle(sealed(t, psk, 3, 2, t0, up(kA, 4), dn(kA, 1)), addr1, t0.Add(10*time.Millisecond))
	r.Expire(t0.Add(20 * time.Millisecond))
	if len(rec.Events()) != 2 || len(conn.sent) != 0 {
		t.Errorf("%d events typed, %d acks: want 2 typed, no ack", len(rec.Events()), len(conn.sent))
	}
}

// TestPlainAcksCountOn (PROTOCOL.md §9): a session's ack counter goes on
// from where it was when the session comes back after a timeout, and its
// replay window still refuses what it accepted before.
func TestPlainAcksCountOn(t *testing.T) {
	conn := &ackConn{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := t0
	r.Handle(packet(t, 5, 1, 0, dn(kA, 1)), addr1, at)
	r.Handle(packet(t, 6, 1, 0, dn(kB, 1)), addr2, at)
	at = at.Add(10 * time.Millisecond)
	r.Handle(packet(t, 5, 2, 10, up(kA, 2), dn(kA, 1)), addr1, at)
	r.Expire(at.Add(2 * time.Second)) // both time out
	at = at.Add(3 * time.Second)
	r.Handle(packet(t, 5, 2, 10, up(kA, 2), dn(kA, 1)), addr1, at) // replayed
	r.Handle(packet(t, 5, 3, 3010, up(kA, 2), dn(kA, 1)), addr1, at)
	if st := r.Stats(); st.Replayed != 1 || st.Sessions != 2 {
		t.Errorf("stats %+v, want the replay refused and no new session", st)
	}
	want := []struct{ session, counter, newest uint64 }{{5, 1, 1}, {6, 1, 1}, {5, 2, 2}, {5, 3, 3}}
	if len(conn.sent) != len(want) {
		t.Fatalf("%d acks, want %d", len(conn.sent), len(want))
	}
	for i, w := range want {
		var a wire.Ack
		if err := wire.ParseAck(conn.sent[i], &a); err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if a.Header.Session != w.session || a.Header.Counter != w.counter || a.Newest != w.newest {
			t.Errorf("ack %d: session %d counter %d newest %d, want %+v", i, a.Header.Session, a.Header.Counter, a.Newest, w)
		}
	}
}

// TestOneWayRefusedByDefault (PROTOCOL.md §8.6): recv without --one-way
// (Config.OneWay false, its default) types nothing of a one-way sender,
// with or without a key file of its own, counts each packet as refused, and says so with the fix at
// most once a minute (a one-way sender resends every 100 ms).
func TestOneWayRefusedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
		pkt  func(counter uint64, at time.Time) []byte
	}{
		{"sealed", psk, func(c uint64, at time.Time) []byte { return sealed(t, psk, 9, c, at, dn(kA, 1)) }},
		{"no key file", nil, func(c uint64, at time.Time) []byte { return sealed(t, psk, 9, c, at, dn(kA, 1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fake.Recorder{}
			var logs []string
			r, err := New(Config{Identity: testID, Conn: nopConn{}, Injector: rec, PSK: tc.key,
				Logf: func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) }})
			if err != nil {
				t.Fatal(err)
			}
			const n = 1000 // 100 s at 100 ms
			for i := range n {
				at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				r.Handle(tc.pkt(uint64(i+1), at), addr1, at)
			}
			if got := rec.Events(); len(got) != 0 {
				t.Errorf("typed %v, want nothing", got)
			}
			if st := r.Stats(); st.Refused != n || st.Sessions != 0 || st.Accepted != 0 {
				t.Errorf("%d refused, %d sessions, %d applied; want %d refused, none started", st.Refused, st.Sessions, st.Accepted, n)
			}
			var said []string
			for _, l := range logs {
				if strings.Contains(l, "one-way") {
					said = append(said, l)
				}
			}
			if len(said) != 2 {
				t.Fatalf("said %d times in 100 s, want twice (once a minute): %q", len(said), said)
			}
			if !strings.Contains(said[0], "recv --one-way") || !strings.Contains(said[0], "--max-skew") || !strings.Contains(said[1], "600 since last said") {
				t.Errorf("log lines %q, want the fix (recv --one-way), why it is off (--max-skew), and the count since", said)
			}
		})
	}
}
