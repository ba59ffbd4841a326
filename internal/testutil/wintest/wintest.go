package wintest

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/xvfbtest"
)

// Tools are the programs a Wine run needs, with the Debian packages that
// have them (the Makefile's DEPS).
var Tools = map[string]string{
	"wine":                   "wine wine64",
	"wineserver":             "wine wine64",
	"x86_64-w64-mingw32-gcc": "gcc-mingw-w64-x86-64",
	"xdotool":                "xdotool",
	"Xvfb":                   "xvfb",
}

// Env is a Wine prefix of its own, on an Xvfb display of its own, with the
// test programs built into Dir. A Wine window has the keyboard only when
// focused (Focus): Xvfb's focus follows the pointer, which starts over no
// window.
type Env struct {
	Dir     string
	Display string
	env     []string
}

// Need skips tb when a tool is missing, except in CI, where .ci/run
// installs them (make deps) and a skip would hide a broken install.
func Need(tb testing.TB) {
	tb.Helper()
	for tool, pkg := range Tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				tb.Fatalf("%s missing in CI: .ci/run must install it (make deps: %s)", tool, pkg)
			}
			tb.Skipf("needs %s (apt-get install %s)", tool, pkg)
		}
	}
}

// Setup builds the test programs, keyrelay.exe, udpsock's and secret's
// tests (udpsock.test.exe, secret.test.exe) and the shim, makes a Wine prefix (a
// wineboot: some seconds) with the shim in its system32, and starts Xvfb.
// Everything is ended when tb ends (wineserver -k for the prefix's
// processes).
func Setup(tb testing.TB) *Env {
	tb.Helper()
	Need(tb)
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Dir(file)
	dir := tb.TempDir()
	e := &Env{Dir: dir}
	// -trimpath, as make cross and make dist build: their compiled
	// packages are reused.
	for _, b := range [][]string{
		{"build", "-trimpath", "-o", filepath.Join(dir, "winwatch.exe"), "./winwatch"},
		{"build", "-trimpath", "-o", filepath.Join(dir, "wincapture.exe"), "./wincapture"},
		{"build", "-trimpath", "-o", filepath.Join(dir, "wininject.exe"), "./wininject"},
		{"build", "-trimpath", "-o", filepath.Join(dir, "winacl.exe"), "./winacl"},
		{"build", "-trimpath", "-o", filepath.Join(dir, "keyrelay.exe"), "github.com/keyrelay/keyrelay"},
		{"test", "-c", "-trimpath", "-o", filepath.Join(dir, "udpsock.test.exe"), "github.com/keyrelay/keyrelay/internal/netio/udpsock"},
		{"test", "-c", "-trimpath", "-o", filepath.Join(dir, "secret.test.exe"), "github.com/keyrelay/keyrelay/secret"},
	} {
		cmd := exec.Command("go", b...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("go %s for Windows: %v\n%s", strings.Join(b, " "), err, out)
		}
	}
	dll := filepath.Join(dir, "bcryptprimitives.dll")
	cmd := exec.Command("x86_64-w64-mingw32-gcc", "-shared", "-O2", "-o", dll, "processprng.c", "bcryptprimitives.def", "-ladvapi32")
	cmd.Dir = filepath.Join(src, "shim")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the ProcessPrng shim: %v\n%s", err, out)
	}
	e.Display = xvfbtest.Start(tb)
	prefix := filepath.Join(dir, "prefix")
	// keyrelay.exe reads no KEYRELAY_ setting of the test's (e2e's shared
	// key file): a test gives it what it means it to have.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEYRELAY_") {
			e.env = append(e.env, kv)
		}
	}
	e.env = append(e.env, "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=", "DISPLAY="+e.Display)
	tb.Cleanup(func() {
		k := exec.Command("wineserver", "-k")
		k.Env = e.env
		k.Run()
	})
	boot := exec.Command("wineboot", "-i")
	boot.Env = e.env
	if out, err := boot.CombinedOutput(); err != nil {
		tb.Fatalf("wineboot: %v\n%s", err, out)
	}
	// Go's runtime loads bcryptprimitives.dll from system32 only
	// (LOAD_LIBRARY_SEARCH_SYSTEM32); Wine 8 has no builtin one.
	b, err := os.ReadFile(dll)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return e
}

// Proc is a Wine program running: its standard output's lines arrive on
// Lines, its standard error's on ErrLines.
type Proc struct {
	Lines, ErrLines chan string
	// Exited is closed when the program has ended.
	Exited <-chan struct{}
	cmd    *exec.Cmd
	mu     sync.Mutex
	seen   []string
}

// Kill kills the program with SIGKILL, as the OOM killer would: Wine runs
// it in the process Start started (the wine script execs the loader).
func (p *Proc) Kill() error { return p.cmd.Process.Kill() }

// Interrupt sends SIGINT to the program's process, which Wine hands to a
// console program as Ctrl+C (CTRL_C_EVENT: os.Interrupt in Go).
func (p *Proc) Interrupt() error { return p.cmd.Process.Signal(os.Interrupt) }

// ExitCode waits up to d for the program to end and returns its exit code;
// ok is false if it did not end.
func (p *Proc) ExitCode(d time.Duration) (code int, ok bool) {
	select {
	case <-p.Exited:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(d):
		return 0, false
	}
}

// Start runs exe (one of the test programs) under Wine with args. The
// process is killed when tb ends; what it printed is logged if tb failed.
func (e *Env) Start(tb testing.TB, exe string, args ...string) *Proc {
	tb.Helper()
	cmd := exec.Command("wine", append([]string{filepath.Join(e.Dir, exe+".exe")}, args...)...)
	cmd.Env = e.env
	// A process of the prefix (wineserver) may keep the output open after
	// the program ends: Wait gives up on it then.
	cmd.WaitDelay = 2 * time.Second
	p := &Proc{Lines: make(chan string, 1024), ErrLines: make(chan string, 1024), cmd: cmd}
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	var wg sync.WaitGroup
	for _, s := range []struct {
		r  io.Reader
		ch chan string
	}{{outR, p.Lines}, {errR, p.ErrLines}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(s.ch)
			sc := bufio.NewScanner(s.r)
			for sc.Scan() {
				line := strings.TrimRight(sc.Text(), "\r")
				p.mu.Lock()
				p.seen = append(p.seen, line)
				p.mu.Unlock()
				select {
				case s.ch <- line:
				default: // nobody reads: Seen still has it
				}
			}
		}()
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	p.Exited = exited
	go func() {
		cmd.Wait()
		outW.Close()
		errW.Close()
		close(exited)
	}()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		wg.Wait()
		if tb.Failed() {
			tb.Logf("%s %v printed:\n%s", exe, args, strings.Join(p.Seen(), "\n"))
		}
	})
	return p
}

// Seen is every line printed so far, both streams.
func (p *Proc) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// Wait waits for a line on ch that has substr, for up to d; it reports
// whether one came.
func Wait(ch <-chan string, substr string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				return false
			}
			if strings.Contains(l, substr) {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

// Collect gathers the lines that come on ch until none has come for quiet.
func Collect(ch <-chan string, quiet time.Duration) []string {
	var got []string
	for {
		t := time.NewTimer(quiet)
		select {
		case l, ok := <-ch:
			t.Stop()
			if !ok {
				return got
			}
			got = append(got, l)
		case <-t.C:
			return got
		}
	}
}

// Run runs exe under Wine to its end and returns what it printed.
func (e *Env) Run(tb testing.TB, stdin string, exe string, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command("wine", append([]string{filepath.Join(e.Dir, exe+".exe")}, args...)...)
	cmd.Env = e.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Output runs exe under Wine to its end and returns its standard output,
// its standard error and its exit code.
func (e *Env) Output(tb testing.TB, stdin string, exe string, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	cmd := exec.Command("wine", append([]string{filepath.Join(e.Dir, exe+".exe")}, args...)...)
	cmd.Env = e.env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 2 * time.Second
	var o, er strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &er
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			tb.Fatalf("%s %v: %v\n%s", exe, args, err, er.String())
		}
	}
	// Windows programs end their lines with CRLF.
	clean := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
	return clean(o.String()), clean(er.String()), cmd.ProcessState.ExitCode()
}

// Wine runs one of Wine's own programs in the prefix (wine reg ...,
// wine wineboot, winepath) and returns what it printed and its error.
func (e *Env) Wine(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command("wine", args...)
	cmd.Env = e.env
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	return strings.ReplaceAll(string(out), "\r\n", "\n"), err
}

// SignIn starts what Windows starts when a user signs in, as Wine's
// wineboot does: the Run keys' entries among them. Its output goes
// nowhere, as a program started at sign-in has no terminal (and one
// keeping a pipe open would hold up the wait).
func (e *Env) SignIn(tb testing.TB) {
	tb.Helper()
	cmd := exec.Command("wine", "wineboot")
	cmd.Env = e.env
	if err := cmd.Run(); err != nil {
		tb.Fatalf("wine wineboot: %v", err)
	}
}

// Xdotool runs xdotool on the display with args.
func (e *Env) Xdotool(tb testing.TB, args ...string) string {
	tb.Helper()
	cmd := exec.Command("xdotool", args...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("xdotool %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Focus gives the keyboard focus to the window named name, waiting for it
// to be mapped (xdotool search --sync).
func (e *Env) Focus(tb testing.TB, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdotool", "search", "--sync", "--onlyvisible", "--name", name)
	cmd.Env = e.env
	out, err := cmd.Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) == 0 {
		tb.Fatalf("no window named %q on %s within 20s: %v", name, e.Display, err)
	}
	e.Xdotool(tb, "windowfocus", "--sync", f[0])
}
