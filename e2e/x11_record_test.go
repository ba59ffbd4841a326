//go:build e2e

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// TestRecordSoakLeavesServerHealthy: sessions of send --input x11 (RECORD,
// no grab) against one X server, each typing a word and then stopped by
// SIGTERM or SIGKILL, with the server's layout changed (setxkbmap) between
// them, leave the server alive and answering after every one, and its log
// free of the allocator's and the server's crash messages; every third
// session instead records a second server that goes away under it, and
// send exits non-zero naming it (DESIGN.md, "RECORD's recording client
// gets only the recording"). The keys of every session reach recv.
//
// X11_SOAK_SESSIONS sets the number of sessions (12 by default, for CI);
// X11_SOAK_VALGRIND=1 runs the servers under valgrind and fails on any
// invalid access it reports (make x11-soak does both). Not KEYRELAY_
// variables: TestMain clears those.
func TestRecordSoakLeavesServerHealthy(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap")
	sessions := 12
	if n, err := strconv.Atoi(os.Getenv("X11_SOAK_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	valgrind := os.Getenv("X11_SOAK_VALGRIND") == "1"
	if valgrind {
		if _, err := exec.LookPath("valgrind"); err != nil {
			t.Fatal("X11_SOAK_VALGRIND=1 needs valgrind (apt-get install valgrind)")
		}
	}
	// Under valgrind the server is some 20 times slower.
	slow := time.Duration(1)
	if valgrind {
		slow = 10
	}
	main := startSoakXvfb(t, valgrind, slow)
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	layouts := []string{"us", "br", "de", "us"}
	for i := range sessions {
		x := main
		stop := []string{"SIGTERM", "SIGKILL", "display gone"}[i%3]
		if stop == "display gone" {
			x = startSoakXvfb(t, valgrind, slow)
		}
		env := []string{"DISPLAY=" + x.display}
		send := startWithEnv(t, env, "send", "--to", recv.addr, "--input", "x11")
		if !send.waitStderr("capturing keys of DISPLAY="+x.display, 10*slow*time.Second) {
			t.Fatalf("session %d: send did not start capturing:\n%s\nserver log:\n%s", i, send.stderr, x.log())
		}
		xdotool(t, x.display, "type", "--delay", "10", "kr")
		for _, want := range []string{"KeyK", "KeyR"} {
			if !recvGets(recv, want, 5*slow*time.Second) {
				t.Fatalf("session %d: recv did not get %s\nsend:\n%s", i, want, send.stderr)
			}
		}
		// A layout change while keys are typed and recorded: every client
		// gets MappingNotify, the recording connection too unless it
		// opted out (xrecord's Open says why it does).
		typing := exec.Command("xdotool", "type", "--delay", "2", strings.Repeat("layout ", 8))
		typing.Env = append(os.Environ(), env...)
		if err := typing.Start(); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("setxkbmap", "-display", x.display, layouts[(i+1)%len(layouts)]).CombinedOutput(); err != nil {
			t.Fatalf("session %d: setxkbmap while typing: %v %s\nserver log:\n%s", i, err, out, x.log())
		}
		typing.Wait()
		switch stop {
		case "SIGTERM":
			send.cmd.Process.Signal(syscall.SIGTERM)
			if code := send.wait(10 * slow * time.Second); code != 0 {
				t.Errorf("session %d: send exited %d after SIGTERM\n%s", i, code, send.stderr)
			}
		case "SIGKILL":
			send.cmd.Process.Kill()
			send.wait(10 * time.Second)
		case "display gone":
			x.stop()
			if code := send.wait(10 * time.Second); code == 0 || !strings.Contains(send.stderr.String(), "X server of DISPLAY="+x.display+" went away") {
				t.Errorf("session %d: send exited %d when its X server went away, want non-zero naming it\n%s", i, code, send.stderr)
			}
			x.check(t, i)
		}
		main.alive(t, i, slow)
		if out, err := exec.Command("setxkbmap", "-display", main.display, layouts[i%len(layouts)]).CombinedOutput(); err != nil {
			t.Fatalf("session %d: setxkbmap %s: %v %s", i, layouts[i%len(layouts)], err, out)
		}
		main.alive(t, i, slow)
	}
	main.stop()
	main.check(t, sessions)
}

// recvGets waits for recv to log a press of key (its name: "KeyK").
func recvGets(recv *proc, key string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-recv.lines:
			if !ok {
				return false
			}
			if l.Key == key && l.Action == "down" {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// soakXvfb is an X server for the soak, perhaps under valgrind, with its
// log (stderr, and valgrind's) in a file.
type soakXvfb struct {
	display, logPath string
	cmd              *exec.Cmd
	exited           chan struct{}
	stopped          bool
	valgrind         bool
}

// startSoakXvfb starts Xvfb (under valgrind when asked) and returns it
// once it answers.
func startSoakXvfb(t *testing.T, valgrind bool, slow time.Duration) *soakXvfb {
	t.Helper()
	dir := t.TempDir()
	x := &soakXvfb{logPath: filepath.Join(dir, "server.log"), exited: make(chan struct{}), valgrind: valgrind}
	logf, err := os.Create(x.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"Xvfb", "-displayfd", "3", "-noreset", "-nolisten", "tcp", "-screen", "0", "1024x768x24"}
	if valgrind {
		supp, err := filepath.Abs("testdata/xvfb.supp")
		if err != nil {
			t.Fatal(err)
		}
		args = append([]string{"valgrind", "--suppressions=" + supp, "--log-file=" + filepath.Join(dir, "valgrind.log")}, args...)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	x.cmd = exec.Command(args[0], args[1:]...)
	x.cmd.ExtraFiles = []*os.File{w}
	x.cmd.Stdout, x.cmd.Stderr = logf, logf
	if err := x.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() { x.cmd.Wait(); logf.Close(); close(x.exited) }()
	t.Cleanup(func() {
		if !x.stopped {
			x.cmd.Process.Kill()
			<-x.exited
		}
	})
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if _, err := strconv.Atoi(n); err != nil {
			t.Fatalf("Xvfb gave display %q\n%s", n, x.log())
		}
		x.display = ":" + n
	case <-time.After(30 * slow * time.Second):
		t.Fatalf("Xvfb did not start\n%s", x.log())
	}
	return x
}

// log returns the server's log, and valgrind's.
func (x *soakXvfb) log() string {
	b, _ := os.ReadFile(x.logPath)
	v, _ := os.ReadFile(filepath.Join(filepath.Dir(x.logPath), "valgrind.log"))
	return string(b) + string(v)
}

// alive fails the test unless the server still runs and answers a round
// trip on a new connection.
func (x *soakXvfb) alive(t *testing.T, session int, slow time.Duration) {
	t.Helper()
	select {
	case <-x.exited:
		t.Fatalf("session %d: the X server died: %v\n%s", session, x.cmd.ProcessState, x.log())
	default:
	}
	done := make(chan error, 1)
	go func() {
		c, err := xgb.NewConnDisplay(x.display)
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = xproto.GetInputFocus(c).Reply()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("session %d: the X server does not answer: %v\n%s", session, err, x.log())
		}
	case <-time.After(10 * slow * time.Second):
		t.Fatalf("session %d: the X server does not answer within %v\n%s", session, 10*slow*time.Second, x.log())
	}
}

// stop ends the server with SIGTERM (valgrind then writes its summary).
func (x *soakXvfb) stop() {
	x.stopped = true
	x.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-x.exited:
	case <-time.After(60 * time.Second):
		x.cmd.Process.Kill()
		<-x.exited
	}
}

// crashRE matches what glibc's allocator, the server and valgrind say of
// a corrupted or crashed server: an invalid access, not valgrind's notes
// on uninitialised bytes (Xvfb writes the unset padding of its events and
// replies to every client, with or without keyrelay).
var crashRE = regexp.MustCompile(`(?m)double free|free\(\): |corrupted|Segmentation fault|Caught signal|Fatal server error|Invalid (read|write|free)|Mismatched free|Jump to the invalid|Process terminating|Bad permissions`)

// check fails the test if the server's log tells of a crash or an invalid
// memory access.
func (x *soakXvfb) check(t *testing.T, sessions int) {
	t.Helper()
	log := x.log()
	if crashRE.MatchString(log) {
		t.Errorf("after %d sessions the X server's log tells of memory errors (%q):\n%s", sessions, crashRE.FindString(log), log)
	}
	if x.valgrind && !strings.Contains(log, "ERROR SUMMARY") {
		t.Errorf("after %d sessions valgrind wrote no summary: did the server run under it?\n%s", sessions, log)
	}
}
