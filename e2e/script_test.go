//go:build e2e

package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestScriptNamesAndChords (capture/SCRIPT_FORMAT.md, key names and key):
// the X names xdotool users type and chords, relayed to recv --inject log,
// arrive as the physical keys they name, a chord pressed in order and
// released in reverse, an unquoted character of a chord as that character.
func TestScriptNamesAndChords(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, strings.Join([]string{
		"pace 0s",
		"tap Return",
		"tap BackSpace",
		"down Control_L",
		"tap LEFT",
		"up ctrl",
		"key ctrl+shift+t KP_Enter",
		"tap super+Page_Down",
		"key alt_r+\"é\"",
	}, "\n")))
	if code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	want := strings.Join([]string{
		"Enter down", "Enter up",
		"Backspace down", "Backspace up",
		"ControlLeft down", "ArrowLeft down", "ArrowLeft up", "ControlLeft up",
		"ControlLeft down", "ShiftLeft down", "'t' down", "'t' up", "ShiftLeft up", "ControlLeft up",
		"NumpadEnter down", "NumpadEnter up",
		"MetaLeft down", "PageDown down", "PageDown up", "MetaLeft up",
		"AltRight down", "'é' down", "'é' up", "AltRight up",
	}, "\n")
	if got := render(recv.stop()); got != want {
		t.Errorf("recv log:\n%s\nwant:\n%s", got, want)
	}
}

// noExitSleep stops the race detector's sleep of a second before a -race
// binary exits (GORACE atexit_sleep_ms, 1000 by default), for the tests
// that time send's exit.
const noExitSleep = "GORACE=atexit_sleep_ms=0"

// startStreamed starts send --script - with its standard input a pipe the
// test holds open, and returns the pipe's end to write lines to.
func startStreamed(t *testing.T, args ...string) (*proc, io.WriteCloser) {
	t.Helper()
	return startStreamedEnv(t, runtimeEnv(t), args...)
}

// startStreamedEnv is startStreamed with env (a config's, a control
// directory's) in place of the test's runtime directory.
func startStreamedEnv(t *testing.T, env []string, args ...string) (*proc, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"send", "--script", "-"}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), noExitSleep)
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return startCmd(t, cmd, "send"), w
}

// expect reads recv's next key lines and fails unless they are want.
func (p *proc) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		if l, ok := p.next(10 * time.Second); !ok || l.String() != w {
			t.Fatalf("recv logged %v (ok %v), want %s\n%s", l, ok, w, p.stderr)
		}
	}
}

// TestStreamedScriptStopsOnSignal (DESIGN.md invariant 6): send --script -
// plays each line as it is written, while the pipe stays open; SIGTERM
// then ends it within a second, with the held key released by the sender
// (no timeout reason) and exit status 0 (README: Exit codes).
func TestStreamedScriptStopsOnSignal(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
	send, w := startStreamed(t, "--to", recv.addr)
	io.WriteString(w, "down ShiftLeft\n")
	recv.expect(t, "ShiftLeft down")
	io.WriteString(w, "pace 0s\ntap Return\n")
	recv.expect(t, "Enter down", "Enter up")
	send.cmd.Process.Signal(syscall.SIGTERM)
	if code := send.wait(time.Second); code != 0 {
		t.Errorf("send exited %d after SIGTERM, want 0\n%s", code, send.stderr)
	}
	recv.expect(t, "ShiftLeft up")
}

// TestStreamedScriptBadLine: a bad line of a streamed script ends send
// there with the line named (exit 1), and what the lines before it hold is
// released by the sender, not left to recv's --timeout.
func TestStreamedScriptBadLine(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
	send, w := startStreamed(t, "--to", recv.addr)
	io.WriteString(w, "down ctrl\n\n")
	recv.expect(t, "ControlLeft down")
	io.WriteString(w, "tap Retrun\n")
	if code := send.wait(10 * time.Second); code != 1 {
		t.Errorf("send exited %d after a bad line, want 1\n%s", code, send.stderr)
	}
	if !strings.Contains(send.stderr.String(), `<stdin>:3: unknown key "Retrun" (did you mean Return?`) {
		t.Errorf("send did not name the bad line:\n%s", send.stderr)
	}
	recv.expect(t, "ControlLeft up")
}

// TestFIFOScript: a FIFO given to --script is played as it is written, and
// a signal ends send even before a writer opened it.
func TestFIFOScript(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "keys")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
	idle := startWithEnv(t, []string{noExitSleep}, "send", "--to", recv.addr, "--script", fifo)
	if !idle.waitStderr(": sending to", 10*time.Second) {
		t.Fatalf("send did not start:\n%s", idle.stderr)
	}
	idle.cmd.Process.Signal(syscall.SIGTERM)
	if code := idle.wait(time.Second); code != 0 {
		t.Errorf("send waiting for a FIFO's writer exited %d after SIGTERM, want 0\n%s", code, idle.stderr)
	}

	send := start(t, "send", "--to", recv.addr, "--script", fifo)
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	io.WriteString(f, "key ctrl+KeyC\n")
	recv.expect(t, "ControlLeft down", "KeyC down", "KeyC up", "ControlLeft up")
	f.Close()
	if code := send.wait(10 * time.Second); code != 0 {
		t.Errorf("send exited %d when the FIFO closed, want 0\n%s", code, send.stderr)
	}
}

// TestHotkeyUsageErrors: every hotkey that cannot work is refused at start
// with exit 2 and the valid form, before any X display or device is
// looked at; --hotkey without --grab is refused naming --grab.
func TestHotkeyUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"two keys that are not modifiers, x11", []string{"--input", "x11", "--grab", "--hotkey", "KeyA+KeyB"}, "all keys of a hotkey but one must be modifiers"},
		{"a misspelt key", []string{"--input", "evdev", "--grab", "--hotkey", "ScrolLock"}, "did you mean ScrollLock?"},
		{"a key no keyboard has", []string{"--input", "evdev", "--grab", "--hotkey", "0x03"}, "no evdev code"},
		{"five keys", []string{"--input", "evdev", "--grab", "--hotkey", "ctrl+shift+alt+super+KeyA"}, "at most 4"},
		{"without --grab", []string{"--input", "x11", "--hotkey", "ScrollLock"}, "--hotkey needs --grab"},
		{"with a script", []string{"--script", "-", "--hotkey", "ScrollLock"}, "--hotkey needs --grab"},
		{"even the default", []string{"--script", "-", "--hotkey", "ControlLeft+ControlRight"}, "--hotkey needs --grab"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, "", append([]string{"send", "--to", "127.0.0.1"}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.msg)
			}
			if !strings.Contains(stderr, "--hotkey needs --grab") && !strings.Contains(stderr, "a hotkey is one to four key names joined by +") {
				t.Errorf("the error does not give the valid form:\n%s", stderr)
			}
		})
	}
}

// TestConfiguredHotkeyWithoutGrab: a hotkey from the environment (or a
// config file) is a preference for the runs that grab: a scripted send
// without --grab runs; a bad one is still a usage error.
func TestConfiguredHotkeyWithoutGrab(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	if code, _, stderr := runIn(t, "tap KeyA\n", []string{"KEYRELAY_SEND_HOTKEY=ScrollLock"}, "send", "--to", recv.addr, "--script", "-"); code != 0 {
		t.Errorf("send with KEYRELAY_SEND_HOTKEY and no --grab exited %d, want 0:\n%s", code, stderr)
	}
	if got := render(recv.stop()); got != "KeyA down\nKeyA up" {
		t.Errorf("recv logged:\n%s\nwant KeyA down, KeyA up", got)
	}
	if code, _, stderr := runIn(t, "", []string{"KEYRELAY_SEND_HOTKEY=ScrolLock"}, "send", "--to", "127.0.0.1", "--script", "-"); code != 2 || !strings.Contains(stderr, "did you mean ScrollLock?") {
		t.Errorf("a misspelt KEYRELAY_SEND_HOTKEY: exit %d, want 2 with a suggestion:\n%s", code, stderr)
	}
}
