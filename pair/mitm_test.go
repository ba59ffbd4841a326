package pair

import (
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/netsim"
)

// screens is the person who walks between the two machines: each side's
// Confirm waits until both codes are shown, and says yes only if they are
// the same.
type screens struct {
	mu    sync.Mutex
	codes [2]string
	both  chan struct{}
}

func newScreens() *screens { return &screens{both: make(chan struct{})} }

func (s *screens) side(i int) *person {
	return &person{answer: func(code string) (bool, error) {
		s.mu.Lock()
		s.codes[i] = code
		if s.codes[0] != "" && s.codes[1] != "" {
			close(s.both)
		}
		s.mu.Unlock()
		<-s.both
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.codes[0] == s.codes[1], nil
	}}
}

// A man in the middle with two key pairs of its own runs two pairings,
// posing as B to A and as A to B (package doc). The codes it cannot choose
// differ (for these seeds; in general but for one in 10^6), the person
// says no on both machines, and neither stores anything.
func TestManInTheMiddleShowsDifferentCodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond})
		bc, _ := n.Listen("10.0.0.2:7575")
		ac, _ := n.Listen("10.0.0.1:40000")
		m1, _ := n.Listen("10.0.0.3:7575") // A dials this, thinking it is B
		m2, _ := n.Listen("10.0.0.3:40001")
		fakeB, dhFakeB := keyed(infoB.Name, 0x10, infoB.Port)
		fakeA, dhFakeA := keyed(infoA.Name, 0x20, infoA.Port)

		s := newScreens()
		var a, b outcome
		var wg sync.WaitGroup
		wg.Go(func() {
			b.peer, b.addr, b.err = Listen(t.Context(), bc, infoB, dhB, s.side(1), RunOptions{Rand: seeded(2)})
		})
		wg.Go(func() {
			a.peer, a.err = Dial(t.Context(), ac, m1.LocalAddr(), infoA, dhA, s.side(0), RunOptions{Rand: seeded(1)})
		})
		// The man in the middle says yes to whatever it is shown.
		wg.Go(func() { Listen(t.Context(), m1, fakeB, dhFakeB, says(true), RunOptions{Rand: seeded(3)}) })
		wg.Go(func() { Dial(t.Context(), m2, bc.LocalAddr(), fakeA, dhFakeA, says(true), RunOptions{Rand: seeded(4)}) })
		wg.Wait()

		if s.codes[0] == "" || s.codes[0] == s.codes[1] {
			t.Errorf("A shows %q, B shows %q: want two different codes", s.codes[0], s.codes[1])
		}
		if !errors.Is(a.err, ErrRejected) || !errors.Is(b.err, ErrRejected) {
			t.Errorf("dial: %v, listen: %v; want ErrRejected on both", a.err, b.err)
		}
		if a.peer != (Info{}) || b.peer != (Info{}) {
			t.Errorf("stored %+v and %+v", a.peer, b.peer)
		}
	})
}

// relay forwards datagrams between A (whoever writes first) and B through
// c, passing each through edit first; it stops when c is closed.
func relay(c net.PacketConn, b net.Addr, edit func(b []byte, toB bool)) {
	buf := make([]byte, 1500)
	var a net.Addr
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		d := append([]byte(nil), buf[:n]...)
		toB := from.String() != b.String()
		if toB {
			a = from
		}
		edit(d, toB)
		if toB {
			c.WriteTo(d, b)
		} else if a != nil {
			c.WriteTo(d, a)
		}
	}
}

// Changing bytes in flight instead of running two pairings: A's check of
// Nb against Cb (step 4) catches it, A ends with ErrCommitment and tells B
// no, so B stores nothing either.
func TestTamperingFailsTheCommitment(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(b []byte, toB bool)
	}{
		{"keys swapped in hello and commit", func(b []byte, toB bool) {
			if len(b) > HeaderLen+KeyLen && (b[offStep] == byte(StepHello) || b[offStep] == byte(StepCommit)) {
				b[HeaderLen] ^= 0xff // another public key in each direction
			}
		}},
		{"Nb replaced in the reveal", func(b []byte, toB bool) {
			if !toB && b[offStep] == byte(StepReveal) {
				b[HeaderLen] ^= 1
			}
		}},
		{"B's name changed in the commit", func(b []byte, toB bool) {
			if !toB && b[offStep] == byte(StepCommit) {
				b[HeaderLen+KeyLen+3] = 'X'
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := netsim.NewNetwork(netsim.Config{Delay: 5 * time.Millisecond})
				bc, _ := n.Listen("10.0.0.2:7575")
				ac, _ := n.Listen("10.0.0.1:40000")
				pc, _ := n.Listen("10.0.0.3:7575")
				go relay(pc, bc.LocalAddr(), tc.edit)
				defer pc.Close()
				a, b := pairOver(t, bc, ac, pc.LocalAddr(), says(true), says(true), Options{})
				if !errors.Is(a.err, ErrCommitment) {
					t.Errorf("dial: %v, want ErrCommitment", a.err)
				}
				if !errors.Is(b.err, ErrRejected) {
					t.Errorf("listen: %v, want ErrRejected (A told it no)", b.err)
				}
				if a.peer != (Info{}) || b.peer != (Info{}) {
					t.Errorf("stored %+v and %+v", a.peer, b.peer)
				}
			})
		})
	}
}

// A forwarder on the path that turns the listener's "no" into a "yes"
// (over real loopback UDP): the confirm's MAC is the listener's, which the
// forwarder cannot make, so the dialer does not take the changed answer
// and stores nothing; it ends when the listener's no gets through
// unchanged (ErrRejected), or at its timeout if none does. The listener
// said no: it stores nothing either.
func TestFlippedAnswerIsNotTaken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flips int // how many of the listener's confirms are changed
		want  error
	}{
		{"the first no flipped", 1, ErrRejected},
		{"every no flipped", 1 << 30, ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc, dc, fc := udp(t), udp(t), udp(t)
			var mu sync.Mutex
			flipped := 0
			go relay(fc, lc.LocalAddr(), func(b []byte, toB bool) {
				mu.Lock()
				defer mu.Unlock()
				if !toB && len(b) == ConfirmLen && b[offStep] == byte(StepConfirm) && Answer(b[HeaderLen]) == No && flipped < tc.flips {
					b[HeaderLen] = byte(Yes)
					flipped++
				}
			})
			opts := Options{Timeout: 3 * time.Second, Linger: time.Second}
			a, b := pairOver(t, lc, dc, fc.LocalAddr(), says(true), says(false), opts)
			mu.Lock()
			n := flipped
			mu.Unlock()
			if n == 0 {
				t.Fatal("the forwarder changed no confirm: the test tests nothing")
			}
			if a.err == nil || a.peer != (Info{}) {
				t.Errorf("the dialer took the changed answer: stored %+v (err %v)", a.peer, a.err)
			} else if !errors.Is(a.err, tc.want) {
				t.Errorf("dial: %v, want %v", a.err, tc.want)
			}
			if !errors.Is(b.err, ErrRejected) || b.peer != (Info{}) {
				t.Errorf("listen: %+v, %v; want ErrRejected, nothing stored", b.peer, b.err)
			}
			t.Logf("%d confirms changed; dial: %v; listen: %v", n, a.err, b.err)
		})
	}
}
