package sender_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/fake"
	"github.com/keyrelay/keyrelay/internal/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// TestGroupSwitchesUnderLoss runs a Group of three senders, each to its
// own receiver over a link losing 20 % of packets (virtual time), and
// checks issue 27 must-have 2 end to end in one process: a key held
// across a switch is released at the old target and never pressed at the
// new one; each receiver gets the keys typed while it was the target and
// no other; none is left holding a key, and none saw an unbalanced event
// (DESIGN.md invariants 1 and 2, per destination).
func TestGroupSwitchesUnderLoss(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Loss: 0.2, Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: seed})
				id, err := identity.Generate()
				if err != nil {
					t.Fatal(err)
				}
				var (
					oses    []*fake.OS
					relays  []*relaytest.Relay
					senders []*sender.Sender
					routes  []sender.Route
				)
				for i := range 3 {
					rc, err := nw.Listen(fmt.Sprintf("10.0.0.%d:7575", 10+i))
					if err != nil {
						t.Fatal(err)
					}
					sc, err := nw.Listen(fmt.Sprintf("10.0.0.1:%d", 40000+i))
					if err != nil {
						t.Fatal(err)
					}
					osk := &fake.OS{}
					rl := relaytest.Start(t, relaytest.Config{RecvConn: rc, SendConn: sc, Identity: id, Feedback: true,
						Receiver: receiver.Config{Injector: osk, Timeout: 2 * time.Second},
						Sender:   sender.Config{Linger: 500 * time.Millisecond}})
					oses, relays, senders = append(oses, osk), append(relays, rl), append(senders, rl.Sender)
					routes = append(routes, sender.Route{Name: string(rune('a' + i))})
				}
				g, err := sender.GroupOf(senders, sender.NewRouter(routes, false, 0))
				if err != nil {
					t.Fatal(err)
				}
				key := func(emit func(keys.Key, bool) error, k keys.Code, down bool) {
					time.Sleep(50 * time.Millisecond)
					if err := emit(keys.Key(k), down); err != nil {
						t.Error(err)
					}
				}
				sw := func(name string) {
					time.Sleep(50 * time.Millisecond)
					if err := g.Switch(name); err != nil {
						t.Error(err)
					}
				}
				src := fake.Func(func(ctx context.Context, emit func(keys.Key, bool) error) error {
					key(emit, keys.ShiftLeft, true)
					sw("b")
					// Released at a by the switch, not at the end.
					time.Sleep(time.Second)
					if h := oses[0].Held(); len(h) > 0 {
						t.Errorf("a still holds %v a second after the switch to b", h)
					}
					key(emit, keys.KeyB, true)
					key(emit, keys.ShiftLeft, false) // held across: released at a already
					key(emit, keys.KeyB, false)
					key(emit, keys.ShiftLeft, true)
					sw("c")
					key(emit, keys.KeyC, true) // held at the end: released at c
					return nil
				})
				if _, err := g.Run(context.Background(), src); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3 * time.Second)
				for _, rl := range relays {
					rl.Stop()
				}
				want := [][]keys.Key{{keys.Key(keys.ShiftLeft)}, {keys.Key(keys.KeyB), keys.Key(keys.ShiftLeft)}, {keys.Key(keys.KeyC)}}
				for i, osk := range oses {
					if got := osk.SentDowns(); !slices.Equal(got, want[i]) {
						t.Errorf("receiver %c pressed %v, want %v", 'a'+i, got, want[i])
					}
					if h := osk.Held(); len(h) > 0 {
						t.Errorf("receiver %c still holds %v", 'a'+i, h)
					}
					if p := osk.Problems(); len(p) > 0 {
						t.Errorf("receiver %c: %v", 'a'+i, p)
					}
				}
			})
		})
	}
}
