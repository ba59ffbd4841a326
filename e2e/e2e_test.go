//go:build e2e

// Package e2e runs the built keyrelay binary over real loopback UDP: a
// receiver logging keys (recv --inject log), senders playing scripts, and the
// impairment proxy between them. Run with `make e2e`.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/internal/testutil/notebuf"
)

// bin is the keyrelay binary under test, keyFile the key every process
// shares, and runtimeBase the directory of each test's XDG_RUNTIME_DIR
// (runtimeEnv).
var bin, keyFile, runtimeBase string

func TestMain(m *testing.M) {
	// Under nohup (or a shell's trap "" HUP) SIGHUP is ignored, and an
	// ignored signal stays ignored in every child: send and recv would
	// keep it ignored as they mean to (TestNohupRecvIgnoresHangup), and
	// the tests of what SIGHUP does would fail. Catching it here gives the
	// children SIGHUP's default disposition again (exec resets a caught
	// signal, not an ignored one); this process still ignores what it
	// catches, as nohup asked.
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	dir, err := os.MkdirTemp("", "keyrelay-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "keyrelay")
	// Tests run the binary under the race detector; benchmarks measure a
	// normal build.
	flag.Parse()
	race := "-race"
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		race = "-race=false"
	}
	build := exec.Command("go", "build", race, "-o", bin, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build failed:", err)
		os.Exit(1)
	}
	// Every process the tests start shares one key, as two machines set up
	// per the README would; tests of key handling override it.
	keyFile = filepath.Join(dir, "test.key")
	if out, err := exec.Command(bin, "keygen", "--out", keyFile).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "keygen failed: %v %s\n", err, out)
		os.Exit(1)
	}
	// Nothing of the developer's own set-up may leak in: no config file, no
	// KEYRELAY_ settings but the shared key.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KEYRELAY_") {
			os.Unsetenv(k)
		}
	}
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	runtimeBase = filepath.Join(dir, "run")
	os.Setenv("KEYRELAY_KEY_FILE", keyFile)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Most tests run in parallel (t.Parallel), so that the suite's wall time is
// not the sum of its waits. What they could share is kept apart: each test
// listens on 127.0.0.1:0 (or a port of reservePort's), starts its own Xvfb
// (-displayfd picks a free display), tmux server (-L) and temporary files,
// and its sends get an XDG_RUNTIME_DIR of their own (runtimeEnv). A test
// stays serial, with a comment saying why, when it checks a time bound
// that a loaded machine could break (a release within --timeout + 200 ms,
// a count of key repeats, a datagram rate), or changes the environment
// (t.Setenv); serial tests run first, alone. The tests of examples that
// use fixed ports (--help's and the README's) hold fixedPorts.

// fixedPorts is held by a test, for its whole run, while it runs
// examples that listen on fixed ports (7575, 7576, 7599, 17575, 17576), so
// that no two such tests overlap. No other test binds those ports here:
// the others listen on 127.0.0.1:0, in the kernel's ephemeral range (32768
// and up), or on a port of reservePort's (20000 and up, below that range);
// TestBroadcast's 7575 is in a network namespace of its own.
var fixedPorts sync.Mutex

// holdFixedPorts makes t a parallel test that holds fixedPorts until it
// ends.
func holdFixedPorts(t *testing.T) {
	t.Parallel()
	fixedPorts.Lock()
	t.Cleanup(fixedPorts.Unlock)
}

var runtimeDirs sync.Map // top-level test name -> its XDG_RUNTIME_DIR

// runtimeEnv is the XDG_RUNTIME_DIR setting for the processes t starts: a
// directory of t's top-level test's own, so that the control socket of a
// send (package control: one per user, in $XDG_RUNTIME_DIR/keyrelay) is not
// another parallel test's, and no send says "another keyrelay send answers
// on". Subtests share their parent's, as one test's send and its keyrelay
// status must. An env given after it (a test's own XDG_RUNTIME_DIR) wins.
func runtimeEnv(t testing.TB) []string {
	top, _, _ := strings.Cut(t.Name(), "/")
	dir := filepath.Join(runtimeBase, top)
	if _, loaded := runtimeDirs.LoadOrStore(top, dir); !loaded {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"XDG_RUNTIME_DIR=" + dir}
}

// reservedPorts are the ports reservePort handed out: none twice.
var reservedPorts struct {
	sync.Mutex
	next int
}

// reservePort returns a loopback UDP address ("127.0.0.1:PORT") where
// nothing listens, for a test that binds it after a while (a receiver
// restarted on its port, one started late) or needs it to stay dead. A
// port of 127.0.0.1:0's (the kernel's ephemeral range) could meanwhile go
// to another parallel test's socket; this one is below that range (and
// above the fixed ports the examples use), was free when it was picked,
// and is given to no other test.
func reservePort(t testing.TB) string {
	t.Helper()
	reservedPorts.Lock()
	defer reservedPorts.Unlock()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first = 20000
	if reservedPorts.next < first {
		// Where to start depends on the process id, so that two runs of
		// the suite at once on one machine seldom try the same ports.
		reservedPorts.next = first + os.Getpid()%1000*5
	}
	for ; reservedPorts.next < low; reservedPorts.next++ {
		addr := "127.0.0.1:" + strconv.Itoa(reservedPorts.next)
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		pc.Close()
		reservedPorts.next++
		return addr
	}
	t.Fatalf("no free UDP port left from %d up to %d, where ip_local_port_range starts (/proc/sys/net/ipv4)", first, low)
	return ""
}

// line is one line of recv's key log, with when the test read it. A
// character's Key is the character in single quotes ('é'), as keys.Key
// prints it.
type line struct {
	Key     string `json:"key"`
	Char    string `json:"char"`
	Action  string `json:"action"`
	Reason  string `json:"reason"`
	Session string `json:"session"`
	at      time.Time
}

func (l line) String() string {
	if l.Reason != "" {
		return l.Key + " " + l.Action + " (" + l.Reason + ")"
	}
	return l.Key + " " + l.Action
}

// proc is a keyrelay process the test started.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stderr *notebuf.Buffer
	addr   string
	lines  chan line
	done   chan struct{}
	err    error
}

var listenRE = regexp.MustCompile(`listening on ([^\s,]+)`)

// start runs keyrelay with args. For recv and impair it waits until the
// process says where it listens.
func start(t testing.TB, args ...string) *proc {
	t.Helper()
	return startWithEnv(t, nil, args...)
}

// startWithEnv is start with extra environment variables ("DISPLAY=:1").
func startWithEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), runtimeEnv(t)...), env...)
	return startCmd(t, cmd, args[0])
}

// startCmd is start for a command that execs keyrelay through a wrapper
// (a shell setting up signals): verb is keyrelay's command ("recv"), or ""
// not to wait for a recv expected to fail before it listens.
func startCmd(t testing.TB, cmd *exec.Cmd, verb string) *proc {
	t.Helper()
	p := &proc{t: t, stderr: notebuf.New(), lines: make(chan line, 4096), done: make(chan struct{}), cmd: cmd}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("recv printed a line that is not JSON: %q", sc.Text())
				continue
			}
			if l.Char != "" {
				r, _ := utf8.DecodeRuneInString(l.Char)
				l.Key = strconv.QuoteRune(r)
			}
			l.at = time.Now()
			p.lines <- l
		}
		close(p.lines)
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	if verb == "recv" || verb == "impair" {
		deadline := time.After(10 * time.Second)
		for {
			if m := listenRE.FindStringSubmatch(p.stderr.String()); m != nil {
				p.addr = m[1]
				break
			}
			select {
			case <-p.stderr.Written():
			case <-p.done:
				t.Fatalf("%s exited before listening: %v\n%s", verb, p.err, p.stderr)
			case <-deadline:
				t.Fatalf("%s did not start listening:\n%s", verb, p.stderr)
			}
		}
	}
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%v did not exit within %v\n%s", p.cmd.Args, timeout, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// stop sends SIGINT and collects every key line the process printed.
func (p *proc) stop() []line { return p.stopWith(syscall.SIGINT) }

// stopWith sends sig and collects every key line the process printed.
func (p *proc) stopWith(sig syscall.Signal) []line {
	p.t.Helper()
	p.cmd.Process.Signal(sig)
	if code := p.wait(10 * time.Second); code != 0 {
		p.t.Errorf("%v exited %d after %v, want 0\n%s", p.cmd.Args, code, sig, p.stderr)
	}
	var out []line
	for l := range p.lines {
		out = append(out, l)
	}
	return out
}

// next returns the next key line within timeout.
func (p *proc) next(timeout time.Duration) (line, bool) {
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(timeout):
		return line{}, false
	}
}

func script(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "test.keys")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runIn(t, stdin, nil, args...)
}

// runWithEnv is run with no standard input and extra environment variables.
func runWithEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runIn(t, "", env, args...)
}

func runIn(t *testing.T, stdin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	// A new session has no controlling terminal, as in CI, whatever runs
	// the tests.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// No X display either, unless a test asks for one.
	cmd.Env = append(append(append(os.Environ(), "DISPLAY="), runtimeEnv(t)...), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

func render(ls []line) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, "\n")
}

// TestScriptToLog: the exact log of a script relayed over a clean loopback.
func TestScriptToLog(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	want, err := os.ReadFile("../testdata/e2e/basic.expected")
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", "../testdata/e2e/basic.keys")
	if code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^keyrelay send: \d+ events \(\d+ queued, 0 dropped\), \d+ packets, \d+ bytes`).MatchString(stderr) {
		t.Errorf("send printed no summary line:\n%s", stderr)
	}
	got := recv.stop()
	if g, w := render(got), strings.TrimSpace(string(want)); g != w {
		t.Errorf("recv log:\n%s\nwant:\n%s", g, w)
	}
}

// checkBalanced checks DESIGN.md invariants 1 and 2 on a key log: no key-up
// of an unheld key, no second key-down, nothing held at the end.
func checkBalanced(t *testing.T, ls []line) {
	t.Helper()
	held := map[string]bool{}
	for i, l := range ls {
		switch l.Action {
		case "down":
			if held[l.Key] {
				t.Errorf("line %d: second key-down of held %s", i, l.Key)
			}
			held[l.Key] = true
		case "up":
			if !held[l.Key] {
				t.Errorf("line %d: key-up of unheld %s", i, l.Key)
			}
			delete(held, l.Key)
		}
	}
	if len(held) > 0 {
		t.Errorf("keys still held at the end: %v", held)
	}
}

// TestLossyLinkThroughProxy: through `keyrelay impair` at 30 % loss with
// delay, jitter, duplication and reordering, the log stays balanced and the
// key-downs that arrive are in the sender's order.
func TestLossyLinkThroughProxy(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	proxy := start(t, "impair", "--listen", "127.0.0.1:0", "--to", recv.addr,
		"--loss", "0.3", "--delay", "10ms", "--jitter", "5ms", "--duplicate", "0.1", "--reorder", "0.2", "--seed", "1")
	text := "The quick brown fox jumps over the lazy dog 0123456789!"
	code, _, stderr := run(t, "", "send", "--to", proxy.addr, "--script",
		script(t, fmt.Sprintf("pace 15ms\ndown ShiftLeft\ntap KeyA\nup ShiftLeft\ntype %q\nhold KeyB 300ms\n", text)))
	if code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	got := recv.stop()
	checkBalanced(t, got)
	// The key-downs the receiver injects are a subsequence of the sender's
	// (DESIGN.md invariant 3).
	want := []string{"ShiftLeft", "KeyA"}
	for _, r := range text {
		want = append(want, typed(r))
	}
	want = append(want, "KeyB")
	j := 0
	downs := 0
	for _, l := range got {
		if l.Action != "down" {
			continue
		}
		downs++
		for j < len(want) && want[j] != l.Key {
			j++
		}
		if j == len(want) {
			t.Fatalf("key-downs are not a subsequence of the sender's:\n%s", render(got))
		}
		j++
	}
	if downs < len(want)/2 {
		t.Errorf("only %d of %d key-downs arrived through 30%% loss", downs, len(want))
	}
	t.Logf("%d of %d key-downs arrived through 30%% loss; proxy: %s", downs, len(want), strings.TrimSpace(proxy.stop2()))
}

// typed is how a character of a script's type shows in recv's log: the
// character quoted, but a space is the Space key (capture/SCRIPT_FORMAT.md).
func typed(r rune) string {
	if r == ' ' {
		return "Space"
	}
	return strconv.QuoteRune(r)
}

func (p *proc) stop2() string {
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(10 * time.Second)
	return p.stderr.String()
}

// TestKilledSenderReleasesOnTimeout: a sender killed with SIGKILL while
// holding a key cannot release it; the receiver does, within --timeout plus
// 200 ms (DESIGN.md invariant 5).
func TestKilledSenderReleasesOnTimeout(t *testing.T) {
	// Serial: the release is timed (within --timeout + 200 ms), which a
	// loaded machine could break.
	const timeout = 500 * time.Millisecond
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", timeout.String())
	send := start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyK\nsleep 1h\n"))
	l, ok := recv.next(10 * time.Second)
	if !ok || l.String() != "KeyK down" {
		t.Fatalf("first line %v (ok %v), want KeyK down", l, ok)
	}
	send.cmd.Process.Kill()
	killed := time.Now()
	send.wait(5 * time.Second)
	l, ok = recv.next(timeout + 2*time.Second)
	if !ok {
		t.Fatal("KeyK was never released")
	}
	if l.String() != "KeyK up (timeout)" {
		t.Fatalf("got %v, want KeyK up (timeout)", l)
	}
	if d := l.at.Sub(killed); d > timeout+200*time.Millisecond {
		t.Errorf("released %v after the kill, want at most %v", d, timeout+200*time.Millisecond)
	} else {
		t.Logf("released %v after SIGKILL (timeout %v)", d.Round(time.Millisecond), timeout)
	}
	recv.stop()
}

// TestSignalsReleaseKeys: SIGTERM to a sender holding a key makes it send the
// key-up and exit 0 (DESIGN.md invariant 6); SIGINT or SIGTERM to a receiver
// holding a key releases it (reason shutdown) and exits 0.
func TestSignalsReleaseKeys(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
	send := start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyS\nsleep 1h\n"))
	if l, ok := recv.next(10 * time.Second); !ok || l.String() != "KeyS down" {
		t.Fatalf("got %v, want KeyS down", l)
	}
	send.cmd.Process.Signal(syscall.SIGTERM)
	if code := send.wait(10 * time.Second); code != 0 {
		t.Errorf("send exited %d after SIGTERM, want 0\n%s", code, send.stderr)
	}
	if l, ok := recv.next(5 * time.Second); !ok || l.String() != "KeyS up" {
		t.Fatalf("got %v, want KeyS up (a real key-up from the sender)", l)
	}

	send2 := start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyR\nsleep 1h\n"))
	if l, ok := recv.next(10 * time.Second); !ok || l.String() != "KeyR down" {
		t.Fatalf("got %v, want KeyR down", l)
	}
	rest := recv.stop()
	if render(rest) != "KeyR up (shutdown)" {
		t.Errorf("after SIGINT recv printed:\n%s\nwant KeyR up (shutdown)", render(rest))
	}
	// The same with SIGTERM, as a service manager stops it.
	recv2 := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
	send3 := start(t, "send", "--to", recv2.addr, "--script", script(t, "down KeyT\nsleep 1h\n"))
	if l, ok := recv2.next(10 * time.Second); !ok || l.String() != "KeyT down" {
		t.Fatalf("got %v, want KeyT down", l)
	}
	if rest := recv2.stopWith(syscall.SIGTERM); render(rest) != "KeyT up (shutdown)" {
		t.Errorf("after SIGTERM recv printed:\n%s\nwant KeyT up (shutdown)", render(rest))
	}
	send2.cmd.Process.Kill()
	send3.cmd.Process.Kill()
}

// TestCLIErrors: bad input gets a clear message and a non-zero exit code,
// never a panic.
func TestCLIErrors(t *testing.T) {
	t.Parallel()
	busy := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	bad := script(t, "tap KeyA\nfrobnicate\ntap NoSuchKey\n")
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"unknown flag", "", []string{"send", "--bogus"}, 2, "unknown flag: --bogus"},
		{"no destination", "", []string{"send", "--script", "-"}, 2, "no destination"},
		{"no terminal and no script", "", []string{"send", "--to", "127.0.0.1"}, 2, "no terminal to read keys from"},
		{"script input without script", "", []string{"send", "--to", "127.0.0.1", "--input", "script"}, 2, "--input script needs --script"},
		{"unknown input", "", []string{"send", "--to", "127.0.0.1", "--input", "mind"}, 2, `unknown --input "mind"`},
		{"hook without a display", "", []string{"send", "--to", "127.0.0.1", "--input", "hook"}, 1, "DISPLAY is not set"},
		{"bad queue", "", []string{"send", "--to", "127.0.0.1", "--script", "-", "--queue", "0"}, 2, "--queue 0 out of range"},
		{"bad interval", "", []string{"send", "--to", "127.0.0.1", "--script", "-", "--interval", "soon"}, 2, "invalid argument"},
		{"bad script", "\nfrobnicate\ntap KeyA\n", []string{"send", "--to", "127.0.0.1", "--script", "-"}, 1, "<stdin>:2:"},
		{"bad script file names every line", "", []string{"send", "--to", "127.0.0.1", "--script", bad}, 1, bad + ":3:"},
		{"missing script", "", []string{"send", "--to", "127.0.0.1", "--script", "/nonexistent.keys"}, 1, "unable to open script"},
		{"unresolvable host", "tap KeyA\n", []string{"send", "--to", "no-such-host.invalid:7575", "--script", "-"}, 1, "unable to resolve --to"},
		{"port in use", "", []string{"recv", "--listen", busy.addr}, 1, "the port is in use"},
		{"unknown injector", "", []string{"recv", "--inject", "telepathy"}, 2, `unknown --inject "telepathy"`},
		{"uinput without the device", "", []string{"recv", "--inject", "uinput", "--listen", "127.0.0.1:0"}, 1, "modprobe uinput"},
		{"hidg without the gadget", "", []string{"recv", "--inject", "hidg", "--device", "/nonexistent/hidg0", "--listen", "127.0.0.1:0"}, 1, "no /nonexistent/hidg0: set up the USB keyboard gadget first (sudo keyrelay gadget setup"},
		{"recv --device without hidg", "", []string{"recv", "--device", "/dev/hidg1", "--listen", "127.0.0.1:0"}, 2, "--device /dev/hidg1 names the USB keyboard gadget's device, which only --inject hidg types through"},
		{"unknown command", "", []string{"transmit"}, 2, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tt.code, tt.msg)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Errorf("stderr shows a panic:\n%s", stderr)
			}
		})
	}
	busy.stop()
}

// TestVersion: the binary reports a version.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "keyrelay ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestTwoDestinationsIPv4AndIPv6: one sender, --to twice (an IPv4 and an
// IPv6 receiver); both get the whole script.
func TestTwoDestinationsIPv4AndIPv6(t *testing.T) {
	t.Parallel()
	if c, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		c.Close()
	}
	r4 := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	r6 := start(t, "recv", "--inject", "log", "--listen", "[::1]:0")
	code, _, stderr := run(t, "", "send", "--to", r4.addr, "--to", r6.addr, "--script", "../testdata/scripts/hello.keys")
	if code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	a, b := render(r4.stop()), render(r6.stop())
	if a != b || !strings.HasPrefix(a, "'h' down\n'h' up\n'e' down") || strings.Count(a, "\n") != 11 {
		t.Errorf("IPv4 receiver:\n%s\nIPv6 receiver:\n%s", a, b)
	}
}

// waitStderr waits until the process has written want to standard error,
// and reports whether it did within timeout (false also when it exited).
func (p *proc) waitStderr(want string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for !strings.Contains(p.stderr.String(), want) {
		select {
		case <-p.stderr.Written():
		case <-p.done:
			return strings.Contains(p.stderr.String(), want)
		case <-deadline:
			return false
		}
	}
	return true
}
