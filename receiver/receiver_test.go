package receiver

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/wire"
)

var (
	addr1 = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1001}
	addr2 = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1002}
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	kA = keys.Key(0x04)
	kB = keys.Key(0x05)
)

// testID is the receivers' identity in the tests that need one.
var testID = func() *identity.Identity {
	id, err := identity.Generate()
	if err != nil {
		panic(err)
	}
	return id
}()

// packet encodes a plaintext queue packet (--insecure); events are given newest first and padded
// with None events to N=4.
func packet(t *testing.T, session, counter, clock uint64, events ...eventqueue.Event) []byte {
	t.Helper()
	for len(events) < 4 {
		events = append(events, eventqueue.Event{})
	}
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: session, Counter: counter}, Clock: clock, Events: events}
	b, err := q.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dn(c keys.Key, s uint64) eventqueue.Event {
	return eventqueue.Event{Key: c, Kind: eventqueue.Down, Stamp: s}
}
func up(c keys.Key, s uint64) eventqueue.Event {
	return eventqueue.Event{Key: c, Kind: eventqueue.Up, Stamp: s}
}

func newReceiver(t *testing.T) (*Receiver, *fake.Recorder) {
	t.Helper()
	rec := &fake.Recorder{}
	r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: rec, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

// nopConn satisfies net.PacketConn for tests that call Handle directly;
// what the receiver writes (acks) is dropped.
type nopConn struct{ net.PacketConn }

func (nopConn) WriteTo(b []byte, _ net.Addr) (int, error) { return len(b), nil }

// ackConn keeps what the receiver writes.
type ackConn struct {
	nopConn
	sent [][]byte
}

func (c *ackConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.sent = append(c.sent, append([]byte(nil), b...))
	return len(b), nil
}

// expect checks what was injected since the last expect, rendered as
// "KeyA down, KeyA up(timeout)".
func expect(t *testing.T, rec *fake.Recorder, want string) {
	t.Helper()
	if got := rec.Take().String(); got != want {
		t.Errorf("injected %q, want %q", got, want)
	}
}

// TestStalePacketsAreDropped: a packet whose counter is not newer than the
// last applied one from its session changes nothing (DESIGN.md invariant 4).
// Applied, the older queue would release B, which the sender still holds.
func TestStalePacketsAreDropped(t *testing.T) {
	older := []eventqueue.Event{dn(kA, 1)}
	newer := []eventqueue.Event{dn(kB, 2), dn(kA, 1)}
	// The failure the counter check prevents: diffing the older queue
	// against the newer one releases B.
	if ds := eventqueue.Diff(nil, newer, older, true); len(ds) != 1 || ds[0].Key != kB || ds[0].Kind != eventqueue.Up {
		t.Fatalf("expected the reordered queue to release B, got %+v", ds)
	}

	r, rec := newReceiver(t)
	r.Handle(packet(t, 7, 2, 10, newer...), addr1, t0)
	expect(t, rec, "KeyA down, KeyB down")
	r.Handle(packet(t, 7, 1, 5, older...), addr1, t0)  // reordered
	r.Handle(packet(t, 7, 2, 10, newer...), addr1, t0) // duplicated
	expect(t, rec, "")
	// The reordered packet is stale; the duplicate a replay.
	if st := r.Stats(); st.Stale != 1 || st.Replayed != 1 || st.Accepted != 1 {
		t.Errorf("stats %+v, want 1 stale, 1 replayed, 1 accepted", st)
	}
	if got := r.Held(); len(got) != 2 {
		t.Errorf("held %v, want A and B", got)
	}
}

// TestNewSessionFromSameAddressEndsTheOld: a sender that restarts (new
// session id, same address) first gets its old keys released, and late
// packets of the old session press nothing again.
func TestNewSessionFromSameAddressEndsTheOld(t *testing.T) {
	r, rec := newReceiver(t)
	r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0)
	expect(t, rec, "KeyA down")
	r.Handle(packet(t, 2, 1, 10, dn(kB, 1)), addr1, t0)
	expect(t, rec, "KeyA up(session-end), KeyB down")
	r.Handle(packet(t, 1, 2, 20, dn(kA, 1)), addr1, t0)
	expect(t, rec, "")
}

// TestKeyHeldWhileAnySessionHoldsIt: two senders holding the same key; the
// OS sees one key-down, and the key-up only when both have released it.
func TestKeyHeldWhileAnySessionHoldsIt(t *testing.T) {
	r, rec := newReceiver(t)
	r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 2, 1, 10, dn(kA, 1)), addr2, t0)
	expect(t, rec, "KeyA down")
	r.Handle(packet(t, 1, 2, 20, up(kA, 2), dn(kA, 1)), addr1, t0)
	expect(t, rec, "")
	r.Handle(packet(t, 2, 2, 20, up(kA, 2), dn(kA, 1)), addr2, t0)
	expect(t, rec, "KeyA up")
}

// TestSilenceReleases: a session silent for the timeout has its keys
// released; when it comes back, keys it still holds are pressed again and
// only newer events are typed (DESIGN.md invariant 5).
func TestSilenceReleases(t *testing.T) {
	r, rec := newReceiver(t)
	r.Handle(packet(t, 1, 1, 10, up(kB, 3), dn(kB, 2), dn(kA, 1)), addr1, t0)
	expect(t, rec, "KeyA down, KeyB down, KeyB up")
	r.Expire(t0.Add(999 * time.Millisecond))
	expect(t, rec, "")
	r.Expire(t0.Add(time.Second))
	expect(t, rec, "KeyA up(timeout)")
	r.Expire(t0.Add(2 * time.Second))
	expect(t, rec, "")
	r.Handle(packet(t, 1, 9, 3000, dn(kB, 5), up(kB, 3), dn(kB, 2), dn(kA, 1)), addr1, t0.Add(3*time.Second))
	expect(t, rec, "KeyA down(resync), KeyB down")
	if st := r.Stats(); st.Timeouts != 1 || st.Ended != 0 {
		t.Errorf("timeouts = %d, ended = %d, want 1 and 0", st.Timeouts, st.Ended)
	}
}

// TestSilenceAfterReleaseIsAnEnd (a clean end is logged as ended, not timed
// out): a session whose keys are all up when it falls silent ended as a
// sender that exits does; one holding keys timed out, and the log says how
// many keys it released.
func TestSilenceAfterReleaseIsAnEnd(t *testing.T) {
	var log []string
	rec := &fake.Recorder{}
	r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: rec, Timeout: time.Second,
		Logf: func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(packet(t, 1, 1, 10, up(kA, 2), dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 2, 1, 10, dn(kB, 1)), addr2, t0)
	expect(t, rec, "KeyA down, KeyA up, KeyB down")
	r.Expire(t0.Add(time.Second))
	expect(t, rec, "KeyB up(timeout)")
	if st := r.Stats(); st.Ended != 1 || st.Timeouts != 1 {
		t.Errorf("ended = %d, timeouts = %d, want 1 and 1", st.Ended, st.Timeouts)
	}
	got := strings.Join(log, "\n")
	for _, want := range []string{
		"session 0000000000000001 from " + addr1.String() + " ended (no key held, silent for 1s)",
		"session 0000000000000002 from " + addr2.String() + " timed out after 1s of silence: 1 held keys released",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0000000000000001 from "+addr1.String()+" timed out") {
		t.Errorf("a clean end logged as a timeout:\n%s", got)
	}
}

// TestJoiningARunningSessionTypesNothingOld: a receiver that starts while a
// sender has been running for longer than JoinAfter presses the keys held
// now and does not type the old taps in the queue again.
func TestJoiningARunningSessionTypesNothingOld(t *testing.T) {
	r, rec := newReceiver(t)
	r.Handle(packet(t, 1, 500, 60_000, dn(kB, 59_000), up(kA, 58_000), dn(kA, 57_000)), addr1, t0)
	expect(t, rec, "KeyB down(resync)")
	// A fresh sender (clock below JoinAfter) is typed in full.
	r.Handle(packet(t, 2, 1, 5, up(kA, 2), dn(kA, 1)), addr2, t0)
	expect(t, rec, "KeyA down, KeyA up")
}

func TestMalformedPacketsAreCountedNotFatal(t *testing.T) {
	r, rec := newReceiver(t)
	good := packet(t, 1, 1, 10, dn(kA, 1))
	for _, b := range [][]byte{nil, {0}, []byte("hello, world"), good[:len(good)-1], append(append([]byte(nil), good...), 0)} {
		r.Handle(b, addr1, t0)
	}
	expect(t, rec, "")
	if st := r.Stats(); st.Malformed != 5 {
		t.Errorf("malformed = %d, want 5", st.Malformed)
	}
	r.Handle(good, addr1, t0)
	expect(t, rec, "KeyA down")
}

func TestReleaseAllOnShutdown(t *testing.T) {
	r, rec := newReceiver(t)
	r.Handle(packet(t, 1, 1, 10, dn(kB, 2), dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 2, 1, 10, dn(kA, 1)), addr2, t0)
	expect(t, rec, "KeyA down, KeyB down")
	r.ReleaseAll(eventqueue.Shutdown)
	expect(t, rec, "KeyB up(shutdown), KeyA up(shutdown)")
	if len(r.Held()) != 0 {
		t.Errorf("held after shutdown: %v", r.Held())
	}
}

// TestCharactersAnInjectorCannotType: characters travel like keys
// (PROTOCOL.md §3.1: a character-down stays until its character-up, and a
// lost character-up is still released); an injector that cannot type them is
// not a failure: each character-down is counted as not typable, and keys go
// on.
func TestCharactersAnInjectorCannotType(t *testing.T) {
	inj := &fake.CannotType{}
	r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: inj, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := keys.Char('é')
	r.Handle(packet(t, 1, 1, 10, dn(kA, 3), dn(e, 2)), addr1, t0)
	// The character-up was lost: the next queue no longer mentions 'é'.
	r.Handle(packet(t, 1, 3, 20, up(kA, 9), dn(kA, 3)), addr1, t0)
	expect(t, &inj.Recorder, "'é' down, KeyA down, 'é' up(missing), KeyA up")
	if st := r.Stats(); st.NotTyped != 1 || st.InjectErr != 0 || st.Injected != 4 {
		t.Errorf("stats %+v, want 1 not typable, 0 failed, 4 injected", st)
	}
	if !strings.Contains(r.Stats().String(), "1 not typable here") {
		t.Errorf("summary %q does not say what was not typable", r.Stats())
	}
	if len(r.Held()) != 0 {
		t.Errorf("held %v, want nothing", r.Held())
	}
}

// lockRecorder records key events and the lock states it is asked to set,
// each as a key-down of key 0xFF00 | state among the key events, so that
// their order shows.
type lockRecorder struct{ fake.Recorder }

func (l *lockRecorder) SetLocks(locks keys.Locks, session uint64) error {
	return l.Inject(sink.Event{Key: keys.Key(0xFF00 | uint16(locks)), Down: true, Session: session})
}

// TestLocksFollowTheSender: the receiver matches the sender's Caps Lock and
// Num Lock when a session starts, when it comes back after a timeout (to
// the sender's state as the lock keys typed since left it), and when the
// sender's lock state or epoch changes (it resumed relaying), before the
// packet's keys; an unknown state changes nothing (PROTOCOL.md §3.2).
func TestLocksFollowTheSender(t *testing.T) {
	inj := &lockRecorder{}
	r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: inj, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sets := func() (n int, last keys.Locks, firstKey bool) {
		for i, e := range inj.Take() {
			if e.Key&0xFF00 == 0xFF00 {
				n++
				last = keys.Locks(e.Key & 0xFF)
				firstKey = i == 0
			}
		}
		return
	}
	pkt := func(counter, clock uint64, locks keys.Locks, events ...eventqueue.Event) []byte {
		for len(events) < 4 {
			events = append(events, eventqueue.Event{})
		}
		q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 1, Counter: counter}, Clock: clock, Locks: locks, Events: events}
		b, err := q.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	caps := keys.LocksKnown | keys.LockCaps
	r.Handle(pkt(1, 10, caps, dn(kA, 5)), addr1, t0)
	if n, last, first := sets(); n != 1 || last != caps || !first {
		t.Errorf("session start: %d sets (last %v, before the keys %v), want one, caps, first", n, last, first)
	}
	r.Handle(pkt(2, 20, caps, up(kA, 6), dn(kA, 5)), addr1, t0)
	if n, _, _ := sets(); n != 0 {
		t.Errorf("the same state again: %d sets, want none", n)
	}
	r.Handle(pkt(3, 30, caps|keys.LockEpoch, up(kA, 6), dn(kA, 5)), addr1, t0)
	if n, last, _ := sets(); n != 1 || last != caps|keys.LockEpoch {
		t.Errorf("relaying resumed (epoch flipped): %d sets, want one", n)
	}
	r.Expire(t0.Add(2 * time.Second)) // the session times out
	inj.Take()
	r.Handle(pkt(4, 3000, caps|keys.LockEpoch, up(kA, 6), dn(kA, 5)), addr1, t0.Add(3*time.Second))
	if n, _, _ := sets(); n != 1 {
		t.Errorf("session back after a timeout: %d sets, want one", n)
	}
	// A sender that cannot tell (a terminal, a script): nothing set.
	r.Handle(packet(t, 2, 1, 10, dn(kB, 5)), addr2, t0.Add(3*time.Second))
	if n, _, _ := sets(); n != 0 {
		t.Errorf("locks unknown: %d sets, want none", n)
	}

	// Caps Lock typed through the session turned the OS's off (the sender
	// sampled on when relaying started, and samples again only when it
	// resumes): after a timeout the session comes back to that, not to
	// the sample, or the next letters would come out in the wrong case.
	capsKey := keys.Key(keys.CapsLock)
	r.Handle(pkt(5, 3100, caps|keys.LockEpoch, up(capsKey, 8), dn(capsKey, 7), up(kA, 6), dn(kA, 5)), addr1, t0.Add(3*time.Second))
	if n, _, _ := sets(); n != 0 {
		t.Errorf("Caps Lock typed: %d sets, want none (the key does it)", n)
	}
	r.Expire(t0.Add(5 * time.Second))
	inj.Take()
	r.Handle(pkt(6, 5000, caps|keys.LockEpoch, up(capsKey, 8), dn(capsKey, 7), up(kA, 6), dn(kA, 5)), addr1, t0.Add(6*time.Second))
	if n, last, first := sets(); n != 1 || last != keys.LocksKnown|keys.LockEpoch || !first {
		t.Errorf("back after a timeout, Caps Lock typed since the sample: %d sets, last %v (first %v), want one, Caps Lock off", n, last, first)
	}
	// Relaying resumed: the sender's new sample is the state again.
	r.Handle(pkt(7, 5100, keys.LocksKnown|keys.LockCaps, up(capsKey, 8), dn(capsKey, 7), up(kA, 6), dn(kA, 5)), addr1, t0.Add(6*time.Second))
	if n, last, _ := sets(); n != 1 || last != caps {
		t.Errorf("relaying resumed with Caps Lock on: %d sets, last %v, want one, %v", n, last, caps)
	}
}

// xGone is the error of an X injector whose server stopped.
var xGone = fmt.Errorf("the X server of DISPLAY=:99 went away; %w", sink.ErrGone)

// TestInjectorGoneStopsRecv (sink.ErrGone: lost backends are fatal and
// named): once the injector's backend is gone, the receiver acks nothing
// more (an ack would say "typed") and Gone reports why.
func TestInjectorGoneStopsRecv(t *testing.T) {
	inj := &fake.Watched{Err: xGone}
	conn := &ackConn{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: inj, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0)
	if len(conn.sent) != 1 || r.Gone() != nil {
		t.Fatalf("before: %d acks, Gone %v", len(conn.sent), r.Gone())
	}
	inj.Vanish()
	r.Handle(packet(t, 1, 2, 20, dn(kB, 2), dn(kA, 1)), addr1, t0.Add(time.Second))
	if err := r.Gone(); !errors.Is(err, sink.ErrGone) || !strings.Contains(err.Error(), "DISPLAY=:99") {
		t.Errorf("Gone = %v, want the injector's ErrGone", err)
	}
	if len(conn.sent) != 1 {
		t.Errorf("%d acks after the injector went, want none", len(conn.sent)-1)
	}
}

// TestRunStopsWhenInjectorGone: Run notices a backend that goes away
// between keys (Watched) and returns its error, which makes recv
// exit non-zero for a service manager to restart it.
func TestRunStopsWhenInjectorGone(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inj := &fake.Watched{Err: xGone}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: inj, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := r.Run(t.Context()); done <- err }()
	inj.Vanish()
	if err := <-done; !errors.Is(err, sink.ErrGone) {
		t.Errorf("Run = %v, want ErrGone", err)
	}
}

// failing is an injector whose every key fails, saying which.
type failing struct{}

func (failing) Inject(e sink.Event) error { return fmt.Errorf("cannot press %v", e.Key) }

// TestInjectErrorsNameNoKey: a key that failed to type is counted in the
// log, not named (nor its error, which may name it), unless Debug (recv
// --debug).
func TestInjectErrorsNameNoKey(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var logs []string
		r, err := New(Config{Insecure: true, Conn: nopConn{}, Injector: failing{}, Timeout: time.Second, Debug: debug,
			Logf: func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) }})
		if err != nil {
			t.Fatal(err)
		}
		r.Handle(packet(t, 7, 1, 5, dn(kA, 1)), addr1, t0)
		text := strings.Join(logs, "\n")
		switch {
		case r.Stats().InjectErr != 1:
			t.Fatalf("debug %v: %d inject errors, want 1", debug, r.Stats().InjectErr)
		case !debug && (strings.Contains(text, "KeyA") || !strings.Contains(text, "unable to inject a key event (1 failed so far")):
			t.Errorf("without debug the log names the key or no count: %q", text)
		case debug && !strings.Contains(text, "unable to inject KeyA: cannot press KeyA"):
			t.Errorf("with debug the log does not name the key: %q", text)
		}
	}
}

// TestStatusIsASnapshot: what Status returned stays as it was while the
// receiver goes on: publish rewrites its own slices in place (no
// allocation per key event), so Status must copy every one of them, the
// held keys included.
func TestStatusIsASnapshot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		then  []byte // the packet after the snapshot
		after []keys.Key
	}{
		{"a key released", packet(t, 1, 2, 20, up(kA, 3), dn(kB, 2), dn(kA, 1)), []keys.Key{kB}},
		{"another key pressed", packet(t, 1, 2, 20, dn(kB, 3), dn(kB, 2), dn(kA, 1)), []keys.Key{kA, kB}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newReceiver(t)
			r.Handle(packet(t, 1, 1, 10, dn(kB, 2), dn(kA, 1)), addr1, t0)
			before := r.Status()
			r.Handle(tc.then, addr1, t0.Add(time.Millisecond))
			if len(before) != 1 || !slices.Equal(before[0].Held, []keys.Key{kA, kB}) || before[0].Packets != 1 {
				t.Errorf("the first snapshot became %+v, want 1 packet holding [KeyA KeyB]", before)
			}
			if now := r.Status(); len(now) != 1 || !slices.Equal(now[0].Held, tc.after) || now[0].Packets != 2 {
				t.Errorf("the second snapshot is %+v, want 2 packets holding %v", now, tc.after)
			}
		})
	}
}
