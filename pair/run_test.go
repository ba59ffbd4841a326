package pair

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/netsim"
)

// person is a test's UI: it answers with answer(code) and records what it
// was shown.
type person struct {
	mu       sync.Mutex
	answer   func(code string) (bool, error)
	code     string
	shown    Info
	statuses []string
}

func (p *person) Confirm(code string, peer Info) (bool, error) {
	p.mu.Lock()
	p.code, p.shown = code, peer
	p.mu.Unlock()
	return p.answer(code)
}

func (p *person) Status(msg string) {
	p.mu.Lock()
	p.statuses = append(p.statuses, msg)
	p.mu.Unlock()
}

func (p *person) seen() (string, Info) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code, p.shown
}

func says(yes bool) *person {
	return &person{answer: func(string) (bool, error) { return yes, nil }}
}

func info(name string, keyByte byte, port uint16) Info {
	i := Info{Name: name, Port: port}
	for k := range i.Key {
		i.Key[k] = keyByte + byte(k)
	}
	return i
}

func seeded(seed byte) *rand.ChaCha8 {
	return rand.NewChaCha8([32]byte{seed})
}

// keyed is an Info with a real X25519 key pair, its private key made from
// seed, and its DH.
func keyed(name string, seed byte, port uint16) (Info, DH) {
	priv, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{seed}, KeyLen))
	if err != nil {
		panic(err)
	}
	i := Info{Name: name, Port: port, Key: [KeyLen]byte(priv.PublicKey().Bytes())}
	return i, func(peer [KeyLen]byte) ([KeyLen]byte, error) {
		pub, err := ecdh.X25519().NewPublicKey(peer[:])
		if err != nil {
			return [KeyLen]byte{}, err
		}
		s, err := priv.ECDH(pub)
		if err != nil {
			return [KeyLen]byte{}, err
		}
		return [KeyLen]byte(s), nil
	}
}

var (
	infoA, dhA = keyed("alpha", 0xa0, 7575)
	infoB, dhB = keyed("bravo", 0xb0, 7576)
)

// outcome is what one side's Listen or Dial returned.
type outcome struct {
	peer Info
	addr net.Addr
	err  error
}

// pairOver runs Listen on lc and Dial from dc to lc's address, each with
// its own person, and returns both outcomes.
func pairOver(t *testing.T, lc, dc net.PacketConn, to net.Addr, pa, pb *person, opts Options) (a, b outcome) {
	t.Helper()
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() {
		b.peer, b.addr, b.err = Listen(ctx, lc, infoB, dhB, pb, RunOptions{Options: opts, Rand: seeded(2)})
	})
	wg.Go(func() {
		a.peer, a.err = Dial(ctx, dc, to, infoA, dhA, pa, RunOptions{Options: opts, Rand: seeded(1)})
	})
	wg.Wait()
	return a, b
}

func udp(t *testing.T) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The package doc's five steps over real loopback UDP: each side returns
// the other's Info after both people saw the same code and said yes.
func TestPairOverLoopback(t *testing.T) {
	lc, dc := udp(t), udp(t)
	pa, pb := says(true), says(true)
	a, b := pairOver(t, lc, dc, lc.LocalAddr(), pa, pb, Options{})
	if a.err != nil || b.err != nil {
		t.Fatalf("dial: %v, listen: %v", a.err, b.err)
	}
	if a.peer != infoB || b.peer != infoA {
		t.Errorf("A got %+v, B got %+v; want each other's Info", a.peer, b.peer)
	}
	if b.addr.String() != dc.LocalAddr().String() {
		t.Errorf("B says A is at %v; A is at %v", b.addr, dc.LocalAddr())
	}
	codeA, shownA := pa.seen()
	codeB, shownB := pb.seen()
	if codeA != codeB || len(codeA) != 6 {
		t.Errorf("codes %q and %q: want the same 6 digits", codeA, codeB)
	}
	if shownA != infoB || shownB != infoA {
		t.Errorf("A was shown %q, B %q", shownA.Name, shownB.Name)
	}
}

// A "no" on either side: both get ErrRejected, nothing to store.
func TestEitherNoRejectsBoth(t *testing.T) {
	for _, tc := range []struct {
		name string
		aYes bool
		bYes bool
	}{
		{"A says no", false, true},
		{"B says no", true, false},
		{"both say no", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond})
				lc, _ := n.Listen("10.0.0.2:7575")
				dc, _ := n.Listen("10.0.0.1:40000")
				a, b := pairOver(t, lc, dc, lc.LocalAddr(), says(tc.aYes), says(tc.bYes), Options{})
				if !errors.Is(a.err, ErrRejected) || !errors.Is(b.err, ErrRejected) {
					t.Errorf("dial: %v, listen: %v; want ErrRejected on both", a.err, b.err)
				}
				if a.peer != (Info{}) || b.peer != (Info{}) {
					t.Errorf("rejected yet returned %+v and %+v", a.peer, b.peer)
				}
			})
		})
	}
}

// The exchange completes at 30 % loss each way (netsim), in virtual time;
// many seeds, so that every message is lost in some, and each pairing ends
// soon after the later person's answer.
func TestPairThroughLoss(t *testing.T) {
	var dropped int64
	var slowest time.Duration
	lingered := 0
	for seed := range uint64(lossSeeds) {
		synctest.Test(t, func(t *testing.T) {
			n := netsim.NewNetwork(netsim.Config{Loss: 0.3, Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Duplicate: 0.05, Seed: seed})
			lc, _ := n.Listen("10.0.0.2:7575")
			dc, _ := n.Listen("10.0.0.1:40000")
			// The people answer 1 s and 3 s after they see the code.
			var mu sync.Mutex
			var answered time.Time
			first := ""
			slow := func(name string, d time.Duration) *person {
				return &person{answer: func(string) (bool, error) {
					time.Sleep(d)
					mu.Lock()
					answered = time.Now() // the later answer's time is kept
					if first == "" {
						first = name
					}
					mu.Unlock()
					return true, nil
				}}
			}
			pa, pb := slow("A", time.Second), slow("B", 3*time.Second)
			a, b := pairOver(t, lc, dc, lc.LocalAddr(), pa, pb, Options{})
			ab, ba := n.Stats("10.0.0.1:40000", "10.0.0.2:7575"), n.Stats("10.0.0.2:7575", "10.0.0.1:40000")
			if a.err != nil || b.err != nil {
				t.Fatalf("seed %d: dial: %v, listen: %v (A→B %v, B→A %v)", seed, a.err, b.err, ab, ba)
			}
			if a.peer != infoB || b.peer != infoA {
				t.Errorf("seed %d: A got %q, B got %q", seed, a.peer.Name, b.peer.Name)
			}
			// The person who answered first was told what it waits for.
			waiting, other := pa, "bravo"
			if first == "B" {
				waiting, other = pb, "alpha"
			}
			if want := "waiting for " + other + " to confirm..."; !slices.Contains(waiting.statuses, want) {
				t.Errorf("seed %d: %s answered first and was told %q, not %q", seed, first, waiting.statuses, want)
			}
			codeA, _ := pa.seen()
			if codeB, _ := pb.seen(); codeA != codeB {
				t.Errorf("seed %d: codes %s and %s", seed, codeA, codeB)
			}
			dropped += ab.Dropped + ba.Dropped
			took := time.Since(answered)
			slowest = max(slowest, took)
			if took > 2*time.Second {
				lingered++
			}
		})
	}
	if dropped == 0 {
		t.Error("nothing was lost: the test tests nothing")
	}
	// A side waits out Linger only when the other side's last confirm
	// (sent twice) is lost: 9 % of pairings at 30 % loss.
	if slowest > DefaultLinger+DefaultRetryMax || lingered > lossSeeds*15/100 {
		t.Errorf("done at most %v after the later answer, %d of %d later than 2s; want at most %v and 15 %%",
			slowest, lingered, lossSeeds, DefaultLinger+DefaultRetryMax)
	}
	t.Logf("%d seeds, %d datagrams lost, done at most %v after the later answer, %d later than 2s", lossSeeds, dropped, slowest, lingered)
}

// Nothing listening: Dial ends after AnswerTimeout with the error naming
// the address and both fixes, in virtual time.
func TestNothingListening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netsim.NewNetwork(netsim.Config{})
		dc, _ := n.Listen("10.0.0.1:40000")
		to, _ := net.ResolveUDPAddr("udp", "10.0.0.9:7575")
		start := time.Now()
		_, err := Dial(t.Context(), dc, to, infoA, dhA, says(true), RunOptions{Target: "bravo:7575"})
		if !errors.Is(err, ErrNoAnswer) {
			t.Fatalf("got %v, want ErrNoAnswer", err)
		}
		want := "no keyrelay pair waiting at bravo:7575: run `keyrelay pair` there first, or a firewall drops UDP port 7575"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q\nwant it to start %q", err, want)
		}
		if took := time.Since(start); took != DefaultAnswerTimeout {
			t.Errorf("gave up after %v, want %v", took, DefaultAnswerTimeout)
		}
	})
}

// A recv (protocol 4) has the port: its version notice, echoing the
// pairing id, ends Dial at once with a message saying so.
func TestRecvThereIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netsim.NewNetwork(netsim.Config{})
		dc, _ := n.Listen("10.0.0.1:40000")
		rc, _ := n.Listen("10.0.0.2:7575")
		go func() {
			// A protocol-4 recv answers any other version with a notice
			// echoing bytes 6-21 (PROTOCOL.md §10).
			buf := make([]byte, 1500)
			n, from, err := rc.ReadFrom(buf)
			if err != nil || n < HeaderLen {
				return
			}
			notice := append([]byte{'K', 'R', 4, 5, 0, 0}, buf[6:22]...)
			rc.WriteTo(append(notice, 1, 4), from)
		}()
		start := time.Now()
		_, err := Dial(t.Context(), dc, rc.LocalAddr(), infoA, dhA, says(true), RunOptions{})
		if !errors.Is(err, ErrRecv) || !strings.Contains(err.Error(), "stop recv there") {
			t.Fatalf("got %v, want ErrRecv and the fix", err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("took %v: the notice should end it at once", time.Since(start))
		}
	})
}

// Listen gives up after Timeout when no request comes.
func TestListenTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netsim.NewNetwork(netsim.Config{})
		lc, _ := n.Listen("10.0.0.2:7575")
		_, _, err := Listen(t.Context(), lc, infoB, dhB, says(true), RunOptions{Options: Options{Timeout: time.Minute}})
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "no pairing request arrived within 1m0s") {
			t.Fatalf("got %v", err)
		}
	})
}

// Cancelling the context ends Listen and Dial, and tells the other side
// no if it may be showing a code.
func TestCancelTellsThePeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond})
		lc, _ := n.Listen("10.0.0.2:7575")
		dc, _ := n.Listen("10.0.0.1:40000")
		ctx, cancel := context.WithCancel(t.Context())
		pa := &person{answer: func(string) (bool, error) {
			cancel() // Ctrl+C while the code is shown
			return false, context.Canceled
		}}
		var b outcome
		var wg sync.WaitGroup
		wg.Go(func() {
			b.peer, b.addr, b.err = Listen(t.Context(), lc, infoB, dhB, says(true), RunOptions{Rand: seeded(2)})
		})
		_, err := Dial(ctx, dc, lc.LocalAddr(), infoA, dhA, pa, RunOptions{Rand: seeded(1)})
		wg.Wait()
		if err == nil {
			t.Error("Dial returned no error after its context was cancelled")
		}
		if !errors.Is(b.err, ErrRejected) {
			t.Errorf("listen: %v, want ErrRejected (told no)", b.err)
		}
	})
}

// lossSeeds is how many seeds TestPairThroughLoss runs.
const lossSeeds = 1000

// DefaultName is the hostname, fit to be shown and stored (CheckName).
func TestDefaultNameIsValid(t *testing.T) {
	name, err := DefaultName()
	if err != nil {
		t.Skipf("this machine's hostname cannot name it: %v", err)
	}
	if err := CheckName(name); err != nil {
		t.Errorf("DefaultName %q: %v", name, err)
	}
}
