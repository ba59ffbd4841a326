//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// statusAnswer is what keyrelay status --json prints for each send.
type statusAnswer struct {
	PID       int    `json:"pid"`
	Input     string `json:"input"`
	Target    string `json:"target"`
	Mode      string `json:"mode"`
	Grab      bool   `json:"grab"`
	CanSwitch bool   `json:"can_switch"`
	Switch    string `json:"switch"`
	Dests     []struct {
		Name string `json:"name"`
		Addr string `json:"addr"`
		Live bool   `json:"live"`
	} `json:"destinations"`
}

// statusJSON runs keyrelay status --json and reads one answer per send.
func statusJSON(t *testing.T, env []string) []statusAnswer {
	t.Helper()
	code, out, stderr := runWithEnv(t, env, "status", "--json")
	if code != 0 {
		t.Fatalf("keyrelay status --json exited %d:\n%s%s", code, out, stderr)
	}
	var all []statusAnswer
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var a statusAnswer
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("keyrelay status --json printed %q: %v", out, err)
		}
		all = append(all, a)
	}
	return all
}

// runtimeDir is a private XDG_RUNTIME_DIR for a test's sends.
func runtimeDir(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{"XDG_RUNTIME_DIR=" + dir}
}

// TestPlainScriptSendAnswersStatus checks the control socket (DESIGN.md,
// Packages: cmd) for a send without a router: a plain send --input script to
// one recv --inject log opens its control socket, so keyrelay status shows
// it (its pid, source, target, the destination live, that it cannot switch
// and why); keyrelay switch fails with exit status 1 naming why (a script
// has no keyboard to give back); a second send of the same user at once is
// listed beside it; once send ends, its socket is gone.
func TestPlainScriptSendAnswersStatus(t *testing.T) {
	r := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	env := runtimeDir(t)
	send, w := startStreamedEnv(t, env, "--to", r.addr)
	if _, err := io.WriteString(w, "pace 0s\ntap KeyA\n"); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "KeyA down", "KeyA up") // the session is up: the receiver answered

	all := statusJSON(t, env)
	if len(all) != 1 {
		t.Fatalf("keyrelay status lists %d sends, want 1: %+v", len(all), all)
	}
	st := all[0]
	if st.PID != send.cmd.Process.Pid || st.Input != "script" || st.Target != r.addr || st.Mode != "relaying" || st.CanSwitch ||
		!strings.Contains(st.Switch, "script") || len(st.Dests) != 1 || st.Dests[0].Addr != r.addr || !st.Dests[0].Live {
		t.Errorf("keyrelay status --json: %+v\nwant pid %d, --input script, target and one live destination %s, cannot switch", st, send.cmd.Process.Pid, r.addr)
	}
	code, out, stderr := runWithEnv(t, env, "status")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("send %d (--input script)", send.cmd.Process.Pid)) || !strings.Contains(out, "target: "+r.addr) ||
		!strings.Contains(out, " live") || !strings.Contains(out, "switch: cannot: --input script plays a script") {
		t.Errorf("keyrelay status exited %d:\n%s%s", code, out, stderr)
	}
	code, out, stderr = runWithEnv(t, env, "switch", "local")
	if code != 1 || out != "" || !strings.Contains(stderr, "this send cannot switch: --input script plays a script, which has no keyboard to give back or take") {
		t.Errorf("keyrelay switch local exited %d, want 1 naming why:\n%s%s", code, out, stderr)
	}

	// A second send of the same user, at the same time: both listed.
	send2, w2 := startStreamedEnv(t, env, "--to", "b="+r.addr)
	io.WriteString(w2, "pace 0s\ntap KeyB\n")
	r.expect(t, "KeyB down", "KeyB up")
	if all := statusJSON(t, env); len(all) != 2 || all[0].Target == all[1].Target {
		t.Errorf("keyrelay status with two sends: %+v, want both, one targeting %s and one b", all, r.addr)
	}
	code, out, stderr = runWithEnv(t, env, "status", "--pid", fmt.Sprint(send2.cmd.Process.Pid))
	if code != 0 || !strings.Contains(out, "target: b") || strings.Contains(out, "target: "+r.addr) {
		t.Errorf("keyrelay status --pid %d exited %d:\n%s%s", send2.cmd.Process.Pid, code, out, stderr)
	}
	w2.Close()
	if code := send2.wait(20 * time.Second); code != 0 {
		t.Fatalf("the second send exited %d:\n%s", code, send2.stderr)
	}

	w.Close()
	if code := send.wait(20 * time.Second); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, send.stderr)
	}
	if strings.Contains(send.stderr.String(), "no keyrelay switch or status") {
		t.Errorf("send ran without its control socket:\n%s", send.stderr)
	}
	if code, _, stderr := runWithEnv(t, env, "status"); code != 1 || !strings.Contains(stderr, "no keyrelay send runs as this user") {
		t.Errorf("keyrelay status after send ended exited %d, want 1:\n%s", code, stderr)
	}
	if got := render(r.stop()); got != "" {
		t.Errorf("the receiver logged more:\n%s", got)
	}
}

// TestSwitchMirrorGrabFromAnotherProcess checks keyrelay switch (DESIGN.md,
// Named destinations) for a mirror send with the X11 source owning the
// keyboard (send --input x11 --grab to two receivers, no --switch): keyrelay
// switch local from another process gives the keyboard back, answering once
// the grab has followed, and releases at both receivers the key held there;
// keys typed then act here only; keyrelay switch NAME takes the keyboard
// again, and every key goes to both again; status shows the mode each time.
func TestSwitchMirrorGrabFromAnotherProcess(t *testing.T) {
	needX(t, "xdotool")
	display := startXvfb(t)
	a := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	b := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	env := runtimeDir(t)
	send := startWithEnv(t, append(env, "DISPLAY="+display, noExitSleep), "send", "--input", "x11", "--grab", "--hotkey", "ScrollLock",
		"--to", "a="+a.addr+",b="+b.addr)
	poll(t, 10*time.Second, "send to grab", func() bool { return strings.Contains(send.stderr.String(), "relaying to") })

	xdotool(t, display, "key", "q")
	a.expectKeys(t, "KeyQ down", "KeyQ up")
	b.expectKeys(t, "KeyQ down", "KeyQ up")
	st := statusJSON(t, env)
	if len(st) != 1 || st[0].Target != "all" || st[0].Mode != "relaying" || !st[0].Grab || !st[0].CanSwitch {
		t.Fatalf("keyrelay status: %+v, want target all, relaying, grabbing, can switch", st)
	}

	// ShiftLeft (X keycode 50) held across the switch: released at both
	// receivers by it, and its own release later reaches no one.
	x := dialXTest(t, display)
	x.press(t, 50, true)
	a.expectKeys(t, "ShiftLeft down")
	b.expectKeys(t, "ShiftLeft down")
	if code, out, stderr := runWithEnv(t, env, "switch", "local"); code != 0 || out != "target: local\n" {
		t.Fatalf("keyrelay switch local exited %d:\n%s%s", code, out, stderr)
	}
	a.expectKeys(t, "ShiftLeft up")
	b.expectKeys(t, "ShiftLeft up")
	x.press(t, 50, false)
	if st := statusJSON(t, env); st[0].Target != "local" || st[0].Mode != "local" {
		t.Errorf("keyrelay status after switch local: %+v, want target and mode local", st[0])
	}
	xdotool(t, display, "key", "z") // local use: acts here only

	if code, out, stderr := runWithEnv(t, env, "switch", "b"); code != 0 || out != "target: all\n" {
		t.Fatalf("keyrelay switch b exited %d, want target all (mirror):\n%s%s", code, out, stderr)
	}
	xdotool(t, display, "key", "w")
	a.expectKeys(t, "KeyW down", "KeyW up")
	b.expectKeys(t, "KeyW down", "KeyW up")
	if code, _, stderr := runWithEnv(t, env, "switch", "c"); code != 2 || !strings.Contains(stderr, `no such destination "c"`) {
		t.Errorf("keyrelay switch c exited %d, want 2 naming c:\n%s", code, stderr)
	}
	send.stopWith(syscall.SIGTERM)
	for _, r := range []struct {
		name string
		p    *proc
	}{{"a", a}, {"b", b}} {
		if got := keysOnly(r.p.stop()); got != "" {
			t.Errorf("receiver %s logged more:\n%s", r.name, got)
		}
	}
}
