//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/cmd"
)

// noExamples are the commands whose --help has no examples: gadget's need
// root and a USB device controller (README "Type into any computer with a
// Pi" runs none either).
var noExamples = []string{"gadget", "gadget setup", "gadget remove"}

// helpPaths lists every command and help topic of keyrelay, as --help
// lists them: the "Available Commands" of each command's --help (but
// cobra's help), walked from the root, and the root's "Additional help
// topics". A command added later is found here, with nothing to update.
func helpPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(path string)
	walk = func(path string) {
		out = append(out, path)
		help := helpOf(t, path)
		for _, section := range []string{"Available Commands:", "Additional help topics:"} {
			_, rest, ok := strings.Cut(help, "\n"+section+"\n")
			if !ok {
				continue
			}
			block, _, _ := strings.Cut(rest, "\n\n")
			for _, l := range strings.Split(block, "\n") {
				f := strings.Fields(l)
				if len(f) == 0 {
					continue
				}
				if section == "Additional help topics:" {
					out = append(out, strings.Join(f[1:2], " ")) // "keyrelay script  ..."
					continue
				}
				if f[0] != "help" {
					walk(strings.TrimSpace(path + " " + f[0]))
				}
			}
		}
	}
	walk("")
	return out
}

// helpOf is keyrelay PATH --help as a user sees it: the config directory
// under a home of its own (~/.config/keyrelay in the paths it names).
func helpOf(t *testing.T, path string) string {
	t.Helper()
	code, help, stderr := runWithEnv(t, []string{noExitSleep, "HOME=" + t.TempDir(), "XDG_CONFIG_HOME="}, append(strings.Fields(path), "--help")...)
	if code != 0 {
		t.Fatalf("keyrelay %s --help: exit %d\n%s", path, code, stderr)
	}
	return help
}

// TestHelpFitsAScreen: each command's --help, and each help topic, is at
// most HelpLines lines on a terminal of HelpWidth columns (a longer line
// counts for each line it wraps to), and no line of a command's is wider:
// what it does, its common flags and two or three examples; the rest is
// in its man page.
func TestHelpFitsAScreen(t *testing.T) {
	t.Parallel()
	width, most := cmd.HelpWidth, cmd.HelpLines
	paths := helpPaths(t)
	if len(paths) < 20 {
		t.Fatalf("found %d commands and topics, want every one: %q", len(paths), paths)
	}
	for _, path := range paths {
		help := helpOf(t, path)
		lines, rows := strings.Split(strings.TrimRight(help, "\n"), "\n"), 0
		for i, l := range lines {
			n := utf8.RuneCountInString(l)
			rows += max(1, (n+width-1)/width)
			if n > width && path != "script" { // the topic's Markdown table rows wrap
				t.Errorf("keyrelay %s --help: line %d is %d columns, more than %d:\n%s", path, i+1, n, width, l)
			}
		}
		t.Logf("keyrelay %s --help: %d lines, %d at %d columns", path, len(lines), rows, width)
		if rows > most {
			t.Errorf("keyrelay %s --help is %d lines at %d columns, more than %d: keep what it does, the common flags and 2-3 examples; move the rest to its man page (manual, commonFlags, briefly in cmd/help.go)", path, rows, width, most)
		}
	}
}

// TestHelpExamples: each command's --help has examples that work as
// written, and every example in a help text runs here. Each Examples
// section, as --help prints it, runs in bash in an empty directory with a
// fresh HOME and runtime directory and no KEYRELAY_* settings, and exits
// 0. Every command is found by walking --help (helpPaths); one without
// examples fails the test, but for noExamples. A command written out in a
// comment of an example (an example that would not run) fails it too, and
// so does one in the text above the examples: examples go where they run.
func TestHelpExamples(t *testing.T) {
	holdFixedPorts(t) // the examples listen on 7575, 7576 and 7599
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	commented := regexp.MustCompile(`(?m)^\s*#\s+(\$ )?keyrelay `)
	inText := regexp.MustCompile(`(?m)^\s+(\$ )?keyrelay [a-z]`)
	for _, path := range helpPaths(t) {
		name := path
		if name == "" {
			name = "keyrelay"
		}
		t.Run(name, func(t *testing.T) {
			help := helpOf(t, path)
			text, _, _ := strings.Cut(help, "\nUsage:\n")
			if m := inText.FindString(text); m != "" && path != "script" {
				t.Errorf("a command in the text above the examples, which no test runs: %q (put it in Examples)", m)
			}
			block := examples(help)
			if slices.Contains(noExamples, path) || path == "script" {
				if block != "" {
					t.Errorf("%s has examples now: take it out of noExamples", path)
				}
				return
			}
			if !strings.Contains(block, "keyrelay ") {
				t.Fatalf("no Examples section running keyrelay in --help:\n%s", help)
			}
			if m := commented.FindString(block); m != "" {
				t.Errorf("an example in a comment, which does not run: %q", m)
			}
			if out, err := runBash(t.TempDir(), block); err != nil {
				t.Errorf("the example failed (%v):\n%s\noutput:\n%s", err, block, out)
			}
		})
	}
}

// runBash runs script with bash -e in dir as a new user would: HOME is
// dir, XDG_RUNTIME_DIR a directory in it, no KEYRELAY_* settings, the
// built keyrelay first on PATH. It
// returns what the script printed (both streams). Whatever the script left
// running (a recv started with &) is ended with it. The examples run one
// keyrelay after another, and each would wait a second before it exits
// (the race detector's atexit_sleep_ms, noExitSleep): without that wait
// --help's and the README's take some 15 s rather than 75. A race is
// still reported, and fails the example, up to the exit.
func runBash(dir, script string) ([]byte, error) {
	// A runtime directory of its own, as a login session has (send's
	// control socket goes there), so that keyrelay status and switch see
	// only the sends the script started.
	runtime := filepath.Join(dir, ".run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		return nil, err
	}
	env := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "HOME=" + dir, "XDG_RUNTIME_DIR=" + runtime, "LANG=C.UTF-8", noExitSleep}
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
