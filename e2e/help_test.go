//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelpExamples (issue 13 must-have 5: each command's --help has
// examples that work as written): every command's Examples section, as
// --help prints it, runs in bash in an empty directory with a fresh HOME
// and no KEYRELAY_* settings, and exits 0. A command without examples
// fails the test, so none can be forgotten.
func TestHelpExamples(t *testing.T) {
	holdFixedPorts(t) // the examples listen on 7575, 7576 and 7599
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	for _, cmd := range []string{"", "send", "recv", "keygen", "impair", "keys", "config", "doctor", "version", "id", "peers", "pair"} {
		name := cmd
		if name == "" {
			name = "keyrelay"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			code, help, stderr := runWithEnv(t, []string{noExitSleep}, args...)
			if code != 0 {
				t.Fatalf("--help: exit %d\n%s", code, stderr)
			}
			block := examples(help)
			if !strings.Contains(block, "keyrelay ") {
				t.Fatalf("no Examples section running keyrelay in --help:\n%s", help)
			}
			if out, err := runBash(t.TempDir(), block); err != nil {
				t.Errorf("the example failed (%v):\n%s\noutput:\n%s", err, block, out)
			}
		})
	}
}

// runBash runs script with bash -e in dir as a new user would: HOME is
// dir, no KEYRELAY_* settings, the built keyrelay first on PATH. It
// returns what the script printed (both streams). Whatever the script left
// running (a recv started with &) is ended with it. The examples run one
// keyrelay after another, and each would wait a second before it exits
// (the race detector's atexit_sleep_ms, noExitSleep): without that wait
// --help's and the README's take some 15 s rather than 75. A race is
// still reported, and fails the example, up to the exit.
func runBash(dir, script string) ([]byte, error) {
	env := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8", noExitSleep}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	sh.Dir, sh.Env = dir, env
	// Its own process group, so that what it started is ended with it.
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	// A script that failed before its kill %1 leaves its background jobs
	// holding the output pipe: without WaitDelay, CombinedOutput would wait
	// for them (the test's whole timeout) instead of reporting the failure.
	sh.WaitDelay = 2 * time.Second
	out, err := sh.CombinedOutput()
	if sh.Process != nil {
		syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	}
	return out, err
}

// examples is the Examples section of a cobra --help text, dedented.
func examples(help string) string {
	_, rest, ok := strings.Cut(help, "\nExamples:\n")
	if !ok {
		return ""
	}
	block, _, _ := strings.Cut(rest, "\n\n")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	return strings.Join(lines, "\n")
}
