package receiver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/netsim"
)

// countingTimer is a pokeTimer that counts its Resets: each is a
// timerfd_settime(2) with recv's wake.Timer.
type countingTimer struct {
	*pokeTimer
	resets atomic.Int32
}

func (c *countingTimer) Reset(d time.Duration) { c.resets.Add(1); c.pokeTimer.Reset(d) }

// TestSteadySessionRearmsSeldom (PROTOCOL.md §7.2): a sender resending
// every 100 ms moves its session's deadline (its allowance after the last
// packet) at each packet, yet Run re-arms its timer about once per half
// the allowance, not at each packet; and the session still times out at
// its allowance after the last packet, to the nanosecond, its held key
// released then.
func TestSteadySessionRearmsSeldom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		packets int
	}{
		{"a second of resends", 11},
		{"five seconds of resends", 51},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{})
				rc, sc := listenPair(t, nw)
				tm := &countingTimer{pokeTimer: newPokeTimer()}
				rec := &fake.Recorder{}
				r, err := New(Config{Insecure: true, Conn: rc, Injector: rec, Timer: tm, NoAcks: true})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { r.Run(ctx) })
				defer func() { cancel(); sc.Close(); wg.Wait() }()
				var last time.Time
				for i := range tc.packets {
					if i > 0 {
						time.Sleep(100 * time.Millisecond)
					}
					b := packet(t, 1, uint64(i+1), uint64(100*i), dn(kA, 1))
					if _, err := sc.WriteTo(b, rc.LocalAddr()); err != nil {
						t.Fatal(err)
					}
					last = time.Now()
				}
				synctest.Wait()
				// Half the allowance (1 s) is 5 packets: about one
				// Reset per 6, and one for the first.
				if got, most := int(tm.resets.Load()), 1+tc.packets/5; got > most {
					t.Errorf("%d Resets for %d packets 100 ms apart, want at most %d", got, tc.packets, most)
				}
				time.Sleep(2 * DefaultTimeout)
				got := rec.Events()
				if len(got) != 2 || got[1].Down || got[1].Cause != eventqueue.Timeout {
					t.Fatalf("injected %v, want KeyA down, then up at the timeout", got)
				}
				if at := got[1].At.Sub(last); at != DefaultTimeout {
					t.Errorf("released %v after the last packet, want the allowance, %v", at, DefaultTimeout)
				}
			})
		})
	}
}
