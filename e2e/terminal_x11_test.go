//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTerminalToGermanDesktop: TestTerminalUnderTmux with a real receiver.
// `send` reads a terminal (tmux, default TERM) and `recv --inject x11` types
// on a German desktop (Xvfb, setxkbmap de) into an xterm: the text typed in
// the terminal is exactly the text the application gets (characters stay
// characters: DESIGN.md invariant 8), and named, modified keys arrive as
// those keys, as the bytes xterm makes of them.
func TestTerminalToGermanDesktop(t *testing.T) {
	t.Parallel()
	needX(t, "xinput", "setxkbmap", "xterm", "tmux")
	display := startXvfb(t)
	setLayout(t, display, "de")
	term := startXterm(t, display)
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")

	sock := fmt.Sprintf("keyrelay-e2e-de-%d", os.Getpid())
	tmux := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-L", sock}, args...)...)
		cmd.Env = append(os.Environ(), runtimeEnv(t)...) // for the server's send
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	status := filepath.Join(t.TempDir(), "status")
	tmux("new-session", "-d", "-x", "200", "-y", "10", fmt.Sprintf("%s send --to %s; echo $? > %s", bin, recv.addr, status))
	poll(t, 10*time.Second, "send's status line", func() bool {
		return strings.Contains(tmux("capture-pane", "-p"), "Ctrl+] ends")
	})

	const text = "zy;[ Grüße, é € x/y=z?"
	tmux("send-keys", "-l", text)
	if got := term.text(t, text); got != text {
		t.Errorf("typed %q in the terminal, the German desktop's xterm got %q", text, got)
	}

	// Keys, as xterm encodes them: modified arrows, Alt+letter (xterm runs
	// with metaSendsEscape), Shift+Tab, F-keys, Home/End, PgUp/PgDn,
	// Insert/Delete, a Ctrl chord, Enter.
	tmux("send-keys", "S-Up", "C-Left", "M-x", "BTab", "F5", "Home", "End", "PPage", "NPage", "IC", "DC", "C-a", "Enter")
	want := "\x1b[1;2A" + "\x1b[1;5D" + "\x1bx" + "\x1b[Z" + "\x1b[15~" + "\x1b[H" + "\x1b[F" + "\x1b[5~" + "\x1b[6~" + "\x1b[2~" + "\x1b[3~" + "\x01" + "\r"
	if got := term.text(t, want); got != want {
		t.Errorf("keys from the terminal gave the xterm %q, want %q", got, want)
	}

	tmux("send-keys", "C-]")
	poll(t, 10*time.Second, "send to exit", func() bool {
		b, err := os.ReadFile(status)
		return err == nil && len(b) > 0
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("send exited %s after Ctrl+], want 0", b)
	}
	recv.stop()
	if held := heldKeycodes(t, display); len(held) != 0 {
		t.Errorf("keycodes %v still held on the desktop", held)
	}
}
