//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSendWaitsForReceiver (send --wait): a receiver started 3 s after
// send --wait 10s gets the whole script (exit 0), and with nothing
// listening send --wait 1s exits 3 about 1 s in, having typed nothing.
func TestSendWaitsForReceiver(t *testing.T) {
	// Serial: send must give up a 1s --wait within 3 s.
	keys := script(t, "type \"late\"\ntap Enter\n")
	t.Run("receiver 3s late", func(t *testing.T) {
		addr := deadAddr(t)
		send := start(t, "send", "--wait", "10s", "--script", keys, "--to", addr)
		time.Sleep(3 * time.Second)
		recv := start(t, "recv", "--inject", "log", "--listen", addr)
		if code := send.wait(15 * time.Second); code != 0 {
			t.Fatalf("send exited %d, want 0\n%s", code, send.stderr)
		}
		var downs []string
		for _, l := range recv.stop() {
			if l.Action == "down" || l.Action == "type" {
				downs = append(downs, l.Key)
			}
		}
		if got := strings.Join(downs, " "); got != "'l' 'a' 't' 'e' Enter" {
			t.Errorf("typed %q, want 'l' 'a' 't' 'e' Enter\n%s", got, send.stderr)
		}
	})
	t.Run("nothing listening, wait 1s", func(t *testing.T) {
		t0 := time.Now()
		code, _, stderr := run(t, "", "send", "--wait", "1s", "--script", keys, "--to", deadAddr(t))
		took := time.Since(t0)
		if code != 3 || !strings.Contains(stderr, "no answer within --wait 1s, so the keys were not sent and nothing was typed anywhere") {
			t.Errorf("exit %d, want 3 saying nothing was typed:\n%s", code, stderr)
		}
		if took > 3*time.Second {
			t.Errorf("send took %v to give up a 1s --wait", took)
		}
	})
}
