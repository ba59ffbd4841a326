package handshake

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// simSender is the sender's use of the package as RekeyAfterTime's doc
// describes it: initiate when it has no live keypair or its keypair is due
// for rekeying, retry after RekeyTimeout, seal under its current keypair.
type simSender struct {
	init     *Initiator
	ring     Keyring
	counter  uint64
	lastInit time.Time
	acked    map[uint64]bool
}

// simReceiver answers initiations (sometimes under load), opens queue
// packets through its keyring and acks each under its current keypair.
type simReceiver struct {
	resp    *Responder
	ring    Keyring
	counter uint64
	opened  map[uint64]bool
}

type simNet struct {
	toReceiver, toSender [][]byte
}

func (s *simSender) step(n *simNet, now time.Time) error {
	cur := s.ring.Current(now)
	if cur == nil || cur.NeedsRekey(now) {
		if s.lastInit.IsZero() || now.Sub(s.lastInit) >= RekeyTimeout {
			s.counter++
			b, err := s.init.Initiate(nil, session, s.counter, now)
			if err != nil {
				return err
			}
			s.lastInit = now
			n.toReceiver = append(n.toReceiver, b)
		}
	}
	if cur != nil {
		s.counter++
		b, err := cur.Seal(nil, Header{Type: TypeQueue, Session: session, Counter: s.counter}, binary.BigEndian.AppendUint64(nil, s.counter), now)
		if err != nil {
			return err
		}
		n.toReceiver = append(n.toReceiver, b)
	}
	return nil
}

func (s *simSender) receive(b []byte, now time.Time) error {
	m, err := Parse(b)
	if err != nil {
		return err
	}
	h := m.Header
	switch h.Type {
	case TypeResponse:
		if k, err := s.init.ConsumeResponse(m.Response, now); err == nil {
			s.ring.Use(k)
			s.lastInit = time.Time{}
		}
	case TypeCookieReply:
		s.init.ConsumeCookieReply(m.CookieReply, now)
	case TypeAck:
		pt, _, err := s.ring.Open(nil, m.Transport, now)
		if err != nil {
			return nil // an old keypair, a duplicate: dropped
		}
		if s.acked[h.Counter] {
			return errors.New("an ack counter accepted twice")
		}
		if binary.BigEndian.Uint64(pt) != h.Counter {
			return errors.New("an ack opened to another plaintext")
		}
		s.acked[h.Counter] = true
	}
	return nil
}

func (r *simReceiver) receive(n *simNet, b []byte, underLoad bool, now time.Time) error {
	m, err := Parse(b)
	if err != nil {
		return err
	}
	h := m.Header
	switch h.Type {
	case TypeInitiation:
		a, _ := r.resp.ConsumeInitiation(nil, m.Initiation, src, underLoad, now)
		if a.Keypair != nil {
			r.ring.Begin(a.Keypair)
		}
		if len(a.Packet) > 0 {
			n.toSender = append(n.toSender, a.Packet)
		}
	case TypeQueue:
		pt, _, err := r.ring.Open(nil, m.Transport, now)
		if err != nil {
			if errors.Is(err, ErrReplay) || errors.Is(err, ErrIndex) {
				return nil
			}
			return err
		}
		if r.opened[h.Counter] {
			return errors.New("a queue counter accepted twice")
		}
		if binary.BigEndian.Uint64(pt) != h.Counter {
			return errors.New("a queue packet opened to another plaintext")
		}
		r.opened[h.Counter] = true
		r.counter++
		ack, err := r.ring.Current(now).Seal(nil, Header{Type: TypeAck, Session: session, Counter: r.counter}, binary.BigEndian.AppendUint64(nil, r.counter), now)
		if err != nil {
			return err
		}
		n.toSender = append(n.toSender, ack)
	}
	return nil
}

// TestHandshakeOverBadNetwork: a sender and a receiver running handshakes
// and transport across a network that drops, duplicates, reorders and
// delays for minutes (rekeys included), the receiver sometimes under load,
// never accept a counter twice nor a packet that opens to the wrong
// plaintext, and once the network is good again they agree on a keypair
// within a few rounds (RekeyAfterTime's doc, WireGuard paper §6).
func TestHandshakeOverBadNetwork(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := newPair(t, byte(rapid.IntRange(0, 200).Draw(rt, "seed")))
		s := &simSender{init: p.init, acked: map[uint64]bool{}}
		r := &simReceiver{resp: p.resp, opened: map[uint64]bool{}}
		r.resp.cfg.IndexTaken = func(i uint32) bool { return slices.Contains(r.ring.Indices(), i) }
		var n simNet
		now := t0
		fail := func(err error) {
			if err != nil {
				rt.Fatal(err)
			}
		}
		pick := func(q *[][]byte, keep bool) []byte {
			i := rapid.IntRange(0, len(*q)-1).Draw(rt, "which")
			b := (*q)[i]
			if !keep {
				*q = slices.Delete(*q, i, i+1)
			}
			return b
		}
		for range rapid.IntRange(1, 300).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0, 1:
				fail(s.step(&n, now))
			case 2, 3, 4:
				if len(n.toReceiver) > 0 {
					dup := rapid.IntRange(0, 4).Draw(rt, "dup") == 0
					fail(r.receive(&n, pick(&n.toReceiver, dup), rapid.IntRange(0, 3).Draw(rt, "load") == 0, now))
				}
			case 5, 6:
				if len(n.toSender) > 0 {
					dup := rapid.IntRange(0, 4).Draw(rt, "dup") == 0
					fail(s.receive(pick(&n.toSender, dup), now))
				}
			case 7:
				if len(n.toReceiver) > 0 {
					pick(&n.toReceiver, false)
				}
				if len(n.toSender) > 0 && rapid.Bool().Draw(rt, "drop ack") {
					pick(&n.toSender, false)
				}
			default:
				now = now.Add(time.Duration(rapid.IntRange(0, 90_000).Draw(rt, "ms")) * time.Millisecond)
			}
		}
		// The network heals: what is in flight arrives, in order, and the
		// sender goes on; within a few rounds of RekeyTimeout both ends
		// use the same keypair.
		drain := func() {
			for len(n.toReceiver) > 0 || len(n.toSender) > 0 {
				for len(n.toReceiver) > 0 {
					b := n.toReceiver[0]
					n.toReceiver = n.toReceiver[1:]
					fail(r.receive(&n, b, false, now))
				}
				for len(n.toSender) > 0 {
					b := n.toSender[0]
					n.toSender = n.toSender[1:]
					fail(s.receive(b, now))
				}
			}
		}
		agree := func() bool {
			sc, rc := s.ring.Current(now), r.ring.Current(now)
			return sc != nil && rc != nil && sc.Remote == rc.Local && rc.Remote == sc.Local
		}
		drain()
		for range 3 {
			if agree() {
				return
			}
			fail(s.step(&n, now))
			drain()
			if agree() {
				return
			}
			now = now.Add(RekeyTimeout)
		}
		rt.Fatalf("no agreement: sender %+v receiver %+v", s.ring.Current(now), r.ring.Current(now))
	})
}
