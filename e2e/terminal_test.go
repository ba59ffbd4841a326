//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTerminalUnderTmux: `keyrelay send` with no script reads the terminal.
// tmux runs it with tmux's default TERM; send-keys types text, arrows and
// Ctrl chords (Ctrl+C included); the receiver's log gets them as taps; Ctrl+]
// ends the session with exit status 0.
func TestTerminalUnderTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI: .ci/run must install it")
		}
		t.Skip("needs tmux")
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	sock := fmt.Sprintf("keyrelay-e2e-%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { tmux("kill-server") })
	status := filepath.Join(t.TempDir(), "status")
	if out, err := tmux("new-session", "-d", "-x", "120", "-y", "10",
		fmt.Sprintf("%s send --to %s; echo $? > %s", bin, recv.addr, status)); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	// poll runs check every 20 ms until it is true or 10 s have passed.
	poll := func(what string, check func() bool) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(10 * time.Second)
		for !check() {
			select {
			case <-tick.C:
			case <-deadline:
				pane, _ := tmux("capture-pane", "-p")
				t.Fatalf("timed out waiting for %s; pane:\n%s", what, pane)
			}
		}
	}
	poll("the status line", func() bool {
		pane, _ := tmux("capture-pane", "-p")
		return strings.Contains(pane, "Ctrl+] ends")
	})
	if term, _ := tmux("show", "-gv", "default-terminal"); term != "" {
		t.Logf("tmux default-terminal: %s", strings.TrimSpace(term))
	}
	tmux("send-keys", "-l", "Hi!")
	tmux("send-keys", "Up", "Down", "Left", "Right", "Home", "End", "C-a", "C-c", "BSpace", "Tab", "F5", "Enter")
	want := []string{"ShiftLeft", "KeyH", "KeyI", "ShiftLeft", "Digit1", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
		"Home", "End", "ControlLeft", "KeyA", "ControlLeft", "KeyC", "Backspace", "Tab", "F5", "Enter"}
	var got []line
	for len(got) < 2*len(want) {
		l, ok := recv.next(10 * time.Second)
		if !ok {
			t.Fatalf("after %d lines, nothing more:\n%s", len(got), render(got))
		}
		got = append(got, l)
	}
	checkBalanced(t, got)
	var downs []string
	for _, l := range got {
		if l.Action == "down" {
			downs = append(downs, l.Key)
		}
	}
	if strings.Join(downs, " ") != strings.Join(want, " ") {
		t.Errorf("key-downs:\n%v\nwant\n%v", downs, want)
	}
	// Each key is a tap: its key-up follows before the next key goes down
	// (modifiers wrap their key).
	if got[1].String() != "KeyH down" || got[2].String() != "KeyH up" || got[3].String() != "ShiftLeft up" {
		t.Errorf("not a Shift+H tap: %s", render(got[:4]))
	}
	tmux("send-keys", "C-]")
	poll("send to exit", func() bool {
		b, err := os.ReadFile(status)
		return err == nil && len(b) > 0
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("send exited %s after Ctrl+], want 0", b)
	}
	recv.stop()
}

// TestSendStatusLine: on a terminal, send keeps a live status line per
// destination (issue 5): receiver, live, RTT, loss.
func TestSendStatusLine(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI")
		}
		t.Skip("needs tmux")
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	sock := fmt.Sprintf("keyrelay-status-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	tmux("new-session", "-d", "-x", "150", "-y", "10", fmt.Sprintf("%s send --to %s --script %s; sleep 10", bin, recv.addr,
		script(t, "tap KeyA\nsleep 3s\ntap KeyB\n")))
	re := regexp.MustCompile(`→ ` + regexp.QuoteMeta(recv.addr) + ` +live +rtt \S+ +loss +0\.0%`)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		if re.MatchString(tmux("capture-pane", "-p")) {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no live status line; pane:\n%s", tmux("capture-pane", "-p"))
		}
	}
	recv.stop()
}
