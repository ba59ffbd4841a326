//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/netsim"
)

// TestHangupAndQuitEndSendCleanly (DESIGN.md invariant 6): SIGHUP (the
// terminal or SSH session closing) and SIGQUIT to a sender holding a key end
// it as SIGTERM does: the key-up arrives from the sender (no "timeout"
// reason), recv logs the session as ended, not timed out, and send exits 0
// as every receiver acknowledged the final state.
func TestHangupAndQuitEndSendCleanly(t *testing.T) {
	// Serial: recv's --timeout 200ms must not end the session before the
	// sender's key-up comes, which a loaded machine could delay.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			// A short --timeout ends the released session soon; an hour
			// would hide nothing, as a timeout while holding is logged
			// differently.
			recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "200ms")
			send := start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyH\nsleep 1h\n"))
			if l, ok := recv.next(10 * time.Second); !ok || l.String() != "KeyH down" {
				t.Fatalf("got %v, want KeyH down\n%s", l, recv.stderr)
			}
			send.cmd.Process.Signal(sig)
			if code := send.wait(10 * time.Second); code != 0 {
				t.Errorf("send exited %d after %v, want 0\n%s", code, sig, send.stderr)
			}
			if !strings.Contains(send.stderr.String(), "delivered: every receiver acknowledged the final state") {
				t.Errorf("send did not confirm delivery after %v:\n%s", sig, send.stderr)
			}
			if l, ok := recv.next(5 * time.Second); !ok || l.String() != "KeyH up" {
				t.Fatalf("got %v, want KeyH up (a real key-up from the sender)", l)
			}
			id := regexp.MustCompile(`session ([0-9a-f]{16}): sending`).FindStringSubmatch(send.stderr.String())
			if id == nil {
				t.Fatalf("send did not name its session:\n%s", send.stderr)
			}
			if how := recv.sessionEnd(t, id[1]); how != "ended" {
				t.Errorf("recv says session %s %s after %v to send, want ended\n%s", id[1], how, sig, recv.stderr)
			}
			if rest := recv.stop(); len(rest) > 0 {
				t.Errorf("keys logged after the session ended:\n%s", render(rest))
			}
		})
	}
}

// TestHangupWithoutReceiverExits3: SIGHUP to a sender nobody answers ends
// it by the same delivery rule as SIGTERM: exit status 3, delivery not
// confirmed.
func TestHangupWithoutReceiverExits3(t *testing.T) {
	t.Parallel()
	send := start(t, "send", "--to", deadAddr(t), "--linger", "100ms", "--script", script(t, "down KeyH\nsleep 1h\n"))
	// Once it names its session the signals are caught (cmd.Run set them
	// up before running the command).
	if !send.waitStderr(": sending to", 10*time.Second) {
		t.Fatalf("send did not start:\n%s", send.stderr)
	}
	send.cmd.Process.Signal(syscall.SIGHUP)
	if code := send.wait(10 * time.Second); code != 3 {
		t.Errorf("send exited %d after SIGHUP with no receiver, want 3\n%s", code, send.stderr)
	}
	if !strings.Contains(send.stderr.String(), "delivery not confirmed (exit status 3)") {
		t.Errorf("send did not say delivery was not confirmed:\n%s", send.stderr)
	}
}

// TestHangupAndQuitEndRecvCleanly: SIGHUP and SIGQUIT to a receiver holding
// a key release it (reason shutdown) and exit 0, as SIGINT and SIGTERM do
// (TestSignalsReleaseKeys); SIGQUIT does not dump goroutines.
func TestHangupAndQuitEndRecvCleanly(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "1h")
			send := start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyR\nsleep 1h\n"))
			if l, ok := recv.next(10 * time.Second); !ok || l.String() != "KeyR down" {
				t.Fatalf("got %v, want KeyR down", l)
			}
			if rest := recv.stopWith(sig); render(rest) != "KeyR up (shutdown)" {
				t.Errorf("after %v recv printed:\n%s\nwant KeyR up (shutdown)", sig, render(rest))
			}
			if strings.Contains(recv.stderr.String(), "goroutine ") {
				t.Errorf("recv dumped goroutines on %v:\n%s", sig, recv.stderr)
			}
			send.cmd.Process.Kill()
		})
	}
}

// TestNohupRecvIgnoresHangup: a receiver started with SIGHUP ignored
// (nohup, a shell's trap "" HUP) keeps it ignored, so closing the terminal
// it was started from does not stop it: catching SIGHUP would undo that
// (os/signal re-enables an inherited SIG_IGN for SIGHUP when notified).
func TestNohupRecvIgnoresHangup(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", `trap "" HUP; exec "$@"`, "sh", bin, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	recv := startCmd(t, cmd, "recv")
	// The kernel's view of the disposition, rather than a wait for
	// nothing to happen: SIGHUP ignored, not caught.
	status, err := os.ReadFile("/proc/" + strconv.Itoa(recv.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	const hup = uint64(1) << (syscall.SIGHUP - 1)
	if ign, cgt := sigMask(t, status, "SigIgn"), sigMask(t, status, "SigCgt"); ign&hup == 0 || cgt&hup != 0 {
		t.Errorf("under nohup recv's SIGHUP is ignored %v, caught %v; want ignored, not caught", ign&hup != 0, cgt&hup != 0)
	}
	recv.cmd.Process.Signal(syscall.SIGHUP)
	// Still relaying after the hangup, then a clean stop.
	if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, "tap KeyN\n")); code != 0 {
		t.Fatalf("send after recv's SIGHUP exited %d:\n%s", code, stderr)
	}
	if rest := recv.stopWith(syscall.SIGTERM); render(rest) != "KeyN down\nKeyN up" {
		t.Errorf("recv under nohup after SIGHUP logged:\n%s\nwant KeyN down, KeyN up", render(rest))
	}
}

// sigMask reads a signal mask line ("SigIgn:\t0000000000000001") of
// /proc/PID/status.
func sigMask(t *testing.T, status []byte, name string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `:\s*([0-9a-f]+)$`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no %s in /proc status:\n%s", name, status)
	}
	v, err := strconv.ParseUint(string(m[1]), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sessionEnd waits until recv logs how session id ended: "ended" (the
// sender released everything) or "timed out" (keys released by recv's
// --timeout).
func (p *proc) sessionEnd(t *testing.T, id string) string {
	t.Helper()
	re := regexp.MustCompile(`session ` + id + ` from \S+ (ended|timed out)`)
	deadline := time.After(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.stderr.Written():
		case <-p.done:
			t.Fatalf("recv exited before session %s ended: %v\n%s", id, p.err, p.stderr)
		case <-deadline:
			t.Fatalf("recv did not end session %s:\n%s", id, p.stderr)
		}
	}
}

// TestSignalAtHeavyLossExitsInTime (README: send's end; PROTOCOL.md §7.1):
// SIGTERM to a send typing through 80 % loss both ways, with a queue of 8
// and three keys held, ends it within --linger + --timeout (2.3 s) at any
// loss, the acks that trickle in notwithstanding; what it gave up is
// counted and named. The link (a netsim.Proxy in the test, what keyrelay
// impair runs) is clean until the first key is typed, so that every run
// gets through the handshake at once; from then on it drops 80 % of the
// queue packets and of the acks, which the test checks it did. Three
// runs, three seeds.
func TestSignalAtHeavyLossExitsInTime(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	text.WriteString("tap Escape\npace 20ms\n")
	for _, k := range restartKeys {
		text.WriteString("tap " + k + "\n")
	}
	text.WriteString("down ShiftLeft\ndown ControlLeft\ndown AltLeft\nsleep 60s\n")
	keys := script(t, text.String())
	var took []time.Duration
	for _, seed := range []uint64{1, 2, 3} {
		recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
		proxy := &netsim.Proxy{Listen: "127.0.0.1:0", Target: recv.addr,
			Forward: netsim.Config{Seed: seed}, Backward: netsim.Config{Seed: seed}}
		addr, err := proxy.Start()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- proxy.Serve(ctx) }()
		send := start(t, "send", "--to", addr.String(), "--queue", "8", "--outage", "60s", "--script", keys)
		// The first key typed: the handshake is done. Then 80 % loss for
		// the rest of the script's taps (1.6 s) and the keys held.
		if _, ok := recv.next(20 * time.Second); !ok {
			t.Fatalf("seed %d: nothing typed over a clean link in 20 s:\n%s", seed, send.stderr)
		}
		if err := proxy.SetLoss(0.8, 0.8); err != nil {
			t.Fatal(err)
		}
		fwd0, back0 := proxy.Stats()
		time.Sleep(3 * time.Second) // the scenario: typing, then keys held, then the signal
		send.cmd.Process.Signal(syscall.SIGTERM)
		signalled := time.Now()
		code := send.wait(30 * time.Second)
		d := time.Since(signalled)
		took = append(took, d)
		fwd, back := proxy.Stats()
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		stderr := send.stderr.String()
		fs, fd := fwd.Sent-fwd0.Sent, fwd.Dropped-fwd0.Dropped
		bs, bd := back.Sent-back0.Sent, back.Dropped-back0.Dropped
		t.Logf("seed %d: send exited %d, %v after SIGTERM; lossy link: %d of %d packets and %d of %d acks dropped; %s", seed, code, d.Round(10*time.Millisecond),
			fd, fs, bd, bs, regexp.MustCompile(`gave up waiting[^\n]*`).FindString(stderr))
		// The bound was checked through heavy loss both ways.
		if fs < 20 || float64(fd) < 0.6*float64(fs) || bs == 0 || bd == 0 {
			t.Errorf("seed %d: the link dropped %d of %d packets and %d of %d acks after the first key, want about 80 %% of each", seed, fd, fs, bd, bs)
		}
		// --linger 0.3 s + --timeout 2 s, and a loaded machine's margin
		// (the race detector's build).
		if d > 3500*time.Millisecond {
			t.Errorf("seed %d: send exited %v after SIGTERM, want within about --linger + --timeout (2.3s)\n%s", seed, d, stderr)
		}
		if code != 0 && code != 3 {
			t.Errorf("seed %d: send exited %d, want 0 or 3\n%s", seed, code, stderr)
		}
		if code == 3 && !strings.Contains(stderr, "key events never reached it") && !strings.Contains(stderr, "did not acknowledge the final state") {
			t.Errorf("seed %d: exit 3 without naming what was not delivered:\n%s", seed, stderr)
		}
		recv.stop()
	}
	t.Logf("exited %v after SIGTERM", took)
}
