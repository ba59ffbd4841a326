//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// TestSwitchBetweenThreeReceivers checks DESIGN.md's Named destinations end
// to end: three receivers, named in [[send.to]] tables; keys go to the first
// until 'keyrelay switch' from another process or a destination's hotkey
// picks another; a key held across a switch is released at the old target
// and not pressed at the new one (DESIGN.md invariant 1 per destination);
// the hotkey reaches no one; c's map and local keys apply to c alone;
// keyrelay status names the target and each receiver's liveness. A name is
// matched whatever its case (switch B reaches b).
func TestSwitchBetweenThreeReceivers(t *testing.T) {
	t.Parallel()
	recvs := logReceivers(t, 3)
	a, b, c := recvs[0], recvs[1], recvs[2]
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
	cfg, env := sendConfig(t, text)
	send, w := startStreamedEnv(t, env, "--config", cfg)
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
	// Names ignore case, as peers' do: B is b.
	if code, out, stderr = runWithEnv(t, env, "switch", "B"); code != 0 || out != "target: b\n" {
		t.Fatalf("keyrelay switch B exited %d:\n%s%s", code, out, stderr)
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

// TestGrabHotkeysSwitchDestinations checks DESIGN.md's Named destinations
// with the X11 source owning the keyboard (send --input x11 --grab on Xvfb):
// each destination's hotkey sends the keys that follow to that receiver
// only, the hotkey itself (but for its first key, released at the old
// target) reaching none; keyrelay switch does the same from another process;
// and --hotkey still returns to local use, where nothing is relayed;
// keyrelay switch NAME takes the keyboard again and switch local gives it
// back (the grab follows).
func TestGrabHotkeysSwitchDestinations(t *testing.T) {
	t.Parallel()
	needX(t, "xdotool")
	display := startXvfb(t)
	recvs := logReceivers(t, 3)
	a, b, c := recvs[0], recvs[1], recvs[2]
	var text strings.Builder
	for i, r := range recvs {
		fmt.Fprintf(&text, "[[send.to]]\nname = %q\naddr = %q\nhotkey = \"ControlRight+Digit%d\"\n\n", string(rune('a'+i)), r.addr, i+1)
	}
	cfg, env := sendConfig(t, text.String())
	send := startWithEnv(t, append(env, "DISPLAY="+display), "send", "--config", cfg, "--input", "x11", "--grab", "--hotkey", "ScrollLock")
	poll(t, 10*time.Second, "send to grab", func() bool { return strings.Contains(send.stderr.String(), "relaying to") })

	xdotool(t, display, "key", "q")
	a.expectKeys(t, "KeyQ down", "KeyQ up")
	// ControlRight (X keycode 105) and Digit2 (11) by keycode: xdotool
	// types Control_R with the first keycode that has it.
	x := dialXTest(t, display)
	x.press(t, 105, true)
	x.tap(t, 11)
	x.press(t, 105, false)
	a.expectKeys(t, "ControlRight down", "ControlRight up")
	xdotool(t, display, "key", "w")
	b.expectKeys(t, "KeyW down", "KeyW up")
	if code, out, stderr := runWithEnv(t, env, "switch", "c"); code != 0 || out != "target: c\n" {
		t.Fatalf("keyrelay switch c exited %d:\n%s%s", code, out, stderr)
	}
	xdotool(t, display, "key", "e")
	c.expectKeys(t, "KeyE down", "KeyE up")

	xdotool(t, display, "key", "Scroll_Lock")
	poll(t, 10*time.Second, "send to say local use", func() bool { return strings.Contains(send.stderr.String(), "local use") })
	xdotool(t, display, "key", "z")
	// keyrelay switch takes the keyboard again, for the destination it
	// names, and 'local' gives it back, as --hotkey does.
	if code, out, stderr := runWithEnv(t, env, "switch", "b"); code != 0 || out != "target: b\n" {
		t.Fatalf("keyrelay switch b exited %d:\n%s%s", code, out, stderr)
	}
	poll(t, 10*time.Second, "send to grab again", func() bool { return strings.Count(send.stderr.String(), "relaying to") >= 2 })
	xdotool(t, display, "key", "r")
	b.expectKeys(t, "KeyR down", "KeyR up")
	if code, out, stderr := runWithEnv(t, env, "switch", "local"); code != 0 || out != "target: local\n" {
		t.Fatalf("keyrelay switch local exited %d:\n%s%s", code, out, stderr)
	}
	poll(t, 10*time.Second, "send to say local use again", func() bool { return strings.Count(send.stderr.String(), "local use") >= 2 })
	xdotool(t, display, "key", "x")
	send.stopWith(syscall.SIGTERM)
	for _, r := range []struct {
		name string
		p    *proc
	}{{"a", a}, {"b", b}, {"c", c}} {
		if got := keysOnly(r.p.stop()); got != "" {
			t.Errorf("receiver %s logged more:\n%s", r.name, got)
		}
	}
}

// expectKeys is expect with the receiver's lock-state lines (which carry
// no key: the X11 source sends its Caps/Num Lock state) left out.
func (p *proc) expectKeys(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		l, ok := p.next(10 * time.Second)
		for ok && l.Key == "" {
			l, ok = p.next(10 * time.Second)
		}
		if !ok || l.String() != w {
			t.Fatalf("recv logged %v (ok %v), want %s\n%s", l, ok, w, p.stderr)
		}
	}
}

// keysOnly renders key lines, leaving out lock-state lines.
func keysOnly(ls []line) string {
	var keys []line
	for _, l := range ls {
		if l.Key != "" {
			keys = append(keys, l)
		}
	}
	return render(keys)
}

// press presses or releases keycode kc, and returns once the server has
// processed it.
func (x *xtestConn) press(t *testing.T, kc byte, down bool) {
	t.Helper()
	typ := byte(xproto.KeyRelease)
	if down {
		typ = xproto.KeyPress
	}
	xtest.FakeInput(x.c, typ, kc, 0, x.root, 0, 0, 0)
	if _, err := xproto.GetInputFocus(x.c).Reply(); err != nil {
		t.Fatal(err)
	}
}

// TestSwitchWaitTypesNothingWhenOneIsSilent: send --switch --wait with one
// destination that never answers exits 3 having typed nothing anywhere,
// the one that answered included, as send --wait does with one queue.
func TestSwitchWaitTypesNothingWhenOneIsSilent(t *testing.T) {
	t.Parallel()
	a := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	keysFile := script(t, "pace 0s\n"+strings.Repeat("tap KeyA\n", 100))
	code, _, stderr := runWithEnv(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "send", "--switch", "--wait", "1s",
		"--to", "a="+a.addr+",b="+deadAddr(t), "--script", keysFile)
	if code != 3 || !strings.Contains(stderr, "nothing was typed anywhere") {
		t.Fatalf("send exited %d, want 3 and nothing typed:\n%s", code, stderr)
	}
	if got := render(a.stop()); got != "" {
		t.Errorf("a typed:\n%s", got)
	}
}

// logReceivers starts n recv --inject log on ports of their own.
func logReceivers(t *testing.T, n int) []*proc {
	t.Helper()
	out := make([]*proc, n)
	for i := range out {
		out[i] = start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	}
	return out
}

// sendConfig writes text as a send's config file beside a runtime
// directory of its own (0700, as send's control socket needs), and returns
// the file and the environment that points send, keyrelay switch and
// keyrelay status at that directory.
func sendConfig(t *testing.T, text string) (cfg string, env []string) {
	t.Helper()
	dir := t.TempDir()
	runtime := filepath.Join(dir, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, []string{"XDG_RUNTIME_DIR=" + runtime}
}
