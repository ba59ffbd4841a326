package fake_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

var (
	kA = keys.Key(keys.KeyA)
	kB = keys.Key(keys.KeyB)
)

// played is what a source emits, with the virtual time since start.
type played struct {
	at time.Duration
	ev fake.Event
}

func play(t *testing.T, ctx context.Context, src interface {
	Play(context.Context, func(keys.Key, bool) error) error
}) ([]played, error) {
	t.Helper()
	start := time.Now()
	var got []played
	err := src.Play(ctx, func(k keys.Key, down bool) error {
		got = append(got, played{at: time.Since(start), ev: fake.Event{Key: k, Down: down}})
		return nil
	})
	return got, err
}

// TestTraceWaitsAndRecords: each step Wait after the one before, AtEnd
// after the last, then Quiet; Emitted is each step's time.
func TestTraceWaitsAndRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var atEnd time.Duration
		tr := &fake.Trace{
			Steps: []fake.Step{{Wait: 10 * time.Millisecond, Key: kA, Down: true}, {Key: kB, Down: true}, {Wait: 5 * time.Millisecond, Key: kA}},
			Quiet: time.Second,
			AtEnd: func() { atEnd = time.Since(start) },
		}
		got, err := play(t, context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		want := []played{{at: 10 * time.Millisecond, ev: fake.Event{kA, true}}, {at: 10 * time.Millisecond, ev: fake.Event{kB, true}}, {at: 15 * time.Millisecond, ev: fake.Event{kA, false}}}
		if !slices.Equal(got, want) || atEnd != 15*time.Millisecond || time.Since(start) != 15*time.Millisecond+time.Second {
			t.Errorf("played %v, AtEnd at %v, returned at %v", got, atEnd, time.Since(start))
		}
		for i, at := range tr.Emitted() {
			if at.Sub(start) != got[i].at {
				t.Errorf("Emitted()[%d] = %v, want %v", i, at.Sub(start), got[i].at)
			}
		}
	})
}

// TestTraceStopsWithCtx: a cancelled ctx cuts a pause short.
func TestTraceStopsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got, err := play(t, ctx, &fake.Trace{Steps: []fake.Step{{Key: kA, Down: true}, {Wait: time.Hour, Key: kA}}})
		if !errors.Is(err, context.DeadlineExceeded) || len(got) != 1 {
			t.Errorf("played %v, err %v; want one event, then the deadline", got, err)
		}
	})
}

// TestTapsAsTrace: Taps plays the same events at the same times as its
// Trace, and the same pause after the last.
func TestTapsAsTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		taps := fake.Taps{N: 30, Gap: 150 * time.Millisecond, Hold: 50 * time.Millisecond}
		start := time.Now()
		a, err := play(t, context.Background(), taps)
		if err != nil {
			t.Fatal(err)
		}
		mid := time.Now()
		b, err := play(t, context.Background(), taps.Trace())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) || mid.Sub(start) != time.Since(mid) || mid.Sub(start) != 30*150*time.Millisecond {
			t.Errorf("Taps %v in %v\nTrace %v in %v", a, mid.Sub(start), b, time.Since(mid))
		}
		if a[0].ev != (fake.Event{kA, true}) || a[55].ev != (fake.Event{kB, false}) {
			t.Errorf("taps %v, want KeyA to KeyZ in turn (the 28th tap KeyB)", a)
		}
	})
}

// TestChanAndFunc: Chan emits what it is sent until closed; Func is its
// function.
func TestChanAndFunc(t *testing.T) {
	c := make(fake.Chan, 2)
	c <- fake.Event{kA, true}
	c <- fake.Event{kA, false}
	close(c)
	got, err := play(t, context.Background(), c)
	if err != nil || len(got) != 2 || got[1].ev != (fake.Event{kA, false}) {
		t.Errorf("Chan played %v, %v", got, err)
	}
	boom := errors.New("boom")
	got, err = play(t, context.Background(), fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
		emit(kB, true)
		return boom
	}))
	if err != boom || len(got) != 1 {
		t.Errorf("Func played %v, %v", got, err)
	}
}

// TestRecorder: events are kept in order with their times, sent on
// Notify, and rendered as the receiver's tests expect.
func TestRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := make(chan fake.Arrival, 2)
		r := &fake.Recorder{Notify: n}
		r.Inject(sink.Event{Key: kA, Down: true})
		time.Sleep(time.Second)
		r.Inject(sink.Event{Key: keys.Char('é'), Cause: eventqueue.Timeout})
		if a := <-n; a.Key != kA || (<-n).At.Sub(a.At) != time.Second {
			t.Errorf("notified %v", a)
		}
		if got := r.Events().String(); got != "KeyA down, 'é' up(timeout)" {
			t.Errorf("Events = %q", got)
		}
		if got := r.Take(); len(got) != 2 || len(r.Take()) != 0 || len(r.Events()) != 0 {
			t.Errorf("Take = %v, then %v", got, r.Events())
		}
	})
}

// TestOSFindsUnbalancedEvents: the OS model holds keys and names each
// violation of DESIGN.md invariant 2.
func TestOSFindsUnbalancedEvents(t *testing.T) {
	var o fake.OS
	for _, e := range []sink.Event{
		{Key: kA, Down: true}, {Key: kB, Down: true, Cause: eventqueue.Resync},
		{Key: kA, Down: true}, {Key: kB}, {Key: kB, Cause: eventqueue.Timeout},
	} {
		o.Inject(e)
	}
	if h := o.Held(); !slices.Equal(h, []keys.Key{kA}) {
		t.Errorf("held %v, want KeyA", h)
	}
	if d := o.SentDowns(); !slices.Equal(d, []keys.Key{kA, kA}) {
		t.Errorf("sent downs %v, want KeyA twice (not the resync's KeyB)", d)
	}
	want := []string{"second key-down of held KeyA", "key-up of unheld KeyB (timeout)"}
	if p := o.Problems(); !slices.Equal(p, want) {
		t.Errorf("problems %q, want %q", p, want)
	}
}

// TestFailingInjectors: CannotType fails characters (and records them);
// Watched fails everything once its backend vanished.
func TestFailingInjectors(t *testing.T) {
	var c fake.CannotType
	if err := c.Inject(sink.Event{Key: kA, Down: true}); err != nil {
		t.Errorf("a key: %v", err)
	}
	if err := c.Inject(sink.Event{Key: keys.Char('é'), Down: true}); !errors.Is(err, sink.ErrCannotType) || len(c.Events()) != 2 {
		t.Errorf("a character: %v, recorded %v", err, c.Events())
	}

	w := &fake.Watched{Err: fmt.Errorf("display gone; %w", sink.ErrGone)}
	if err := w.Inject(sink.Event{Key: kA, Down: true}); err != nil {
		t.Errorf("before: %v", err)
	}
	w.Vanish()
	w.Vanish()
	<-w.Gone()
	if err := w.Inject(sink.Event{Key: kA}); !errors.Is(err, sink.ErrGone) || len(w.Events()) != 1 {
		t.Errorf("after: %v, recorded %v", err, w.Events())
	}
}
