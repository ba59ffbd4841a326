package pair

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

const (
	addrA = "10.0.0.1:40000"
	addrB = "10.0.0.2:7575"
)

var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// cores is a dialer and a listener at t0, nothing delivered yet.
func cores(t testing.TB, opts Options) (a, b *Core) {
	t.Helper()
	a, err := NewDialer(infoA, dhA, addrB, seeded(1), t0, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err = NewListener(infoB, dhB, seeded(2), t0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// pass delivers everything each core queued to the other at now, until
// neither has anything to send.
func pass(a, b *Core, now time.Time) {
	for {
		outA, outB := a.Take(), b.Take()
		if len(outA) == 0 && len(outB) == 0 {
			return
		}
		for _, d := range outA {
			b.Handle(now, d, addrA)
		}
		for _, d := range outB {
			a.Handle(now, d, addrB)
		}
	}
}

// confirmBy is confirm m as c makes it, with c's MAC.
func confirmBy(c *Core, m Message) []byte {
	copy(m.MAC[:], c.confirmMAC(c.dialer, &m))
	b, _ := m.Append(nil)
	return b
}

func step(t *testing.T, b []byte) Step {
	t.Helper()
	var m Message
	if err := Parse(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Step
}

// Steps 1-4 with nothing lost: both know the same code, and neither sends
// anything while the people compare.
func TestCoreReachesTheCode(t *testing.T) {
	a, b := cores(t, Options{})
	pass(a, b, t0)
	ca, pa := a.Code()
	cb, pb := b.Code()
	if a.Phase() != Comparing || b.Phase() != Comparing {
		t.Fatalf("phases %v %v, want Comparing", a.Phase(), b.Phase())
	}
	if ca != cb || pa != infoB || pb != infoA {
		t.Errorf("A: %s with %q, B: %s with %q", ca, pa.Name, cb, pb.Name)
	}
	a.Tick(t0.Add(time.Minute))
	b.Tick(t0.Add(time.Minute))
	if n := len(a.Take()) + len(b.Take()); n != 0 {
		t.Errorf("%d datagrams sent while the people compare", n)
	}
}

// Each side's decision on a message, out of order, duplicated or
// contradicting what came before (package doc, "Reliability").
func TestCoreDecisions(t *testing.T) {
	other := func(m Message) []byte { b, _ := m.Append(nil); return b }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, a, b *Core)
	}{
		{"a resent hello gets the same commit", func(t *testing.T, a, b *Core) {
			hello := a.Take()[0]
			b.Handle(t0, hello, addrA)
			first := b.Take()
			b.Handle(t0, hello, addrA)
			again := b.Take()
			if len(again) != 1 || !bytes.Equal(again[0], first[0]) || step(t, again[0]) != StepCommit {
				t.Errorf("answered %d datagrams, want the same commit", len(again))
			}
		}},
		{"a resent Na gets the same reveal", func(t *testing.T, a, b *Core) {
			b.Handle(t0, a.Take()[0], addrA)
			a.Handle(t0, b.Take()[0], addrB)
			nonce := a.Take()[0]
			b.Handle(t0, nonce, addrA)
			first := b.Take()
			b.Handle(t0, nonce, addrA)
			again := b.Take()
			if len(again) != 1 || !bytes.Equal(again[0], first[0]) || step(t, again[0]) != StepReveal {
				t.Errorf("answered %d datagrams, want the same reveal", len(again))
			}
		}},
		{"a second Na gets no second reveal", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			code, _ := b.Code()
			b.Handle(t0, other(Message{Step: StepNonce, ID: a.id, Nonce: [NonceLen]byte{9}}), addrA)
			if out := b.Take(); len(out) != 0 || b.Stats().Unexpected != 1 {
				t.Errorf("answered %d datagrams, %+v", len(out), b.Stats())
			}
			if c, _ := b.Code(); c != code {
				t.Errorf("the code changed from %s to %s", code, c)
			}
		}},
		{"a second, different commit is ignored", func(t *testing.T, a, b *Core) {
			b.Handle(t0, a.Take()[0], addrA)
			a.Handle(t0, b.Take()[0], addrB)
			a.Take()
			a.Handle(t0, other(Message{Step: StepCommit, ID: a.id, Info: infoB, Commit: [32]byte{1}}), addrB)
			if a.commit == ([32]byte{1}) || a.Stats().Unexpected != 1 {
				t.Errorf("took the second commit, %+v", a.Stats())
			}
		}},
		{"another pairing id is ignored", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			b.Handle(t0, other(Message{Step: StepConfirm, ID: [IDLen]byte{1}, Answer: No}), addrA)
			if b.Phase() != Comparing || b.Stats().OtherPairing != 1 {
				t.Errorf("phase %v, %+v", b.Phase(), b.Stats())
			}
		}},
		{"another address is ignored once the listener is taken", func(t *testing.T, a, b *Core) {
			hello := a.Take()[0]
			b.Handle(t0, hello, addrA)
			b.Handle(t0, hello, "10.0.0.66:1")
			if b.PeerAddr() != addrA || b.Stats().OtherAddress != 1 || len(b.Take()) != 1 {
				t.Errorf("peer %s, %+v", b.PeerAddr(), b.Stats())
			}
		}},
		{"garbage is ignored", func(t *testing.T, a, b *Core) {
			b.Handle(t0, []byte("KR\x04\x01junk"), addrA)
			if b.Phase() != Waiting || b.PeerAddr() != "" || b.Stats().Malformed != 1 {
				t.Errorf("phase %v, peer %q, %+v", b.Phase(), b.PeerAddr(), b.Stats())
			}
		}},
		{"a confirm before the code is ignored", func(t *testing.T, a, b *Core) {
			b.Handle(t0, a.Take()[0], addrA)
			b.Handle(t0, other(Message{Step: StepConfirm, ID: a.id, Answer: No}), addrA)
			if b.Phase() != Waiting || b.Stats().Unexpected != 1 {
				t.Errorf("phase %v, %+v", b.Phase(), b.Stats())
			}
		}},
		{"a peer's answer cannot change", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			b.Handle(t0, confirmBy(a, Message{Step: StepConfirm, ID: a.id, Answer: Yes}), addrA)
			b.Handle(t0, confirmBy(a, Message{Step: StepConfirm, ID: a.id, Answer: No}), addrA)
			if b.theirs != Yes || b.Stats().Unexpected != 1 {
				t.Errorf("theirs %v, %+v", b.theirs, b.Stats())
			}
		}},
		{"a peer cannot have an answer not given", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			b.Handle(t0, confirmBy(a, Message{Step: StepConfirm, ID: a.id, Answer: Yes, Have: HaveBoth}), addrA)
			if b.theirs != 0 || b.Stats().Unexpected != 1 {
				t.Errorf("theirs %v, %+v", b.theirs, b.Stats())
			}
		}},
		{"a yes without the peer's MAC is not taken", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			// Made by someone who knows all the exchange showed (id,
			// both Infos, both nonces) but neither private key.
			outsider, _ := keyed("outsider", 0x55, 1)
			m := Message{Step: StepConfirm, ID: a.id, Answer: Yes}
			k := ConfirmKey([KeyLen]byte(outsider.Key), a.id, infoA, infoB, a.na, a.nb)
			copy(m.MAC[:], ConfirmMAC(k, true, m.ID, m.Answer, m.Have))
			b.Handle(t0, other(m), addrA)
			b.Handle(t0, other(Message{Step: StepConfirm, ID: a.id, Answer: Yes}), addrA)
			// B's own confirm sent back as A's.
			b.Answer(t0, true)
			for _, d := range b.Take() {
				b.Handle(t0, d, addrA)
			}
			if b.theirs != 0 || b.Stats().Forged != 3 {
				t.Errorf("theirs %v, %+v; want nothing taken, 3 forged", b.theirs, b.Stats())
			}
			// A's own yes is taken.
			a.Answer(t0, true)
			pass(a, b, t0)
			if _, err := b.Result(); err != nil {
				t.Errorf("after A's real yes: %v", err)
			}
		}},
		{"the peer's no ends the wait for the person here", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			a.Answer(t0, false)
			pass(a, b, t0)
			if b.Phase() != Done || a.Phase() != Done {
				t.Fatalf("phases %v %v, want Done", a.Phase(), b.Phase())
			}
			if _, err := b.Result(); !errors.Is(err, ErrRejected) {
				t.Errorf("B: %v", err)
			}
			b.Answer(t0, true) // the person here, too late
			if _, err := b.Result(); !errors.Is(err, ErrRejected) {
				t.Errorf("B after a late yes: %v", err)
			}
		}},
		{"both yes: both done with the other's Info", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			b.Answer(t0, true)
			a.Answer(t0, true)
			pass(a, b, t0)
			ia, errA := a.Result()
			ib, errB := b.Result()
			if errA != nil || errB != nil || ia != infoB || ib != infoA {
				t.Errorf("A: %q %v, B: %q %v", ia.Name, errA, ib.Name, errB)
			}
		}},
		{"a yes unacknowledged: done after Linger", func(t *testing.T, a, b *Core) {
			pass(a, b, t0)
			b.Answer(t0, true)
			a.Handle(t0, b.Take()[0], addrB)
			a.Answer(t0, true) // A knows both; its yes never reaches B
			for now := t0; a.Phase() != Done; now = a.Next() {
				if now.After(t0.Add(DefaultLinger)) {
					t.Fatalf("still %v at %v", a.Phase(), now.Sub(t0))
				}
				a.Tick(now)
			}
			if p, err := a.Result(); err != nil || p != infoB {
				t.Errorf("A: %q %v", p.Name, err)
			}
		}},
		{"Nb not matching Cb: aborted, and B told no", func(t *testing.T, a, b *Core) {
			b.Handle(t0, a.Take()[0], addrA)
			a.Handle(t0, b.Take()[0], addrB)
			b.Handle(t0, a.Take()[0], addrA)
			reveal := b.Take()[0]
			reveal[len(reveal)-1] ^= 1
			a.Handle(t0, reveal, addrB)
			if _, err := a.Result(); !errors.Is(err, ErrCommitment) {
				t.Fatalf("A: %v", err)
			}
			pass(a, b, t0)
			if _, err := b.Result(); b.Phase() != Finishing && !errors.Is(err, ErrRejected) {
				t.Errorf("B: phase %v, %v", b.Phase(), err)
			}
			if b.theirs != No {
				t.Errorf("B heard %v, want no", b.theirs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := cores(t, Options{})
			tc.run(t, a, b)
		})
	}
}

// The hello is resent 200 ms after it was sent, then after 400, 800 and
// 1000 ms each time, until AnswerTimeout ends the dialer with ErrNoAnswer.
func TestCoreResendBackoff(t *testing.T) {
	a, _ := cores(t, Options{})
	a.Take()
	var at []time.Duration
	for a.Phase() != Done {
		now := a.Next()
		a.Tick(now)
		for range a.Take() {
			at = append(at, now.Sub(t0))
		}
	}
	want := []time.Duration{200, 600, 1400, 2400, 3400, 4400}
	for i, w := range want {
		if i >= len(at) || at[i] != w*time.Millisecond {
			t.Fatalf("resent at %v, want it to start %v ms", at, want)
		}
	}
	if len(at) != 16 {
		t.Errorf("resent %d times in %v, want 16", len(at), DefaultAnswerTimeout)
	}
	if _, err := a.Result(); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("ended with %v", err)
	}
}

// What a timeout says, by where the pairing stood.
func TestCoreTimeoutSaysWhatItWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(a, b *Core) *Core
		want string
	}{
		{"no hello", func(a, b *Core) *Core { return b }, "no pairing request arrived within 2m0s"},
		{"the person here", func(a, b *Core) *Core { pass(a, b, t0); return b }, "the code was not confirmed here within 2m0s"},
		{"the person there", func(a, b *Core) *Core {
			pass(a, b, t0)
			b.Answer(t0, true)
			return b
		}, "alpha did not confirm the code within 2m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.run(cores(t, Options{}))
			for c.Phase() != Done {
				c.Tick(c.Next())
			}
			_, err := c.Result()
			if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrTimeout saying %q", err, tc.want)
			}
		})
	}
}

// A machine pairing with its own identity (a copied config) is named.
func TestCoreRefusesItsOwnKey(t *testing.T) {
	twin := infoB
	twin.Name = "twin"
	a, err := NewDialer(twin, dhB, addrB, seeded(1), t0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, b := cores(t, Options{})
	pass(a, b, t0)
	for _, c := range []*Core{a, b} {
		if _, err := c.Result(); !errors.Is(err, ErrSameKey) {
			t.Errorf("got %v, want ErrSameKey", err)
		}
	}
}

// inFlight is a datagram on its way in the property test's network.
type inFlight struct {
	b     []byte
	toB   bool
	order int
}

// Under any loss, duplication, reordering and timing of the answers, the
// pairing is safe: a side returns the peer's Info only if both people said
// yes, and then the codes they saw were equal; a no on either side ends
// both with ErrRejected. Once the network delivers again (before Linger
// runs out), both sides end, and agree.
func TestCorePropertySafeAndLive(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		a, err := NewDialer(infoA, dhA, addrB, seeded(byte(rapid.IntRange(0, 255).Draw(rt, "seedA"))), t0, Options{})
		if err != nil {
			rt.Fatal(err)
		}
		b, _ := NewListener(infoB, dhB, seeded(byte(rapid.IntRange(0, 255).Draw(rt, "seedB"))), t0, Options{})
		yesA, yesB := rapid.Bool().Draw(rt, "yesA"), rapid.Bool().Draw(rt, "yesB")
		answeredA, answeredB := false, false
		var codeA, codeB string
		var net []inFlight
		now := t0
		collect := func() {
			for _, d := range a.Take() {
				net = append(net, inFlight{d, true, len(net)})
			}
			for _, d := range b.Take() {
				net = append(net, inFlight{d, false, len(net)})
			}
		}
		deliver := func(i int) {
			d := net[i]
			if d.toB {
				b.Handle(now, d.b, addrA)
			} else {
				a.Handle(now, d.b, addrB)
			}
		}
		answer := func(c *Core, yes bool, answered *bool, code *string) {
			if c.Phase() == Comparing && !*answered {
				*answered = true
				*code, _ = c.Code()
				c.Answer(now, yes)
			}
		}
		collect()
		// The lossy part: at most 3 s, so Linger (5 s) cannot run out in it.
		for range rapid.IntRange(0, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1: // deliver one, in any order
				if len(net) > 0 {
					i := rapid.IntRange(0, len(net)-1).Draw(rt, "i")
					deliver(i)
					net = append(net[:i], net[i+1:]...)
				}
			case 2: // deliver a copy, keeping the datagram in flight
				if len(net) > 0 {
					deliver(rapid.IntRange(0, len(net)-1).Draw(rt, "dup"))
				}
			case 3: // lose one
				if len(net) > 0 {
					i := rapid.IntRange(0, len(net)-1).Draw(rt, "lost")
					net = append(net[:i], net[i+1:]...)
				}
			case 4:
				if rapid.Bool().Draw(rt, "who") {
					answer(a, yesA, &answeredA, &codeA)
				} else {
					answer(b, yesB, &answeredB, &codeB)
				}
			case 5:
				next := now.Add(time.Duration(rapid.IntRange(0, 300).Draw(rt, "dt")) * time.Millisecond)
				if next.Sub(t0) <= 3*time.Second {
					now = next
					a.Tick(now)
					b.Tick(now)
				}
			}
			collect()
		}
		// The network delivers everything, in order, and the people answer.
		for i := 0; a.Phase() != Done || b.Phase() != Done; i++ {
			if i > 1000 {
				rt.Fatalf("no end: A %v, B %v", a.Phase(), b.Phase())
			}
			answer(a, yesA, &answeredA, &codeA)
			answer(b, yesB, &answeredB, &codeB)
			collect()
			for len(net) > 0 {
				deliver(0)
				net = net[1:]
				collect()
				answer(a, yesA, &answeredA, &codeA)
				answer(b, yesB, &answeredB, &codeB)
				collect()
			}
			now = earliestOf(a.Next(), b.Next())
			a.Tick(now)
			b.Tick(now)
			collect()
		}
		peerA, errA := a.Result()
		peerB, errB := b.Result()
		if yesA && yesB {
			if errA != nil || errB != nil || peerA != infoB || peerB != infoA {
				rt.Fatalf("both said yes: A %q %v, B %q %v", peerA.Name, errA, peerB.Name, errB)
			}
			if codeA != codeB {
				rt.Fatalf("paired with codes %s and %s", codeA, codeB)
			}
			return
		}
		if !errors.Is(errA, ErrRejected) || !errors.Is(errB, ErrRejected) {
			rt.Fatalf("A said yes %v, B %v: A %q %v, B %q %v", yesA, yesB, peerA.Name, errA, peerB.Name, errB)
		}
	})
}

func earliestOf(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// FuzzHandle: no datagram makes a core panic, at any step of a pairing,
// and none makes it return a peer without both answers. Seeded with the
// golden messages.
func FuzzHandle(f *testing.F) {
	for _, g := range goldenMessages() {
		enc, _ := g.m.Append(nil)
		f.Add(enc, uint8(0))
	}
	// And the messages of the fuzzed cores' own pairing, at each step.
	a, l := cores(f, Options{})
	hello := a.Take()[0]
	l.Handle(t0, hello, addrA)
	commit := l.Take()[0]
	a.Handle(t0, commit, addrB)
	nonce := a.Take()[0]
	l.Handle(t0, nonce, addrA)
	reveal := l.Take()[0]
	a.Handle(t0, reveal, addrB)
	yes := confirmBy(a, Message{Step: StepConfirm, ID: a.id, Answer: Yes})
	for i, b := range [][]byte{hello, commit, nonce, reveal, yes} {
		f.Add(b, uint8(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint8) {
		a, l := cores(t, Options{})
		// at picks the step the pairing has reached: 0 nothing delivered,
		// 1 the hello, 2 its commit too, 3 Na too, 4 everything.
		outs := [][]byte{}
		for range at % 5 {
			if len(outs) == 0 {
				outs = a.Take()
			}
			if len(outs) == 0 {
				break
			}
			var m Message
			if Parse(outs[0], &m) == nil && (m.Step == StepHello || m.Step == StepNonce) {
				l.Handle(t0, outs[0], addrA)
				outs = append(outs[1:], l.Take()...)
			} else {
				a.Handle(t0, outs[0], addrB)
				outs = append(outs[1:], a.Take()...)
			}
		}
		for _, c := range []*Core{a, l} {
			for _, from := range []string{addrA, addrB} {
				c.Handle(t0, b, from)
				if p, err := c.Result(); err == nil && p != (Info{}) {
					t.Fatalf("returned %q without any answer", p.Name)
				}
			}
		}
	})
}
