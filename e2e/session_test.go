//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DESIGN.md invariant 9, end to end: a session belongs to one sender and one
// receiver instance (PROTOCOL.md §8). Nothing recorded on the wire types
// into a restarted receiver or into another receiver with the same key, nor
// ends or stalls a live session there; and a sender follows a restarted
// receiver at once. The tests know nothing of the wire format: a recording
// relay written here forwards and records datagrams and plays them back byte
// for byte, as an attacker on the path would.

// datagram is one datagram the relay saw on its way to the receiver, and
// when.
type datagram struct {
	at time.Time
	b  []byte
}

// relay is a recording UDP proxy: senders send to its front address; it
// forwards each datagram to the receiver from its back socket (so that
// socket's address is, for the receiver, the sender's), records it with its
// time, and forwards the receiver's replies back to the last sender heard.
// replay sends a recording from the back socket, as an attacker who owns
// (or spoofs) the sender's address would.
type relay struct {
	t      *testing.T
	front  *net.UDPConn
	back   *net.UDPConn
	target *net.UDPAddr

	mu     sync.Mutex
	client *net.UDPAddr
	rec    []datagram
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	to, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	front, err := net.ListenUDP("udp", lo)
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.ListenUDP("udp", lo)
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{t: t, front: front, back: back, target: to}
	t.Cleanup(func() { front.Close(); back.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			r.mu.Lock()
			r.client = from
			r.rec = append(r.rec, datagram{time.Now(), b})
			r.mu.Unlock()
			back.WriteToUDP(b, to)
		}
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := back.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			c := r.client
			r.mu.Unlock()
			if c != nil {
				front.WriteToUDP(buf[:n], c)
			}
		}
	}()
	return r
}

// addr is where senders send.
func (r *relay) addr() string { return r.front.LocalAddr().String() }

// recording is every datagram the relay forwarded to the receiver so far.
func (r *relay) recording() []datagram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]datagram(nil), r.rec...)
}

// replay sends rec to the receiver from the relay's back socket: from the
// address the receiver knows as its sender's.
func (r *relay) replay(rec []datagram) { replayFrom(r.t, r.back, r.target, rec) }

// replayFrom sends rec to to from conn, as fast as it was recorded: each
// datagram at the same offset from the first as when it was recorded.
func replayFrom(t *testing.T, conn *net.UDPConn, to *net.UDPAddr, rec []datagram) {
	t.Helper()
	if len(rec) == 0 {
		t.Fatal("nothing recorded to replay")
	}
	start := time.Now()
	for _, d := range rec {
		// Pacing the replay, not waiting for an event.
		time.Sleep(time.Until(start.Add(d.at.Sub(rec[0].at))))
		if _, err := conn.WriteToUDP(d.b, to); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
}

// recordSession relays a sender typing text to a fresh receiver through a
// relay, and returns the relay (its recording holds the whole session, the
// sender's linger included), the session id (as the receiver's log names it)
// and the receiver, still running, on a port of reservePort's (a restarted
// receiver may take it over). It fails unless the receiver typed the text:
// the recording is of a working session. env is added to both processes'
// environment.
func recordSession(t *testing.T, text string, env []string) (*relay, string, *proc) {
	t.Helper()
	recv := startWithEnv(t, env, "recv", "--inject", "log", "--listen", reservePort(t), "--key-file", keyFile)
	rl := newRelay(t, recv.addr)
	code, _, stderr := runIn(t, "", env, "send", "--to", rl.addr(), "--key-file", keyFile, "--script", script(t, fmt.Sprintf("pace 20ms\ntype %q\n", text)))
	if code != 0 {
		t.Fatalf("recording: send exited %d:\n%s", code, stderr)
	}
	var want []string
	for _, r := range text {
		want = append(want, typed(r)+" down", typed(r)+" up")
	}
	var got []string
	id := ""
	for range want {
		l, ok := recv.next(5 * time.Second)
		if !ok {
			break
		}
		got = append(got, l.String())
		id = l.Session
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recording: the receiver the session was made for logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return rl, id, recv
}

// keyLines are the key events of a log: every line but lock settings.
func keyLines(ls []line) []line {
	var out []line
	for _, l := range ls {
		if l.Action == "down" || l.Action == "up" {
			out = append(out, l)
		}
	}
	return out
}

// settle waits up to wait for recv's next line (anything a replay types
// shows within recv's --timeout, 1 s, of the replay's last datagram), then
// stops recv and returns every key line it printed from now on.
func settle(recv *proc, wait time.Duration) []line {
	var ls []line
	if l, ok := recv.next(wait); ok {
		ls = append(ls, l)
	}
	return keyLines(append(ls, recv.stop()...))
}

// describe lists key lines with their sessions, for failure messages.
func describe(ls []line) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprintf("%v [session %s]", l, l.Session)
	}
	return strings.Join(s, ", ")
}

// TestReplayIntoRestartedReceiver (PROTOCOL.md §8, DESIGN.md invariant 9): a
// session recorded on the wire, replayed byte for byte from the sender's own
// address into a receiver restarted on the same port, types nothing there:
// the new receiver instance's freshness is not in the recording (PROTOCOL.md
// §8.3). At ages 0 s (at once after the session) and 5 s, well within
// --max-skew (30 s), the only bound a one-way session has (PROTOCOL.md
// §8.6); longer ages are covered by
// relaytest.TestRecordingIsUselessAtARestartedReceiver with injected clocks.
func TestReplayIntoRestartedReceiver(t *testing.T) {
	t.Parallel()
	// The race detector's runtime waits a second before a process exits
	// (GORACE atexit_sleep_ms): without that wait send exits, and the old
	// receiver is gone, at once, so age 0 is a replay at once after the
	// session's last datagram. (For this test's processes only: a parallel
	// test cannot t.Setenv.)
	env := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	for _, age := range []time.Duration{0, 5 * time.Second} {
		t.Run(fmt.Sprintf("age %v", age), func(t *testing.T) {
			const text = "secret"
			rl, id, old := recordSession(t, text, env)
			rec := rl.recording()
			recorded := rec[len(rec)-1].at.Sub(rec[0].at)
			// A new receiver instance on the same address: a restart (a
			// crash, so that age 0 is as near 0 as it gets).
			old.cmd.Process.Kill()
			old.wait(5 * time.Second)
			recv := startWithEnv(t, env, "recv", "--inject", "log", "--listen", old.addr, "--key-file", keyFile)
			// Let the recording age: wall time passing, not an event.
			time.Sleep(time.Until(rec[len(rec)-1].at.Add(age)))
			replayed := time.Now()
			rl.replay(rec)
			if got := settle(recv, 1500*time.Millisecond); len(got) > 0 {
				var downs []string
				for _, l := range got {
					if l.Action == "down" {
						downs = append(downs, l.Key)
					}
				}
				t.Errorf("a recording of session %s (%d datagrams over %v, typing %q), replayed from the sender's address %v after it ended into a receiver restarted on %s, typed %d key events there (DESIGN.md invariant 9: a recording injects nothing into a restarted receiver, at any age; PROTOCOL.md §8): key-downs %s; all: %s\nrecv:\n%s",
					id, len(rec), recorded.Round(time.Millisecond), text, replayed.Sub(rec[len(rec)-1].at).Round(100*time.Millisecond), old.addr,
					len(got), strings.Join(downs, " "), describe(got), recv.stderr)
			}
		})
	}
}

// TestCrossReceiverReplay (PROTOCOL.md §8, DESIGN.md invariant 9): two
// receivers with the same key; a session recorded on its way to B, replayed
// into A, types nothing there, whether it comes (a) from an address A has
// never heard or (b) from the address of A's live sender while that sender
// holds a key: then A's live session goes on, its held key is not released
// (not "session-end"), and what the live sender types after the replay
// arrives and is acknowledged.
func TestCrossReceiverReplay(t *testing.T) {
	t.Parallel()
	const evil = "evil"
	toB, idB, recvB := recordSession(t, evil, nil)
	recvB.stop()
	rec := toB.recording()

	t.Run("from another address", func(t *testing.T) {
		recvA := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--key-file", keyFile)
		to, err := net.ResolveUDPAddr("udp", recvA.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var replies atomic.Int64
		go func() {
			buf := make([]byte, 65536)
			for {
				if _, _, err := conn.ReadFromUDP(buf); err != nil {
					return
				}
				replies.Add(1)
			}
		}()
		replayFrom(t, conn, to, rec)
		if got := settle(recvA, 1500*time.Millisecond); len(got) > 0 {
			t.Errorf("session %s, recorded on its way to receiver B (typing %q), replayed into receiver A (same key) from %s typed %d key events at A (DESIGN.md invariant 9: a recording made for B injects nothing at A; PROTOCOL.md §8): %s; A sent %d datagrams back to the replaying socket\nrecv A:\n%s",
				idB, evil, conn.LocalAddr(), len(got), describe(got), replies.Load(), recvA.stderr)
		}
	})

	t.Run("from the live sender's address", func(t *testing.T) {
		recvA := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--key-file", keyFile)
		relA := newRelay(t, recvA.addr)
		// The recording lasts about a second (typing, then send's
		// linger); the live sender holds KeyX well past the replay,
		// then types.
		const after = "still here"
		live := start(t, "send", "--to", relA.addr(), "--key-file", keyFile, "--script",
			script(t, fmt.Sprintf("down KeyX\nsleep 4s\nup KeyX\npace 20ms\ntype %q\n", after)))
		first, ok := recvA.next(10 * time.Second)
		if !ok || first.String() != "KeyX down" {
			t.Fatalf("A's live sender: first line %v (ok %v), want KeyX down\n%s", first, ok, recvA.stderr)
		}
		liveID := first.Session
		replayed := time.Now()
		// From the relay's back socket: the address A knows as its live
		// sender's.
		relA.replay(rec)
		replayEnd := time.Now()
		code := live.wait(30 * time.Second)
		// The live sender's final state is acknowledged before it exits,
		// so every line it causes is out by now.
		got := append([]line{first}, recvA.stop()...)
		keysGot := keyLines(got)
		var bad []line
		for _, l := range keysGot {
			if l.Session != liveID {
				bad = append(bad, l)
			}
		}
		if len(bad) > 0 {
			t.Errorf("session %s, recorded on its way to receiver B (typing %q), replayed into receiver A from its live sender's address typed %d key events at A (DESIGN.md invariant 9; PROTOCOL.md §8): %s",
				idB, evil, len(bad), describe(bad))
		}
		for _, l := range keysGot {
			if l.Session == liveID && l.Reason != "" {
				t.Errorf("A's live session %s was disturbed by the replay (DESIGN.md invariant 9: nothing but a session's own sender can end or stall it): %v %v after the replay began (the replay took %v)",
					liveID, l, l.at.Sub(replayed).Round(10*time.Microsecond), replayEnd.Sub(replayed).Round(time.Millisecond))
			}
		}
		want := []string{"KeyX down", "KeyX up"}
		for _, r := range after {
			want = append(want, typed(r)+" down", typed(r)+" up")
		}
		var liveGot []string
		for _, l := range keysGot {
			if l.Session == liveID {
				liveGot = append(liveGot, l.String())
			}
		}
		if g, w := strings.Join(liveGot, ", "), strings.Join(want, ", "); g != w {
			t.Errorf("A's live sender did not keep delivering after the replay from its address (DESIGN.md invariant 9: a replay neither ends nor stalls a live session):\ngot  %s\nwant %s", g, w)
		}
		if code != 0 || !strings.Contains(live.stderr.String(), "delivered: every receiver acknowledged the final state") {
			t.Errorf("A's live sender exited %d, want 0 and delivered\n%s", code, live.stderr)
		}
		if t.Failed() {
			t.Logf("recv A:\n%s\nA's live sender:\n%s", recvA.stderr, live.stderr)
		}
	})
}

// TestReceiverRestartMidTyping (DESIGN.md invariant 9: a sender follows a
// restarted receiver at once; PROTOCOL.md §8, §9): through `keyrelay impair`
// at 0 % loss and 10 ms jitter, a sender types 480 characters over about 24
// s; after the 300th (15 s) the receiver is killed and a new one started on
// the same port. Every key-down typed after the new receiver says it listens
// arrives there, in order, and at the end the sender has the receiver live
// and delivery confirmed. The first receiver answers for longer than the
// typing left after the restart: a restarted receiver must be followed
// however long the one before it ran.
func TestReceiverRestartMidTyping(t *testing.T) {
	// Serial: which key-downs must reach the new receiver is reckoned from
	// when the test read the old one's last line, which a loaded machine
	// could delay.

	// Distinct characters (CJK ideographs), so every key-down in the log
	// names its place in the script.
	const n, restartAfter, pace = 480, 300, 25 * time.Millisecond
	perKey := 2 * pace // a character's down and up, each followed by the pace
	chars := make([]rune, n)
	index := map[string]int{}
	for i := range chars {
		chars[i] = rune(0x4E00 + i)
		index[typed(chars[i])] = i
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--key-file", keyFile)
	imp := start(t, "impair", "--listen", "127.0.0.1:0", "--to", recv.addr, "--loss", "0", "--jitter", "10ms", "--seed", "15")
	send := start(t, "send", "--to", imp.addr, "--key-file", keyFile, "--script",
		script(t, fmt.Sprintf("pace %v\ntype %q\n", pace, string(chars))))

	// Wait for the first receiver to type key-down #restartAfter, then
	// kill it.
	last, lastAt := -1, time.Time{}
	for last < restartAfter {
		l, ok := recv.next(10 * time.Second)
		if !ok {
			t.Fatalf("the first receiver typed key-downs up to #%d, then nothing for 10 s\nrecv:\n%s\nsend:\n%s", last, recv.stderr, send.stderr)
		}
		i, known := index[l.Key]
		if !known {
			t.Fatalf("the first receiver typed %v, not in the script", l)
		}
		if l.Action == "down" {
			last, lastAt = i, l.at
		}
	}
	recv.cmd.Process.Kill()
	recv.wait(5 * time.Second)
	for l := range recv.lines {
		if i, known := index[l.Key]; known && l.Action == "down" && i > last {
			last, lastAt = i, l.at
		}
	}
	recv2 := start(t, "recv", "--inject", "log", "--listen", recv.addr, "--key-file", keyFile)
	up := time.Now()
	// Key-down #last left the sender less than perKey before the test
	// read it, and those after it one every perKey: by the time the new
	// receiver listens at most #last+1+elapsed/perKey can have been typed.
	// With two keys' slack for the script's timing, every key-down from
	// #first on was typed after it was up.
	first := last + 4 + int(up.Sub(lastAt)/perKey)
	// Status lines written from a second after the restart on must say
	// the receiver is live.
	var statusFrom atomic.Int64
	statusFrom.Store(-1)
	time.AfterFunc(time.Second, func() { statusFrom.Store(int64(len(send.stderr.String()))) })

	code := send.wait(60 * time.Second)
	got := keyLines(recv2.stop())
	imp.stop2()
	checkBalanced(t, got)
	seen := map[int]bool{}
	prev := -1
	var disorder []string
	for _, l := range got {
		i, known := index[l.Key]
		if !known {
			t.Errorf("the new receiver typed %v, not in the script", l)
			continue
		}
		if l.Action != "down" {
			continue
		}
		if i <= prev {
			disorder = append(disorder, fmt.Sprintf("#%d %s after #%d", i, l.Key, prev))
		}
		seen[i], prev = true, i
	}
	if len(disorder) > 0 {
		t.Errorf("the new receiver's key-downs are out of the script's order (DESIGN.md invariant 3): %s", strings.Join(disorder, ", "))
	}
	var missing []string
	for i := first; i < n; i++ {
		if !seen[i] {
			missing = append(missing, fmt.Sprintf("#%d %s", i, typed(chars[i])))
		}
	}
	if len(missing) > 0 {
		shown := missing
		if len(shown) > 40 {
			shown = append(shown[:40:40], "...")
		}
		t.Errorf("%d of the %d key-downs typed after the new receiver was up (#%d to #%d; the old one typed up to #%d, %v before the new one listened) never arrived there (DESIGN.md invariant 9: no key-down typed after the new receiver is up is lost): %s",
			len(missing), n-first, first, n-1, last, up.Sub(lastAt).Round(time.Millisecond), strings.Join(shown, ", "))
	}
	stderr := send.stderr.String()
	if code != 0 || !strings.Contains(stderr, "delivered: every receiver acknowledged the final state") {
		t.Errorf("send exited %d, want 0 and \"delivered\" (DESIGN.md invariant 9: the sender follows the restarted receiver): %s",
			code, regexp.MustCompile(`(?m)^keyrelay: .*$`).FindString(stderr))
	}
	if from := statusFrom.Load(); from >= 0 {
		for _, l := range strings.Split(stderr[from:], "\n") {
			if strings.Contains(l, "keyrelay send: status ") && !strings.Contains(l, " live=true") {
				t.Errorf("a second or more after the restart the sender's status says the receiver is not live (DESIGN.md invariant 9): %s", l)
			}
		}
	}
	if m := regexp.MustCompile(`receiver \S+: .*last heard (\S+) ago`).FindStringSubmatch(stderr); m == nil {
		t.Errorf("send printed no per-receiver summary")
	} else if d, err := time.ParseDuration(m[1]); err != nil || d > time.Second {
		t.Errorf("at the end the sender last heard the receiver %s ago, want within a second (DESIGN.md invariant 9): %s", m[1], m[0])
	}
	if t.Failed() {
		t.Logf("send:\n%s\nnew recv:\n%s", stderr, recv2.stderr)
	} else {
		t.Logf("all %d key-downs typed after the restart (#%d on) arrived", n-first, first)
	}
}
