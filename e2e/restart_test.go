//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// restartKeys are the 40 keys the restart script taps, each once, so that
// every key-down in a receiver's log names its place in the script.
var restartKeys = func() []string {
	var ks []string
	for c := 'A'; c <= 'Z'; c++ {
		ks = append(ks, "Key"+string(c))
	}
	for d := '0'; d <= '9'; d++ {
		ks = append(ks, "Digit"+string(d))
	}
	return append(ks, "F1", "F2", "F3", "F4")
}()

// TestRestartedReceiverGetsBacklog (PROTOCOL.md §8.4, a restarted
// receiver; §9, delivery and exit status 3): a 40-tap script at pace
// 50ms (4 s of typing) whose receiver is killed 1.5 s in and a new one
// started on the same port after a gap. Within --outage every tap is
// typed exactly once over the two instances, in the script's order (the
// new one types what the old one did not acknowledge, and nothing it
// did), and send exits 0. With a gap past --outage, send exits 3 naming
// how many events never reached the receiver.
func TestRestartedReceiverGetsBacklog(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	text.WriteString("pace 50ms\n")
	index := map[string]int{}
	for i, k := range restartKeys {
		fmt.Fprintf(&text, "tap %s\n", k)
		index[k] = i
	}
	for _, tc := range []struct {
		name   string
		gap    time.Duration
		outage string
		// more is typed after the 40 taps: a tap of Escape 3 s later, when
		// the new instance is up again.
		more bool
		code int
	}{
		{"gap 0.3s", 300 * time.Millisecond, "5s", false, 0},
		{"gap 1s", time.Second, "5s", false, 0},
		{"gap 3s", 3 * time.Second, "5s", false, 0},
		// Past --outage the script stops (TestScriptStopsWhenReceiverDies):
		// what it played and the receiver missed is named, the rest never
		// went.
		{"gap 3s past --outage 2s", 3 * time.Second, "2s", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, events := text.String(), 2*len(restartKeys)
			if tc.more {
				all += "sleep 3s\ntap Escape\n"
				events += 2
			}
			// A port no other test gets while this one's receiver is
			// down (reservePort).
			recv := start(t, "recv", "--inject", "log", "--listen", reservePort(t))
			send := start(t, "send", "--to", recv.addr, "--script", script(t, all), "--outage", tc.outage)
			time.Sleep(1500 * time.Millisecond) // the scenario: killed 1.5 s in
			recv.cmd.Process.Kill()
			recv.wait(5 * time.Second)
			var old []line
			for l := range recv.lines {
				old = append(old, l)
			}
			time.Sleep(tc.gap) // the scenario: down this long
			recv2 := start(t, "recv", "--inject", "log", "--listen", recv.addr)
			code := send.wait(60 * time.Second)
			fresh := recv2.stop()

			// Typed: the key-downs of the script (a resync press of a key
			// the old instance held when it died is no new event).
			var order []int
			count := map[int]int{}
			for _, ls := range [][]line{old, fresh} {
				for _, l := range ls {
					i, known := index[l.Key]
					if !known || l.Action != "down" || l.Reason == "resync" {
						continue
					}
					order = append(order, i)
					count[i]++
				}
			}
			var twice, missing []string
			for i, k := range restartKeys {
				switch {
				case count[i] > 1:
					twice = append(twice, k)
				case count[i] == 0:
					missing = append(missing, k)
				}
			}
			inOrder := true
			for j := 1; j < len(order); j++ {
				inOrder = inOrder && order[j] > order[j-1]
			}
			stderr := send.stderr.String()
			t.Logf("gap %v, --outage %s: %d of %d taps typed (old instance %d, new %d), %d twice, in order %v, send exit %d",
				tc.gap, tc.outage, len(restartKeys)-len(missing), len(restartKeys), downs(old), downs(fresh), len(twice), inOrder, code)
			if len(twice) > 0 {
				t.Errorf("typed twice: %v (the new instance must not repeat what the old one acknowledged: since, PROTOCOL.md §8.4)", twice)
			}
			if !inOrder {
				t.Errorf("taps typed out of the script's order (DESIGN.md invariant 3): %v", order)
			}
			if code != tc.code {
				t.Errorf("send exited %d, want %d", code, tc.code)
			}
			if tc.code == 0 {
				if len(missing) > 0 {
					t.Errorf("%d taps never typed: %v", len(missing), missing)
				}
				if want := fmt.Sprintf("acknowledged the final state and all %d key events", events); !strings.Contains(stderr, want) {
					t.Errorf("send did not say %q", want)
				}
			}
			if tc.code == 3 {
				// The script stopped once the receiver was silent for
				// --outage: it played fewer than its events, and names how
				// many of those the receiver missed, and when.
				m := regexp.MustCompile(`(\d+) of (\d+) key events never reached it, typed from`).FindStringSubmatch(stderr)
				if m == nil || !strings.Contains(stderr, "stopped before the end of the script") {
					t.Errorf("send did not say it stopped the script, and how many key events never reached the receiver, and when")
				} else if n, _ := strconv.Atoi(m[1]); n < 1 || m[2] == strconv.Itoa(events) {
					t.Errorf("send says %q; the script (%d events) was stopped before its end, with some played and not typed", m[0], events)
				}
			}
			if t.Failed() {
				t.Logf("send:\n%s\nold recv:\n%s\nnew recv:\n%s", stderr, recv.stderr, recv2.stderr)
			}
		})
	}
}

// downs counts the key-downs of a log.
func downs(ls []line) int {
	n := 0
	for _, l := range ls {
		if l.Action == "down" && l.Reason != "resync" {
			n++
		}
	}
	return n
}

// TestSendSummaryFields (PROTOCOL.md §9.1, exit status 3): with --log-format
// json, send's final summary is records whose fields carry the figures: one
// for the session (events, undelivered, packets, bytes, acks, handshakes,
// ...) and one per receiver (delivered, undelivered and when those were
// typed), for a receiver that got everything and for one that never
// answered.
func TestSendSummaryFields(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	nothing := deadAddr(t)
	code, _, stderr := run(t, "tap KeyA\ntap KeyB\n", "send", "--script", "-", "--log-format", "json", "--outage", "2s", "--to", recv.addr, "--to", nothing)
	recv.stop()
	if code != 3 {
		t.Errorf("exit %d, want 3 (%s never answered)", code, nothing)
	}
	var session map[string]any
	receivers := map[string]map[string]any{}
	for _, l := range strings.Split(stderr, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		switch rec["summary"] {
		case "session":
			session = rec
		case "receiver":
			receivers[fmt.Sprint(rec["receiver"])] = rec
		}
	}
	if session == nil {
		t.Fatalf("no summary record for the session:\n%s", stderr)
	}
	for field, want := range map[string]float64{"events": 4, "queued": 4, "dropped": 0, "undelivered": 4, "handshakes": 1} {
		if got, ok := session[field].(float64); !ok || got != want {
			t.Errorf("session summary %s = %v, want %v", field, session[field], want)
		}
	}
	for _, field := range []string{"packets", "bytes", "acks", "initiations"} {
		if got, ok := session[field].(float64); !ok || got <= 0 {
			t.Errorf("session summary %s = %v, want a positive count", field, session[field])
		}
	}
	if session["delivery_confirmed"] != false {
		t.Errorf("session summary delivery_confirmed = %v, want false", session["delivery_confirmed"])
	}
	for addr, want := range map[string][2]float64{recv.addr: {4, 0}, nothing: {0, 4}} {
		r := receivers[addr]
		if r == nil {
			t.Errorf("no summary record for receiver %s:\n%s", addr, stderr)
			continue
		}
		if r["delivered"] != want[0] || r["undelivered"] != want[1] {
			t.Errorf("receiver %s: delivered %v, undelivered %v; want %v and %v", addr, r["delivered"], r["undelivered"], want[0], want[1])
		}
		_, from := r["undelivered_from"]
		_, to := r["undelivered_to"]
		if from != (want[1] > 0) || to != (want[1] > 0) {
			t.Errorf("receiver %s: undelivered_from and _to given %v %v, want %v", addr, from, to, want[1] > 0)
		}
	}
	if _, ok := receivers[recv.addr]["rtt_ms"].(float64); !ok {
		t.Errorf("receiver %s has no rtt_ms: %v", recv.addr, receivers[recv.addr])
	}
}

// TestScriptStopsWhenReceiverDies (PROTOCOL.md §9.1; send's exit status
// 3): a script of 30 s of taps whose receiver is SIGKILLed 2 s in stops
// once the receiver has been silent for --outage (2 s here), instead of
// playing on for no one, and exits 3 saying so, with the keys the
// receiver missed. The time from the receiver's death to send's exit is
// measured: about --outage + --linger, not the rest of the script.
func TestScriptStopsWhenReceiverDies(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	text.WriteString("pace 50ms\n")
	for i := range 300 {
		fmt.Fprintf(&text, "tap %s\n", restartKeys[i%len(restartKeys)])
	}
	recv := start(t, "recv", "--inject", "log", "--listen", reservePort(t))
	send := start(t, "send", "--to", recv.addr, "--script", script(t, text.String()), "--outage", "2s")
	time.Sleep(2 * time.Second) // the scenario: killed 2 s in
	recv.cmd.Process.Kill()
	died := time.Now()
	recv.wait(5 * time.Second)
	code := send.wait(60 * time.Second)
	took := time.Since(died)
	stderr := send.stderr.String()
	t.Logf("send exited %d, %v after the receiver died", code, took.Round(10*time.Millisecond))
	if code != 3 {
		t.Errorf("send exited %d, want 3", code)
	}
	// --outage 2 s and --linger 0.3 s; the rest is a loaded machine's
	// margin. Playing the script out took 28 s.
	if took > 6*time.Second {
		t.Errorf("send exited %v after the receiver died, want within about --outage (2s) + --linger", took)
	}
	for _, want := range []string{"silent for 2s (--outage): stopped before the end of the script", "key events never reached it"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("send did not say %q", want)
		}
	}
	if t.Failed() {
		t.Logf("send:\n%s", stderr)
	}
}
