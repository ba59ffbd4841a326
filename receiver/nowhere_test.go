package receiver

import (
	"errors"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/sink"
	"github.com/keyrelay/keyrelay/wire"
)

// unfocused is an injector whose display has no window with the keyboard
// focus while focused is false (Aimed), as inject.X11 tells it.
type unfocused struct {
	fake.Recorder
	focused bool
}

func (u *unfocused) LastReached() sink.Unreached {
	if u.focused {
		return sink.Reached
	}
	return sink.NoFocus
}

// TestAcksCountKeysTypedIntoNothing (PROTOCOL.md §9: an ack's count of key
// events typed into no application, and why): the key events a session's
// packets type while the injector says they reach no application are
// counted for that session, and every ack after them carries the count and
// the reason; a session that typed into a focused window sends acks
// without them (the fields left out, as an older receiver's acks are).
// The reasons are the wire's.
func TestAcksCountKeysTypedIntoNothing(t *testing.T) {
	if wire.Why(sink.NoFocus) != wire.WhyNoFocus {
		t.Fatalf("sink.NoFocus is %d, wire.WhyNoFocus %d: the ack's reason is the injector's", sink.NoFocus, wire.WhyNoFocus)
	}
	conn := &ackConn{}
	inj := &unfocused{focused: true}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: inj, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	last := func() wire.Ack {
		t.Helper()
		var a wire.Ack
		if err := wire.ParseAck(conn.sent[len(conn.sent)-1], &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// A tap into a focused window, then two taps into nothing, from
	// session 1; session 2 types its tap into a focused window.
	r.Handle(packet(t, 1, 1, 0, dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 1, 2, 10, up(kA, 2), dn(kA, 1)), addr1, t0.Add(10*time.Millisecond))
	if a := last(); a.Nowhere != 0 || a.Why != 0 {
		t.Fatalf("after a tap into a focused window the ack says %d typed into nothing (why %d), want 0", a.Nowhere, a.Why)
	}
	inj.focused = false
	q := []eventqueue.Event{up(kA, 2), dn(kA, 1)}
	q = append([]eventqueue.Event{dn(kB, 3)}, q...)
	r.Handle(packet(t, 1, 3, 20, q...), addr1, t0.Add(20*time.Millisecond))
	q = append([]eventqueue.Event{up(kB, 4)}, q...)
	r.Handle(packet(t, 1, 4, 30, q...), addr1, t0.Add(30*time.Millisecond))
	if a := last(); a.Nowhere != 2 || a.Why != wire.WhyNoFocus {
		t.Errorf("after a tap into nothing the ack says %d typed into nothing (why %d), want 2 (why %d)", a.Nowhere, a.Why, wire.WhyNoFocus)
	}
	// An idle ack a second later says it again: a lost ack loses nothing.
	r.Handle(packet(t, 1, 5, 1100, q...), addr1, t0.Add(1100*time.Millisecond))
	if a := last(); a.Nowhere != 2 {
		t.Errorf("the next ack says %d typed into nothing, want 2", a.Nowhere)
	}
	inj.focused = true
	r.Handle(packet(t, 2, 1, 0, dn(kA, 1)), addr2, t0.Add(1200*time.Millisecond))
	r.Handle(packet(t, 2, 2, 10, up(kA, 2), dn(kA, 1)), addr2, t0.Add(1210*time.Millisecond))
	if a := last(); a.Header.Session != 2 || a.Nowhere != 0 {
		t.Errorf("session %d's ack says %d typed into nothing, want session 2's, 0", a.Header.Session, a.Nowhere)
	}
	if n := r.Stats().Nowhere; n != 2 {
		t.Errorf("Stats.Nowhere %d, want 2", n)
	}
}

// hostless is an injector whose writes fail while no USB host takes them
// and that says so (Aimed), as inject.Hidg does.
type hostless struct {
	fake.Recorder
	host bool
}

func (h *hostless) Inject(e sink.Event) error {
	h.Recorder.Inject(e)
	if !h.host {
		return errors.New("the USB host has not configured the keyboard gadget")
	}
	return nil
}

func (h *hostless) LastReached() sink.Unreached {
	if h.host {
		return sink.Reached
	}
	return sink.NoUSBHost
}

// TestAcksCountFailedKeysThatReachedNothing (PROTOCOL.md §9, why 2): an
// Aimed injector is asked after a failed event too, so a tap whose reports
// no USB host took is counted in the acks with its reason, besides the
// injection failures recv counts itself. The reasons are the wire's.
func TestAcksCountFailedKeysThatReachedNothing(t *testing.T) {
	for _, c := range []struct {
		s sink.Unreached
		w wire.Why
	}{{sink.NoUSBHost, wire.WhyNoUSBHost}, {sink.NoForeground, wire.WhyNoForeground}} {
		if wire.Why(c.s) != c.w {
			t.Fatalf("sink reason %d is wire reason %d: the ack's reason is the injector's", c.s, c.w)
		}
	}
	conn := &ackConn{}
	inj := &hostless{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: inj, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(packet(t, 1, 1, 0, dn(kA, 1)), addr1, t0)
	r.Handle(packet(t, 1, 2, 10, up(kA, 2), dn(kA, 1)), addr1, t0.Add(10*time.Millisecond))
	var a wire.Ack
	if err := wire.ParseAck(conn.sent[len(conn.sent)-1], &a); err != nil {
		t.Fatal(err)
	}
	if a.Nowhere != 2 || a.Why != wire.WhyNoUSBHost {
		t.Errorf("after a tap no USB host took the ack says %d typed into nothing (why %d), want 2 (why %d)", a.Nowhere, a.Why, wire.WhyNoUSBHost)
	}
	if st := r.Stats(); st.InjectErr != 2 || st.Nowhere != 2 {
		t.Errorf("Stats.InjectErr %d, Nowhere %d, want 2 and 2", st.InjectErr, st.Nowhere)
	}
}
