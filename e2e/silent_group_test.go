//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGroupScriptStopsWhenOneReceiverDies (PROTOCOL.md §9.1; send's exit
// status 3): a script mirrored to two named destinations through a Group
// (b has a key map, so each destination has a queue of its own), 300 taps
// at pace 50ms, b's receiver SIGKILLed 2 s in. Once b has been silent for
// --outage (2 s) the whole script stops, for a as well (the rule for a
// group: any destination silent past --outage), and send exits 3 naming b
// and saying it stopped the script. a gets fewer taps than the script
// holds, and holds no key at the end (DESIGN.md invariant 6). The time
// from b's death to send's exit is measured: about --outage + --linger,
// not the rest of the script.
func TestGroupScriptStopsWhenOneReceiverDies(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	text.WriteString("pace 50ms\n")
	const taps = 300
	for i := range taps {
		fmt.Fprintf(&text, "tap %s\n", restartKeys[i%len(restartKeys)])
	}
	a := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	b := start(t, "recv", "--inject", "log", "--listen", reservePort(t))
	cfg, env := sendConfig(t, fmt.Sprintf(`[[send.to]]
name = "a"
addr = %q

[[send.to]]
name = "b"
addr = %q
map = { F12 = "F11" }
`, a.addr, b.addr))
	send := startWithEnv(t, env, "send", "--config", cfg, "--script", script(t, text.String()), "--outage", "2s")
	time.Sleep(2 * time.Second) // the scenario: b killed 2 s in
	b.cmd.Process.Kill()
	died := time.Now()
	b.wait(5 * time.Second)
	code := send.wait(60 * time.Second)
	took := time.Since(died)
	stderr := send.stderr.String()
	got := a.stop()
	downs, held := 0, map[string]bool{}
	for _, l := range got {
		switch l.Action {
		case "down":
			downs++
			held[l.Key] = true
		case "up":
			delete(held, l.Key)
		}
	}
	t.Logf("send exited %d, %v after b died; a typed %d of the %d taps", code, took.Round(10*time.Millisecond), downs, taps)
	if code != 3 {
		t.Errorf("send exited %d, want 3", code)
	}
	// --outage 2 s and --linger 0.3 s; the rest is a loaded machine's
	// margin. Playing the script out takes about 28 s.
	if took > 6*time.Second {
		t.Errorf("send exited %v after b died, want within about --outage (2s) + --linger", took)
	}
	if downs == 0 || downs >= taps {
		t.Errorf("a typed %d of the %d taps, want some but not all: the script stops for every destination", downs, taps)
	}
	if len(held) > 0 {
		t.Errorf("a still holds %v at the end", held)
	}
	for _, want := range []string{"b (" + b.addr + ") silent for 2s (--outage): stopped before the end of the script", "key events never reached it"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("send did not say %q", want)
		}
	}
	if t.Failed() {
		t.Logf("send:\n%s", stderr)
	}
}
