package routing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/sender"
)

// TestGroupStopsWhenOneIsSilent (PROTOCOL.md §9.1; send's exit status 3;
// Group.Run): a script mirrored to two destinations, a tap every 100 ms
// for 30 s, whose second receiver is cut off 2 s in (both directions).
// With StopWhenSilent, once b has been silent for Outage the source stops
// for both (a group's rule: any destination silent), Run returns a
// *SilentError naming b alone, within Outage + Linger and a resend period
// or two of b's last ack (a's end runs alongside b's, not after it), a
// typed only what was played before and holds nothing (DESIGN.md
// invariant 6). Without it the script plays to its end for both.
func TestGroupStopsWhenOneIsSilent(t *testing.T) {
	const (
		outage = 2 * time.Second
		linger = 300 * time.Millisecond
		taps   = 300
	)
	for _, stop := range []bool{true, false} {
		t.Run(fmt.Sprintf("StopWhenSilent=%v", stop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Delay: 2 * time.Millisecond, Seed: 1})
				oses, relays, senders, addrs := silentGroupRig(t, nw, 2, sender.Config{Linger: linger, Outage: outage, StopWhenSilent: stop})
				routes := []routing.Route{{Name: "a"}, {Name: "b"}}
				g, err := routing.GroupOf(senders, routing.NewRouter(routes, true, 0))
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				killAt := start.Add(2 * time.Second)
				played := 0
				src := fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
					cut := false
					for i := range taps {
						select {
						case <-time.After(100 * time.Millisecond):
						case <-ctx.Done():
							return ctx.Err()
						}
						if !cut && !time.Now().Before(killAt) {
							nw.Partition(addrs[1][0], addrs[1][1], true)
							nw.Partition(addrs[1][1], addrs[1][0], true)
							cut = true
						}
						k := keys.Key(keys.KeyA) + keys.Key(i%26)
						if emit(k, true) != nil || emit(k, false) != nil {
							return ctx.Err()
						}
						played++
					}
					return nil
				})
				_, err = g.Run(context.Background(), src)
				over := time.Now()
				lastHeard := senders[1].Peers()[0].LastHeard
				for _, rl := range relays {
					rl.Stop()
				}
				downs := len(oses[0].SentDowns())
				t.Logf("over %v after the cut (b last heard %v before it); %d of %d taps played, a typed %d; err %v",
					over.Sub(killAt), killAt.Sub(lastHeard), played, taps, downs, err)
				if h := oses[0].Held(); len(h) > 0 {
					t.Errorf("a still holds %v", h)
				}
				if p := oses[0].Problems(); len(p) > 0 {
					t.Errorf("a: %v", p)
				}
				if !stop {
					if err != nil || played != taps || downs != taps {
						t.Errorf("without StopWhenSilent: err %v, %d of %d taps played, a typed %d; want the script played to its end", err, played, taps, downs)
					}
					return
				}
				se, ok := errors.AsType[*sender.SilentError](err)
				if !ok {
					t.Fatalf("Run returned %v, want a *SilentError", err)
				}
				if want := []string{addrs[1][1]}; !slices.Equal(se.Addrs, want) || se.Outage != outage {
					t.Errorf("SilentError names %v after %v, want %v after %v", se.Addrs, se.Outage, want, outage)
				}
				if played >= taps || downs != played {
					t.Errorf("%d of %d taps played, a typed %d; want the script stopped, and a to have typed what was played", played, taps, downs)
				}
				if limit := outage + linger + 2*sender.DefaultInterval; over.Sub(lastHeard) > limit {
					t.Errorf("over %v after b's last ack, want within Outage + Linger + two resend periods (%v)", over.Sub(lastHeard), limit)
				}
			})
		})
	}
}

// silentGroupRig is groupRig with a sender config of the test's: n
// relays on nw, each a sender to a receiver of its own typing into a fake
// OS; addrs are each relay's sender and receiver addresses.
func silentGroupRig(t *testing.T, nw *netsim.Network, n int, scfg sender.Config) (oses []*fake.OS, relays []*relaytest.Relay, senders []*sender.Sender, addrs [][2]string) {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ra, sa := fmt.Sprintf("10.0.0.%d:7575", 10+i), fmt.Sprintf("10.0.0.1:%d", 40000+i)
		rc, err := nw.Listen(ra)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := nw.Listen(sa)
		if err != nil {
			t.Fatal(err)
		}
		osk := &fake.OS{}
		rl := relaytest.Start(t, relaytest.Config{RecvConn: rc, SendConn: sc, Identity: id, Feedback: true,
			Receiver: receiver.Config{Injector: osk, Timeout: 2 * time.Second},
			Sender:   scfg})
		oses, relays, senders = append(oses, osk), append(relays, rl), append(senders, rl.Sender)
		addrs = append(addrs, [2]string{sa, ra})
	}
	return oses, relays, senders, addrs
}
