package sender_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

const receiverAddr = "10.0.0.2:7575"

// notice is a version notice from a receiver that speaks speaks (its own
// version the newest), echoing session.
func notice(t *testing.T, session uint64, speaks ...uint8) []byte {
	t.Helper()
	b, err := (&wire.Notice{Version: speaks[len(speaks)-1], Session: session, Counter: 1, Speaks: speaks}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCoreNamesReceiverOfOtherVersion (PROTOCOL.md §10): a version notice
// from a receiver of version wire.Version+1 is no ack and no error: the
// receiver is named once, with both versions, and Peers shows what it
// speaks, never live. Another packet of another version for this session
// counts as a notice of its version byte; one for another session, or a
// notice that names our version, is an error.
func TestCoreNamesReceiverOfOtherVersion(t *testing.T) {
	var logs []string
	r := newRig(t, sender.CoreConfig{Feedback: true, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	r.c.Start(t0)
	for i := range 3 {
		if err := r.c.Ack(notice(t, 0x1234, wire.Version+1), receiverAddr, at(ms(float64(10+i)))); err != nil {
			t.Fatalf("notice %d: %v", i, err)
		}
	}
	want := fmt.Sprintf("receiver at %s speaks keyrelay protocol version %d; this sender speaks %d: install the same keyrelay release on both machines", receiverAddr, wire.Version+1, wire.Version)
	if got := strings.Join(logs, "\n"); got != want {
		t.Errorf("log:\n%s\nwant (once):\n%s", got, want)
	}
	st := r.c.Stats()
	if st.Mismatched != 3 || st.Acks != 0 || st.AckErrors != 0 {
		t.Errorf("stats %+v: want 3 of another version, no ack, no ack error", st)
	}
	p := r.peer(at(ms(20)))
	if p.Addr != receiverAddr || fmt.Sprint(p.Speaks) != fmt.Sprint([]uint8{wire.Version + 1}) || p.Live || !p.LastHeard.IsZero() {
		t.Errorf("peer %+v: want the receiver speaking %d, never heard, not live", p, wire.Version+1)
	}

	// An ack of another version (no notice) for this session: its version
	// byte is what it speaks, and the change is named.
	a := wire.Ack{Header: wire.Header{Type: wire.TypeAck, Flags: wire.FlagOneWay, Session: 0x1234, Counter: 1}, Newest: 1}
	ab, _ := a.Append(nil)
	ab[2] = wire.Version - 1
	if err := r.c.Ack(ab, receiverAddr, at(ms(30))); err != nil {
		t.Fatal(err)
	}
	if p := r.peer(at(ms(30))); fmt.Sprint(p.Speaks) != fmt.Sprint([]uint8{wire.Version - 1}) || len(logs) != 2 || !strings.Contains(logs[1], fmt.Sprintf("protocol version %d;", wire.Version-1)) {
		t.Errorf("peer %+v, log %q", p, logs)
	}

	for name, b := range map[string][]byte{
		"another session's notice":    notice(t, 0x9999, wire.Version+1),
		"a notice naming ours":        notice(t, 0x1234, wire.Version, wire.Version+1),
		"a malformed notice":          append(notice(t, 0x1234, wire.Version+1), 0),
		"another session's old ack":   append([]byte("KR\x01\x02\x00\x00"), make([]byte, 30)...),
		"a short packet of version 9": []byte("KR\x09"),
		// A handshaken packet's compact header has no session id to echo
		// (PROTOCOL.md §10.2): the notices that name a receiver answer
		// initiations.
		"a notice answering a compact header": echoOf(t, append(wire.Header{Type: wire.TypeQueue, Flags: wire.FlagSealed, Index: 0x7a18f2bb, Counter: 3}.Append(nil), make([]byte, 30)...), wire.Version+1),
	} {
		before := r.c.Stats().AckErrors
		if err := r.c.Ack(b, "10.0.0.3:7575", at(ms(40))); err == nil || r.c.Stats().AckErrors != before+1 {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	if len(r.c.Peers(nil, at(ms(40)))) != 1 || len(logs) != 2 {
		t.Errorf("a rejected datagram made a peer or a log line: %q", logs)
	}

	// Once the receiver acks (it was replaced by one of our version), the
	// old notice is history.
	r.ack(at(ms(50)), 1, 0, 0, 0)
	if p := r.peer(at(ms(50))); p.Speaks != nil || !p.Live {
		t.Errorf("after an ack: %+v", p)
	}
}

// TestCoreVersionNoticeChangesNothingElse (PROTOCOL.md §10): a notice
// (forged or not) changes nothing of what the sender sends, or when: the
// same keys and end with notices arriving all along send the same packets
// at the same times as without, and end at the same time.
func TestCoreVersionNoticeChangesNothingElse(t *testing.T) {
	play := func(notices bool) ([]string, time.Time) {
		r := newRig(t, sender.CoreConfig{Feedback: true})
		r.c.Start(t0)
		for i := range 20 {
			now := at(ms(float64(50 * i)))
			if notices {
				if err := r.c.Ack(notice(t, 0x1234, wire.Version+1), receiverAddr, now); err != nil {
					t.Fatal(err)
				}
			}
			for next := r.c.Next(); !next.After(now); next = r.c.Next() {
				r.c.Tick(next)
			}
			r.c.Key(kA, i%2 == 0, now)
		}
		r.c.Stop(at(ms(1000)), sender.SourceEnded)
		end := r.end()
		var got []string
		for i, q := range r.sent {
			got = append(got, fmt.Sprintf("%d %v %v", i, q.Clock, q.Events[0]))
		}
		return got, end
	}
	plain, plainEnd := play(false)
	noticed, noticedEnd := play(true)
	if strings.Join(plain, "\n") != strings.Join(noticed, "\n") || !plainEnd.Equal(noticedEnd) {
		t.Errorf("without notices (end +%v):\n%s\nwith (end +%v):\n%s", plainEnd.Sub(t0), strings.Join(plain, "\n"), noticedEnd.Sub(t0), strings.Join(noticed, "\n"))
	}
}

// echoOf is the notice a receiver of version v sends in answer to b: bytes
// 6–21 of b echoed (PROTOCOL.md §10).
func echoOf(t *testing.T, b []byte, v uint8) []byte {
	t.Helper()
	n := wire.Notice{Version: v, Session: binary.BigEndian.Uint64(b[6:]), Counter: binary.BigEndian.Uint64(b[14:]), Speaks: []uint8{v}}
	out, err := n.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
