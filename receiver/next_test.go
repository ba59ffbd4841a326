package receiver

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/netsim"
)

// TestNextIsTheNextDeadline: Next names when Expire is next due (a live
// session's timeout, DESIGN.md invariant 5; a held-back ack's turn,
// PROTOCOL.md §9), and nothing once no session is live, so an idle
// receiver is not woken.
func TestNextIsTheNextDeadline(t *testing.T) {
	conn := &ackConn{}
	r, err := New(Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if next := r.Next(); !next.IsZero() {
		t.Errorf("a receiver that heard nothing: Next = %v, want nothing due", next)
	}
	r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0)
	if next := r.Next(); !next.Equal(t0.Add(time.Second)) {
		t.Errorf("one live session: Next = %v, want its timeout", next.Sub(t0))
	}
	// News that types nothing (a burst's re-send, PROTOCOL.md §9 rule 4)
	// within MinAckInterval of the last ack: its ack is held back.
	at := t0.Add(MinAckInterval / 2)
	r.Handle(packet(t, 1, 2, 12, dn(kA, 1)), addr1, at)
	if next := r.Next(); !next.Equal(t0.Add(MinAckInterval)) || len(conn.sent) != 1 {
		t.Errorf("a held-back ack: Next = %v (%d acks sent), want MinAckInterval after the first ack", next.Sub(t0), len(conn.sent))
	}
	r.Expire(t0.Add(MinAckInterval))
	if next := r.Next(); !next.Equal(at.Add(time.Second)) || len(conn.sent) != 2 {
		t.Errorf("after the ack: Next = %v (%d acks sent), want the timeout after the last packet", next.Sub(t0), len(conn.sent))
	}
	r.Expire(at.Add(time.Second))
	if next := r.Next(); !next.IsZero() {
		t.Errorf("the session ended: Next = %v, want nothing due", next.Sub(t0))
	}
}

// TestRunReleasesWhenDue (DESIGN.md invariant 5): Run arms its timer for
// Next, so a silent session's keys are released when its timeout is due,
// not at the next tick of a periodic check.
func TestRunReleasesWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(netsim.Config{})
		rc, sc := listenPair(t, nw)
		rec := &fake.Recorder{} // read here while Run injects
		r, err := New(Config{Insecure: true, Conn: rc, Injector: rec, Timeout: time.Second, NoAcks: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		time.Sleep(13 * time.Millisecond) // off any 50 ms grid
		sc.WriteTo(packet(t, 1, 1, 10, dn(kA, 1)), rc.LocalAddr())
		synctest.Wait()
		if got := rec.Take().String(); got != "KeyA down" {
			t.Fatalf("injected %q", got)
		}
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if got := rec.Take().String(); got != "" {
			t.Errorf("before the timeout: injected %q", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := rec.Take().String(); got != "KeyA up(timeout)" {
			t.Errorf("at the timeout: injected %q, want KeyA released", got)
		}
		cancel()
		<-done
	})
}

// TestAckIntervalHoldsBackNews (PROTOCOL.md §9): news that types nothing
// (a burst's re-send of the queue) within the ack interval of the
// session's last ack is acked when the interval has passed, MinAckInterval unless Config.AckInterval says otherwise; no ack
// goes before, one goes then. A negative interval is refused.
func TestAckIntervalHoldsBackNews(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration // Config.AckInterval
		want     time.Duration // the held-back ack's turn after the first ack
	}{
		{"default", 0, MinAckInterval},
		{"5ms", 5 * time.Millisecond, 5 * time.Millisecond},
		{"300µs", 300 * time.Microsecond, 300 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &ackConn{}
			r, err := New(Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}, Timeout: time.Second, AckInterval: tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			r.Handle(packet(t, 1, 1, 10, dn(kA, 1)), addr1, t0)
			r.Handle(packet(t, 1, 2, 12, dn(kA, 1)), addr1, t0.Add(tc.want/2))
			if next := r.Next(); !next.Equal(t0.Add(tc.want)) || len(conn.sent) != 1 {
				t.Fatalf("news %v after the first ack: Next = %v with %d acks sent, want %v with 1", tc.want/2, next.Sub(t0), len(conn.sent), tc.want)
			}
			r.Expire(t0.Add(tc.want - 1))
			if len(conn.sent) != 1 {
				t.Errorf("Expire %v after the first ack sent the held-back ack, before its turn (%v)", tc.want-1, tc.want)
			}
			r.Expire(t0.Add(tc.want))
			if len(conn.sent) != 2 {
				t.Errorf("Expire at the held-back ack's turn (%v): %d acks sent, want 2", tc.want, len(conn.sent))
			}
		})
	}
	if _, err := New(Config{Insecure: true, Conn: &ackConn{}, Injector: &fake.Recorder{}, AckInterval: -time.Millisecond}); err == nil {
		t.Error("a negative ack interval was accepted")
	}
}
