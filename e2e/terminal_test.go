//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTerminalUnderTmux: `keyrelay send` with no script reads the terminal
// (capture.Terminal's doc: the terminal source misses nothing a terminal can
// tell). tmux runs it with tmux's default TERM; tmux 3.x does not speak the
// kitty keyboard protocol, so keys arrive as taps. send-keys -l types text,
// which arrives as exactly those characters (a space as the Space key);
// named and modified keys arrive as those keys with their modifiers, as the
// xterm-style sequences tmux sends for them (S-Up ESC[1;2A, C-Left ESC[1;5D,
// M-x ESC x, BTab ESC[Z, F5 ESC[15~, Home ESC[1~, End ESC[4~, PPage ESC[5~,
// NPage ESC[6~, IC ESC[2~, DC ESC[3~, C-a 0x01, C-c 0x03); Ctrl+] ends the
// session with exit status 0.
func TestTerminalUnderTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI: .ci/run must install it")
		}
		t.Skip("needs tmux")
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	sock := fmt.Sprintf("keyrelay-e2e-%d", os.Getpid())
	tmux := func(args ...string) (string, error) {
		cmd := exec.Command("tmux", append([]string{"-L", sock}, args...)...)
		cmd.Env = append(os.Environ(), runtimeEnv(t)...) // for the server's send
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { tmux("kill-server") })
	status := filepath.Join(t.TempDir(), "status")
	if out, err := tmux("new-session", "-d", "-x", "200", "-y", "10",
		fmt.Sprintf("%s send --to %s; echo $? > %s", bin, recv.addr, status)); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	poll := func(what string, check func() bool) {
		t.Helper()
		pollPane(t, what, check, func() string { pane, _ := tmux("capture-pane", "-p"); return pane })
	}
	poll("the status line", func() bool {
		pane, _ := tmux("capture-pane", "-p")
		return strings.Contains(pane, "Ctrl+] ends")
	})
	if term, _ := tmux("show", "-gv", "default-terminal"); term != "" {
		t.Logf("tmux default-terminal: %s", strings.TrimSpace(term))
	}
	// next reads n key lines from the receiver's log.
	next := func(n int) []line {
		t.Helper()
		var got []line
		for len(got) < n {
			l, ok := recv.next(10 * time.Second)
			if !ok {
				pane, _ := tmux("capture-pane", "-p")
				t.Fatalf("after %d lines, nothing more:\n%s\npane:\n%s", len(got), render(got), pane)
			}
			got = append(got, l)
		}
		return got
	}
	// taps renders chords ("ShiftLeft+ArrowUp") as the log lines of taps:
	// modifiers down first, up last.
	taps := func(chords ...string) string {
		var out []string
		for _, c := range chords {
			ks := strings.Split(c, "+")
			for _, k := range ks {
				out = append(out, k+" down")
			}
			for i := len(ks) - 1; i >= 0; i-- {
				out = append(out, ks[i]+" up")
			}
		}
		return strings.Join(out, "\n")
	}

	const text = "zy;[ Grüße, é € x/y=z?"
	tmux("send-keys", "-l", text)
	var chars []string
	for _, c := range text {
		if c == ' ' {
			chars = append(chars, "Space")
		} else {
			chars = append(chars, strconv.QuoteRune(c))
		}
	}
	want := taps(chars...)
	got := next(strings.Count(want, "\n") + 1)
	if render(got) != want {
		t.Errorf("send-keys -l %q logged:\n%s\nwant:\n%s", text, render(got), want)
	}
	all := got

	tmux("send-keys", "S-Up", "C-Left", "M-x", "BTab", "F5", "Home", "End", "PPage", "NPage", "IC", "DC", "C-a", "C-c")
	want = taps("ShiftLeft+ArrowUp", "ControlLeft+ArrowLeft", "AltLeft+'x'", "ShiftLeft+Tab", "F5", "Home", "End",
		"PageUp", "PageDown", "Insert", "Delete", "ControlLeft+'a'", "ControlLeft+'c'")
	got = next(strings.Count(want, "\n") + 1)
	if render(got) != want {
		t.Errorf("named and modified keys logged:\n%s\nwant:\n%s", render(got), want)
	}
	all = append(all, got...)
	checkBalanced(t, all)
	pane, _ := tmux("capture-pane", "-p")
	if !strings.Contains(pane, "| taps |") || !strings.Contains(pane, fmt.Sprintf("%d keys sent | live rtt ", len(chars)+13)) {
		t.Errorf("status line lacks the mode (taps: tmux does not speak the kitty protocol), the count or the receiver's liveness; pane:\n%s", pane)
	}

	tmux("send-keys", "C-]")
	poll("send to exit", func() bool {
		b, err := os.ReadFile(status)
		return err == nil && len(b) > 0
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("send exited %s after Ctrl+], want 0", b)
	}
	if rest := recv.stop(); len(rest) > 0 {
		t.Errorf("keys logged after Ctrl+]:\n%s", render(rest))
	}
}

// pollPane runs check every 20 ms until it is true or 10 s have passed,
// then fails showing the tmux pane. tmux has no event to wait on.
func pollPane(t *testing.T, what string, check func() bool, pane func() string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !check() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; pane:\n%s", what, pane())
		}
	}
}

// TestTerminalNoAnswer: the terminal source's status line says when no
// receiver answers, first "no answer yet", after --timeout the likely
// causes; send then exits 3 (delivery not confirmed), not 0.
func TestTerminalNoAnswer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI: .ci/run must install it")
		}
		t.Skip("needs tmux")
	}
	nothing := deadAddr(t)
	sock := fmt.Sprintf("keyrelay-noanswer-%d", os.Getpid())
	tmux := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", sock}, args...)...)
		cmd.Env = append(os.Environ(), runtimeEnv(t)...) // for the server's send
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	status := filepath.Join(t.TempDir(), "status")
	tmux("new-session", "-d", "-x", "250", "-y", "10",
		fmt.Sprintf("%s send --to %s --timeout 500ms --linger 100ms; echo $? > %s", bin, nothing, status))
	poll := func(what string, check func() bool) {
		t.Helper()
		pollPane(t, what, check, func() string { return tmux("capture-pane", "-p") })
	}
	poll("no answer yet", func() bool { return strings.Contains(tmux("capture-pane", "-p"), "| no answer yet |") })
	poll("the causes after --timeout", func() bool {
		return strings.Contains(tmux("capture-pane", "-p"), "| no answer after 500ms: recv not running, another key, --insecure on one end only, or a firewall? |")
	})
	tmux("send-keys", "-l", "a")
	tmux("send-keys", "C-]")
	poll("send to exit", func() bool {
		b, err := os.ReadFile(status)
		return err == nil && len(b) > 0
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "3" {
		t.Errorf("send to a port where nothing listens exited %s, want 3; pane:\n%s", b, tmux("capture-pane", "-p"))
	}
}

// TestSendStatusLine: on a terminal, send keeps a live status line per
// destination: receiver, live, RTT, loss.
func TestSendStatusLine(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI")
		}
		t.Skip("needs tmux")
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	sock := fmt.Sprintf("keyrelay-status-%d", os.Getpid())
	tmux := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", sock}, args...)...)
		cmd.Env = append(os.Environ(), runtimeEnv(t)...) // for the server's send
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	tmux("new-session", "-d", "-x", "150", "-y", "10", fmt.Sprintf("%s send --to %s --script %s; sleep 10", bin, recv.addr,
		script(t, "tap KeyA\nsleep 3s\ntap KeyB\n")))
	re := regexp.MustCompile(`→ ` + regexp.QuoteMeta(recv.addr) + ` +live +rtt \S+ +loss +0\.0%`)
	pane := func() string { return tmux("capture-pane", "-p") }
	pollPane(t, "a live status line", func() bool { return re.MatchString(pane()) }, pane)
	recv.stop()
}

// TestCharactersStatusLineUnderTmux: on an 80-column terminal, send's live
// status block names a destination in characters mode "NAME (characters)"
// and a physical one by its name alone (padded, so that the columns line
// up), while the script relays German keys as characters to one and as
// keys to the other (README "Characters across layouts"). Each line fits
// one row (one longer than the terminal is cut with an ellipsis), so the
// block is redrawn in place: after several redraws the pane shows it once,
// not its top left behind at each one.
func TestCharactersStatusLineUnderTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI")
		}
		t.Skip("needs tmux")
	}
	us := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	pc := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	sock := fmt.Sprintf("keyrelay-chars-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	cfg := filepath.Join(t.TempDir(), "send.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[[send.to]]\nname = \"us\"\naddr = %q\nkeys = \"characters\"\n[[send.to]]\nname = \"pc\"\naddr = %q\n", us.addr, pc.addr), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := script(t, "tap KeyZ\nsleep 2s\ntap KeyY\nsleep 8s\n")
	tmux("new-session", "-d", "-x", "80", "-y", "24", fmt.Sprintf("%s send --config %s --layout de --script %s; sleep 10", bin, cfg, keys))
	pane := func() string { return tmux("capture-pane", "-p") }
	// The names are padded to one width, so that the columns line up.
	usLine := regexp.MustCompile(`(?m)^us \(characters\) → ` + regexp.QuoteMeta(us.addr) + ` +live +rtt \S+ +loss +[0-9]`)
	pcLine := regexp.MustCompile(`(?m)^pc {13} → ` + regexp.QuoteMeta(pc.addr) + ` +live +rtt \S+ +loss +[0-9]`)
	pollPane(t, "live status lines for us (characters) and pc", func() bool { p := pane(); return usLine.MatchString(p) && pcLine.MatchString(p) }, pane)
	// German keys: KeyZ is y, KeyY z, as characters to us; as keys to pc.
	us.expectKeys(t, "'y' down", "'y' up", "'z' down", "'z' up")
	pc.expectKeys(t, "KeyZ down", "KeyZ up", "KeyY down", "KeyY up")
	// The script's second key came 2 s (four redraws) after the first.
	p := pane()
	if n := strings.Count(p, "target: all"); n != 1 {
		t.Errorf("the pane shows the block's first line %d times, want once (redrawn in place):\n%s", n, p)
	}
	for _, l := range strings.Split(p, "\n") {
		// The log lines above the block may wrap: they are not redrawn.
		if n := len([]rune(l)); n >= 80 && (strings.HasPrefix(l, "us ") || strings.HasPrefix(l, "pc ")) {
			t.Errorf("a status line of %d columns on an 80-column terminal: %q", n, l)
		}
	}
	if !usLine.MatchString(p) || !pcLine.MatchString(p) {
		t.Errorf("the status lines are gone:\n%s", p)
	}
	us.stop()
	pc.stop()
}
