//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSwitchBetweenThreeReceivers checks issue 27 must-haves 1-3 end to
// end: three receivers, named in [[send.to]] tables; keys go to the
// first until 'keyrelay switch' from another process or a destination's
// hotkey picks another; a key held across a switch is released at the old
// target and not pressed at the new one (DESIGN.md invariant 1 per
// destination); the hotkey reaches no one; c's map and local keys apply
// to c alone; keyrelay status names the target and each receiver's
// liveness.
func TestSwitchBetweenThreeReceivers(t *testing.T) {
	a := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	b := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	c := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	dir := t.TempDir()
	runtime := filepath.Join(dir, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf(`[[send.to]]
name = "a"
addr = %q
hotkey = "ControlRight+Digit1"

[[send.to]]
name = "b"
addr = %q
hotkey = "ControlRight+Digit2"

[[send.to]]
name = "c"
addr = %q
hotkey = "ControlRight+Digit3"
map = { KeyQ = "KeyX" }
local-keys = ["KeyL"]
`, a.addr, b.addr, c.addr)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_RUNTIME_DIR=" + runtime}
	cmd := exec.Command(bin, "send", "--config", cfg, "--script", "-")
	cmd.Env = append(os.Environ(), append(env, noExitSleep)...)
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	send := startCmd(t, cmd, "send")
	say := func(lines ...string) {
		t.Helper()
		if _, err := io.WriteString(w, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	say("pace 0s", "tap KeyA")
	a.expect(t, "KeyA down", "KeyA up")
	say("down ShiftLeft")
	a.expect(t, "ShiftLeft down")

	code, out, stderr := runWithEnv(t, env, "status")
	if code != 0 || !strings.Contains(out, "target: a") || strings.Count(out, " live") != 3 {
		t.Fatalf("keyrelay status exited %d:\n%s%s", code, out, stderr)
	}
	if code, out, stderr = runWithEnv(t, env, "switch", "b"); code != 0 || out != "target: b\n" {
		t.Fatalf("keyrelay switch b exited %d:\n%s%s", code, out, stderr)
	}
	a.expect(t, "ShiftLeft up") // released where it was held
	say("tap KeyB", "up ShiftLeft", "tap KeyQ")
	b.expect(t, "KeyB down", "KeyB up", "KeyQ down", "KeyQ up")

	// c's hotkey: ControlRight reaches b before the chord is complete,
	// and is released there; Digit3 reaches no one.
	say("key ControlRight+Digit3", "tap KeyQ", "tap KeyL", "tap KeyC")
	b.expect(t, "ControlRight down", "ControlRight up")
	c.expect(t, "KeyX down", "KeyX up", "KeyC down", "KeyC up")

	if code, _, stderr = runWithEnv(t, env, "switch", "d"); code != 2 || !strings.Contains(stderr, `no such destination "d"`) {
		t.Fatalf("keyrelay switch d exited %d, want 2 naming d:\n%s", code, stderr)
	}
	if code, _, stderr = runWithEnv(t, env, "switch", "local"); code != 0 {
		t.Fatalf("keyrelay switch local exited %d:\n%s", code, stderr)
	}
	say("tap KeyZ")
	w.Close()
	if code := send.wait(20 * time.Second); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, send.stderr)
	}
	for _, r := range []struct {
		name string
		p    *proc
		want string
	}{
		{"a", a, ""}, {"b", b, ""}, {"c", c, ""},
	} {
		if got := render(r.p.stop()); got != r.want {
			t.Errorf("receiver %s logged more:\n%s", r.name, got)
		}
	}
}
