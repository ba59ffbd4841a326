package relaytest_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// relayKey seals the relay's packets, as in normal use.
var relayKey = []byte("0123456789abcdef0123456789abcdef")

// counterConn records the newest packet counter that went through it and
// when the last datagram was read.
type counterConn struct {
	net.PacketConn
	mu       sync.Mutex
	newest   uint64
	lastRead time.Time
}

// note counts queue packets only: an initiation (PROTOCOL.md §8.3)
// carries a counter but no queue, so its arrival says nothing of what is held.
func (c *counterConn) note(b []byte, read bool) {
	if h, err := wire.ParseHeader(b); err == nil && h.Type == wire.TypeQueue {
		c.mu.Lock()
		c.newest = max(c.newest, h.Counter)
		if read {
			c.lastRead = time.Now()
		}
		c.mu.Unlock()
	}
}

func (c *counterConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.note(b[:n], true)
	}
	return n, a, err
}

func (c *counterConn) WriteTo(b []byte, a net.Addr) (int, error) {
	c.note(b, false)
	return c.PacketConn.WriteTo(b, a)
}

func (c *counterConn) get() (uint64, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newest, c.lastRead
}

// TestRelayUnderLoss runs the real Sender and Receiver over an impaired
// in-memory network in virtual time, with random traces of physical keys and
// characters (PROTOCOL.md §3.1), 0–90 % loss, bursts, duplication, delay,
// jitter and reordering, and checks DESIGN.md invariants 1–5.
func TestRelayUnderLoss(t *testing.T) {
	relayAbridged.Store(0)
	defer func() {
		t.Logf("%d abridged datagrams", relayAbridged.Load())
		if !t.Failed() && relayAbridged.Load() == 0 {
			t.Errorf("no datagram was abridged: the runs with feedback say nothing of PROTOCOL.md §3.3")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		cfg := netsim.Config{
			Loss:      float64(rapid.IntRange(0, 90).Draw(rt, "loss%")) / 100,
			Delay:     time.Duration(rapid.IntRange(0, 30).Draw(rt, "delayMs")) * time.Millisecond,
			Jitter:    time.Duration(rapid.IntRange(0, 10).Draw(rt, "jitterMs")) * time.Millisecond,
			Duplicate: float64(rapid.IntRange(0, 20).Draw(rt, "dup%")) / 100,
			Reorder:   float64(rapid.IntRange(0, 30).Draw(rt, "reorder%")) / 100,
			Seed:      rapid.Uint64().Draw(rt, "seed"),
		}
		if rapid.Bool().Draw(rt, "bursty") {
			cfg.BurstEnter = 0.05
			cfg.BurstExit = 0.3
		}
		n := rapid.IntRange(1, 16).Draw(rt, "queue")
		alphabet := rapid.IntRange(1, 12).Draw(rt, "keys")
		var steps []fake.Step
		for range rapid.IntRange(0, 40).Draw(rt, "steps") {
			steps = append(steps, fake.Step{
				Wait: time.Duration(rapid.IntRange(0, 150).Draw(rt, "waitMs")) * time.Millisecond,
				Key:  relayAlphabet(rapid.IntRange(0, alphabet-1).Draw(rt, "key")),
				Down: rapid.Bool().Draw(rt, "down"),
			})
		}
		crash := rapid.Bool().Draw(rt, "crash")
		// One-way (the plain queue) and with feedback (acks, bursts,
		// lossless typing): the same invariants hold.
		feedback := rapid.Bool().Draw(rt, "feedback")
		if msg := runRelay(t, cfg, n, steps, crash, feedback); msg != "" {
			rt.Fatal(msg)
		}
	})
}

// relayAbridged counts the abridged datagrams of TestRelayUnderLoss's runs.
var relayAbridged atomic.Int64

// relayAlphabet is the i-th key of a trace: physical keys and characters
// (PROTOCOL.md §3.1: character events never unbalance a receiver) alternate.
func relayAlphabet(i int) keys.Key {
	if i%2 == 0 {
		return keys.Key(4 + i/2)
	}
	return keys.Char([]rune{'a', 'é', '€', '😀', 'A', 'ß'}[i/2%6])
}

// runRelay plays steps through a sender and receiver and returns what went
// wrong, or "".
func runRelay(t *testing.T, cfg netsim.Config, n int, steps []fake.Step, crash, feedback bool) string {
	// The model of the sender: the same queue fed the same events.
	model, _ := eventqueue.New(n)
	var sentDowns []keys.Key
	for i, st := range steps {
		k := eventqueue.Up
		if st.Down {
			k = eventqueue.Down
		}
		if r, _ := model.Add(eventqueue.Event{Key: st.Key, Kind: k, Stamp: uint64(i + 1)}); r == eventqueue.Added && st.Down {
			sentDowns = append(sentDowns, st.Key)
		}
	}
	wantHeld := model.HeldKeys(nil)
	slices.Sort(wantHeld)

	const timeout = 500 * time.Millisecond
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	synctest.Test(t, func(t *testing.T) {
		nw := netsim.NewNetwork(cfg)
		rc, err := nw.Listen(relaytest.RecvAddr)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := nw.Listen(relaytest.SendAddr)
		if err != nil {
			t.Fatal(err)
		}
		// Both ends count packets on their own socket; acks reach the
		// sender on sc itself.
		rconn, sconn := &counterConn{PacketConn: rc}, &counterConn{PacketConn: sc}
		osk := &fake.OS{}
		scfg := sender.Config{QueueLen: n}
		if feedback {
			scfg.Feedback = []net.PacketConn{sc}
		}
		rl := relaytest.Start(t, relaytest.Config{RecvConn: rconn, SendConn: sconn, PSK: relayKey,
			Receiver: receiver.Config{Injector: osk, Timeout: timeout}, Sender: scfg})
		snd := rl.Sender
		inFlight := cfg.Delay + cfg.Jitter + max(2*cfg.Jitter, 10*time.Millisecond)
		// released checks invariant 5 once the sender has fallen silent
		// (killed, or ended with its last packets lost) and what was in
		// flight has arrived: the receiver releases every key the session's
		// allowance after its last packet, as its status says: recv's
		// timeout, longer while the session loses packets (at most
		// MaxAllowance timeouts), and exactly the timeout on a perfect link.
		released := func(what string) {
			time.Sleep(inFlight)
			synctest.Wait()
			allowance, heard := time.Duration(0), false
			for _, s := range rl.Receiver.Status() {
				if s.ID == snd.Session() {
					allowance, heard = s.Allowance, true
				}
			}
			perfect := cfg.Loss == 0 && cfg.BurstEnter == 0 && cfg.Jitter == 0 && cfg.Reorder == 0
			if heard && (allowance < timeout || allowance > receiver.MaxAllowance*timeout || perfect && allowance != timeout) {
				fail("%s: the session's allowance is %v (timeout %v, lossless link %v)", what, allowance, timeout, perfect)
			}
			_, lastRead := rconn.get()
			time.Sleep(time.Until(lastRead.Add(allowance))) // released when due (Next)
			synctest.Wait()
			if h := osk.Held(); len(h) != 0 {
				fail("%s: %v after the last datagram arrived (the session's allowance %v): still held %v", what, time.Since(lastRead), allowance, h)
			}
		}

		// The source stays quiet for 4 s after the last event; before that
		// pause it looks at the state "after one packet sent after the last
		// event".
		src := &fake.Trace{Steps: steps, Quiet: 4 * time.Second}
		src.AtEnd = func() {
			// The packet carrying the last event is out once the sender's
			// backlog (events waiting for acks) has drained.
			synctest.Wait()
			for snd.Pending() > 0 {
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
			}
			last, _ := sconn.get()
			time.Sleep(time.Second) // virtual: ten resends
			synctest.Wait()
			got, lastRead := rconn.get()
			// Invariant 1: once a packet sent after the last event has
			// arrived (and the session has not timed out since), the
			// receiver holds what the sender holds.
			if got >= last && time.Since(lastRead) < timeout {
				if h := osk.Held(); !slices.Equal(h, wantHeld) {
					fail("at rest: receiver holds %v, sender %v", h, wantHeld)
				}
			}
			if crash {
				// The sender dies: nothing more reaches the receiver, whose
				// keys must be released within the session's allowance
				// (invariant 5). Datagrams already in flight may still
				// arrive for up to the link's longest delay; the allowance
				// counts from the last.
				nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
				released("sender killed")
			}
		}
		sst, err := snd.Run(context.Background(), src)
		if err != nil {
			fail("sender: %v", err)
		}
		relayAbridged.Add(int64(sst.Abridged))
		// Acks still in flight find the sender's socket closed.
		sc.Close()
		// Invariant 6: a clean end sends the all-up state. Once the last
		// packet has arrived, and before any timeout could fire, the
		// receiver holds nothing.
		time.Sleep(inFlight)
		synctest.Wait()
		sent, _ := sconn.get()
		got, _ := rconn.get()
		if !crash && got == sent {
			if h := osk.Held(); len(h) != 0 {
				fail("the sender ended cleanly and its last packet arrived, but %v are held", h)
			}
		}
		// And after at most the session's allowance, nothing is held
		// whatever was lost.
		released("after the sender ended")
		if err := rl.Stop(); err != nil {
			fail("receiver: %v", err)
		}
		// Through loss, duplication and reordering, the sender abridges
		// only what the receiver can rebuild (PROTOCOL.md §3.3).
		if n := rl.Receiver.Stats().Unbased; n != 0 {
			fail("%d abridged packets did not build on the receiver's queue", n)
		}
		problems = append(problems, osk.Problems()...) // invariant 2
		// Invariant 3: injected key-downs are a subsequence of the sender's.
		downs := osk.SentDowns()
		j := 0
		for _, d := range downs {
			for j < len(sentDowns) && sentDowns[j] != d {
				j++
			}
			if j == len(sentDowns) {
				fail("key-downs %v are not a subsequence of the sent %v", downs, sentDowns)
				break
			}
			j++
		}
		// A perfect in-order link loses no key-down.
		if cfg.Loss == 0 && cfg.BurstEnter == 0 && cfg.Jitter == 0 && cfg.Reorder == 0 && !slices.Equal(downs, sentDowns) {
			fail("lossless link: injected key-downs %v, sent %v", downs, sentDowns)
		}
	})
	if len(problems) > 0 {
		return fmt.Sprint(problems)
	}
	return ""
}
