package sender

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/wire"
)

type arrival struct {
	at time.Duration
	q  wire.Queue
}

// collect reads every packet conn gets, decoded, with its virtual arrival time.
func collect(t *testing.T, conn net.PacketConn, start time.Time) <-chan []arrival {
	out := make(chan []arrival, 1)
	go func() {
		var got []arrival
		buf := make([]byte, 2000)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				out <- got
				return
			}
			var q wire.Queue
			if err := wire.ParseQueue(buf[:n], &q); err != nil {
				t.Errorf("undecodable packet: %v", err)
				continue
			}
			q.Events = append([]eventqueue.Event(nil), q.Events...)
			got = append(got, arrival{time.Since(start), q})
		}
	}()
	return out
}

// down and up are a Trace's steps: key pressed or released wait after
// the step before.
func down(wait time.Duration, k keys.Code) fake.Step {
	return fake.Step{Wait: wait, Key: keys.Key(k), Down: true}
}

func up(wait time.Duration, k keys.Code) fake.Step {
	return fake.Step{Wait: wait, Key: keys.Key(k)}
}

// run plays src from a sender on a perfect in-memory network to two
// receivers and returns what each got.
// arrivalTimes is when the packets got arrived, as "0s 100ms …".
func arrivalTimes(got []arrival) string {
	var at []string
	for _, a := range got {
		at = append(at, a.at.String())
	}
	return strings.Join(at, " ")
}

func run(t *testing.T, cfg Config, src Source, ctx context.Context) (Stats, error, [][]arrival) {
	nw := netsim.NewNetwork(netsim.Config{})
	sc, _ := nw.Listen("10.0.0.1:1")
	r1, _ := nw.Listen("10.0.0.2:7575")
	r2, _ := nw.Listen("10.0.0.3:7575")
	start := time.Now()
	c1, c2 := collect(t, r1, start), collect(t, r2, start)
	// Plaintext, one-way: the loop's timing is under test, not its keys.
	cfg.Conn, cfg.Dests, cfg.Insecure = sc, []Dest{{UDP: r1.LocalAddr()}, {UDP: r2.LocalAddr()}}, true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Run(ctx, src)
	synctest.Wait()
	r1.Close()
	r2.Close()
	return st, err, [][]arrival{<-c1, <-c2}
}

// TestIntervalAndLinger: a packet at start, one every interval while idle,
// then the final queue every 50 ms for the linger, to every destination.
func TestIntervalAndLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err, got := run(t, Config{Linger: 275 * time.Millisecond}, &fake.Trace{Quiet: 950 * time.Millisecond}, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := "0s 100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 950ms 1s 1.05s 1.1s 1.15s 1.2s"
		if times := arrivalTimes(got[0]); times != want {
			t.Errorf("packets at %v\nwant        %s", times, want)
		}
		if len(got[1]) != len(got[0]) || st.Packets != len(got[0]) {
			t.Errorf("destination 2 got %d packets, destination 1 %d, stats %d", len(got[1]), len(got[0]), st.Packets)
		}
		for i, a := range got[0] {
			if a.q.Header.Counter != uint64(i+1) || a.q.Header.Session != got[0][0].q.Header.Session {
				t.Errorf("packet %d: session %x counter %d", i, a.q.Header.Session, a.q.Header.Counter)
			}
		}
	})
}

// TestEventsSendAtOnce: each key event goes out immediately, stamped with
// the session clock.
func TestEventsSendAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err, got := run(t, Config{Linger: -1}, &fake.Trace{Steps: []fake.Step{down(30*time.Millisecond, keys.KeyA), up(40*time.Millisecond, keys.KeyA)}}, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if at := arrivalTimes(got[0]); at != "0s 30ms 70ms" {
			t.Fatalf("packets at %v, want 0s 30ms 70ms", at)
		}
		if e := got[0][1].q.Events[0]; e.Key != keys.Key(keys.KeyA) || e.Kind != eventqueue.Down || e.Stamp != 30 {
			t.Errorf("packet 2 entry 0 = %+v, want KeyA down stamped 30", e)
		}
		if e := got[0][2].q.Events[0]; e.Kind != eventqueue.Up || e.Stamp != 70 {
			t.Errorf("packet 3 entry 0 = %+v, want KeyA up stamped 70", e)
		}
	})
}

// TestStopReleasesHeldKeys: cancelling Run (SIGINT) releases held keys, and
// the final packets show no key held (DESIGN.md invariant 6); it is a clean
// stop, not an error.
func TestStopReleasesHeldKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		// A linger of 275ms keeps its deadline off the 50ms resend ticks, so
		// the last packet's time does not depend on which fires first.
		st, err, got := run(t, Config{Linger: 275 * time.Millisecond}, &fake.Trace{Steps: []fake.Step{down(0, keys.ShiftLeft), down(0, keys.KeyA)}, Quiet: time.Hour}, ctx)
		if err != nil {
			t.Errorf("Run = %v, want nil after a cancel", err)
		}
		last := got[0][len(got[0])-1]
		for _, e := range last.q.Events {
			if e.Kind == eventqueue.Down && newest(last.q.Events, e.Key) == eventqueue.Down {
				t.Errorf("final packet still holds %v", e.Key)
			}
		}
		if st.Events != 4 || last.at != 750*time.Millisecond {
			t.Errorf("%d events (want 4: two presses, two releases), last packet at %v (want 750ms)", st.Events, last.at)
		}
	})
}

func newest(events []eventqueue.Event, c keys.Key) eventqueue.Kind {
	for _, e := range events {
		if e.Key == c {
			return e.Kind
		}
	}
	return eventqueue.None
}

// TestDroppedEventsCounted: a queue full of held keys drops a key-down (the
// seed's step 5), and the stats say so.
func TestDroppedEventsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err, _ := run(t, Config{QueueLen: 2, Linger: -1}, &fake.Trace{Steps: []fake.Step{down(0, keys.KeyA), down(0, keys.KeyB), down(0, keys.KeyC), up(0, keys.KeyA)}}, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// 4 script events + the release of KeyB at the end; KeyC's press
		// is dropped.
		if st.Events != 5 || st.Queued != 4 || st.Dropped != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestSourceErrorStillReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		// A source that presses KeyZ, then fails.
		src := fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
			if err := emit(keys.Key(keys.KeyZ), true); err != nil {
				return err
			}
			return boom
		})
		_, err, got := run(t, Config{Linger: -1}, src, context.Background())
		if !errors.Is(err, boom) {
			t.Errorf("Run = %v, want the source's error", err)
		}
		last := got[0][len(got[0])-1].q.Events[0]
		if last.Key != keys.Key(keys.KeyZ) || last.Kind != eventqueue.Up {
			t.Errorf("last event %+v, want the release of KeyZ", last)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	nw := netsim.NewNetwork(netsim.Config{})
	c, _ := nw.Listen("10.0.0.1:1")
	for _, cfg := range []Config{{}, {Conn: c}, {Conn: c, Dests: []Dest{{UDP: c.LocalAddr()}}, Insecure: true, QueueLen: 90}, {Conn: c, Dests: []Dest{{UDP: c.LocalAddr()}}, Insecure: true, Interval: time.Microsecond},
		{Conn: c, Dests: []Dest{{UDP: c.LocalAddr()}}, Feedback: []net.PacketConn{c}}, // handshaken: no identity, no receiver key
		{Conn: c, Dests: []Dest{{UDP: c.LocalAddr(), OneWay: true}}}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestStatsStringNamesInitiations: send's summary counts the handshake's
// initiations in its bytes (PROTOCOL.md §8.2), so it names them when there
// were any; a one-way or plaintext session's line, with none, does not.
func TestStatsStringNamesInitiations(t *testing.T) {
	for _, tt := range []struct {
		s    Stats
		want string
	}{
		{Stats{Events: 2, Queued: 2, Bytes: 1328, Initiations: 8}, "2 events (2 queued, 0 dropped), 0 packets, 1328 bytes, 0 send errors, 0 acks, 8 handshake initiations"},
		{Stats{Events: 2, Queued: 2, Packets: 46, Bytes: 4408}, "2 events (2 queued, 0 dropped), 46 packets, 4408 bytes, 0 send errors, 0 acks"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.s, got, tt.want)
		}
	}
}

// pokeTimer is a Timer that fires as a wake.Timer does (a call of
// OnFire's function) and that a test can also fire early, as a firing
// from before a Reset would.
type pokeTimer struct {
	f atomic.Pointer[func()] // set by Run, called by the test's pokes
	t *time.Timer
}

func newPokeTimer() *pokeTimer {
	p := &pokeTimer{}
	p.t = time.AfterFunc(time.Hour, p.poke)
	p.t.Stop()
	return p
}

func (p *pokeTimer) poke() {
	if f := p.f.Load(); f != nil {
		(*f)()
	}
}

func (p *pokeTimer) OnFire(f func())       { p.f.Store(&f) }
func (p *pokeTimer) Reset(d time.Duration) { p.t.Reset(d) }
func (p *pokeTimer) Close() error          { p.t.Stop(); return nil }

// TestEarlyTimerFiringsSendNothing: Config.Timer firing between the
// loop's deadlines (PROTOCOL.md §7: the queue every interval) sends no
// extra packet: the core runs only what is due, and the packets go at the
// times a time.Timer gives (TestIntervalAndLinger's).
func TestEarlyTimerFiringsSendNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newPokeTimer()
		for _, at := range []time.Duration{30 * time.Millisecond, 130 * time.Millisecond, 475 * time.Millisecond, 1025 * time.Millisecond} {
			time.AfterFunc(at, tm.poke)
		}
		_, err, got := run(t, Config{Linger: 275 * time.Millisecond, Timer: tm}, &fake.Trace{Quiet: 950 * time.Millisecond}, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := "0s 100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 950ms 1s 1.05s 1.1s 1.15s 1.2s"
		if times := arrivalTimes(got[0]); times != want {
			t.Errorf("packets at %v\nwant        %s", times, want)
		}
	})
}
