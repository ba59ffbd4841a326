package guard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guardedEnv makes the test binary the guarded process of these tests: it
// starts a "record" guard writing to the file the variable names, puts
// heldText in the page, says "ready GUARD-PID" and waits to be killed.
const guardedEnv = "GUARD_TEST_GUARDED"

const heldText = "held KeyA"

func TestMain(m *testing.M) {
	Serve(map[string]Action{"record": record})
	if out := os.Getenv(guardedEnv); out != "" {
		os.Unsetenv(guardedEnv)
		g, err := Start("record", out)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		copy(g.Page, heldText)
		fmt.Println("ready", g.PID())
		select {}
	}
	os.Exit(m.Run())
}

// record is the tests' Action: it writes what the page holds (up to its
// first NUL) to the file args[0] names, an empty page too.
func record(args []string) Undo {
	return func(page []byte) (string, error) {
		text, _, _ := bytes.Cut(page, []byte{0})
		if err := os.WriteFile(args[0], text, 0o600); err != nil {
			return "", err
		}
		if len(text) == 0 {
			return "", nil
		}
		return "recorded " + string(text), nil
	}
}

// startGuarded runs the guarded process in a process group of its own and
// returns it with its guard's PID.
func startGuarded(t *testing.T, out string) (*exec.Cmd, int, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), guardedEnv+"="+out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	pidText, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	pid, perr := strconv.Atoi(pidText)
	if err != nil || !ok || perr != nil {
		t.Fatalf("the guarded process said %q (%v)", line, err)
	}
	return cmd, pid, &stderr
}

// until polls cond every 5 ms (the state of another process, which gives
// no event to wait on) until it holds, failing after 10 s with what cond
// last said.
func until(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal(state)
		}
	}
}

// gone waits until process pid has ended: no such process, or a zombie
// (reparented to a PID 1 that does not reap).
func gone(t *testing.T, pid int) {
	t.Helper()
	until(t, func() (bool, string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, os.ErrNotExist) {
			return true, ""
		}
		i := bytes.LastIndexByte(stat, ')')
		return i > 0 && len(stat) > i+2 && stat[i+2] == 'Z', fmt.Sprintf("the guard process %d is still running: %s", pid, stat)
	})
}

// ignoring waits until process pid ignores sig (SigIgn in its status):
// a guard does once it has started.
func ignoring(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	until(t, func() (bool, string) {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, l := range strings.Split(string(status), "\n") {
			if hex, ok := strings.CutPrefix(l, "SigIgn:"); ok {
				mask, _ := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
				return mask&(1<<(sig-1)) != 0, fmt.Sprintf("the guard process %d does not ignore %v: %s", pid, sig, l)
			}
		}
		return false, fmt.Sprintf("no process %d", pid)
	})
}

// waitFile waits until path (another process writes it) holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	until(t, func() (bool, string) {
		got, err := os.ReadFile(path)
		return err == nil && string(got) == want, fmt.Sprintf("%s holds %q (%v), want %q", path, got, err, want)
	})
}

// TestKilledProcessIsUndone: the guarded process killed by SIGKILL, alone
// or with its whole process group: its guard reads what it left in the
// page, runs its action and ends.
func TestKilledProcessIsUndone(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run(map[bool]string{false: "process", true: "group"}[group], func(t *testing.T) {
			out := t.TempDir() + "/out"
			cmd, guard, stderr := startGuarded(t, out)
			pid := cmd.Process.Pid
			if group {
				pid = -pid
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			waitFile(t, out, heldText)
			gone(t, guard)
			if want := "recorded " + heldText; !strings.Contains(stderr.String(), want) {
				t.Errorf("the guard said %q, want %q", stderr.String(), want)
			}
		})
	}
}

// TestStopLeavesNothing: a process that clears the page and stops its
// guard (a clean exit): the guard reads an empty page, says nothing and
// has ended when Stop returns.
func TestStopLeavesNothing(t *testing.T) {
	out := t.TempDir() + "/out"
	g, err := Start("record", out)
	if err != nil {
		t.Fatal(err)
	}
	copy(g.Page, heldText)
	clear(g.Page)
	pid := g.PID()
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || len(got) != 0 {
		t.Errorf("the guard recorded %q (%v), want an empty page", got, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the guard process %d is still there after Stop (%v)", pid, err)
	}
}

// TestSignalsDoNotEndTheGuard: the signals that stop recv cleanly reach
// its guard too when they go to the whole cgroup (systemd's stop): the
// guard ignores them and ends with the process, doing its job.
func TestSignalsDoNotEndTheGuard(t *testing.T) {
	out := t.TempDir() + "/out"
	cmd, guard, _ := startGuarded(t, out)
	ignoring(t, guard, syscall.SIGTERM)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if err := syscall.Kill(guard, sig); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitFile(t, out, heldText)
}

// TestStartNeedsServe: a program that did not call Serve (a test binary
// of another package) starts no guard: it would run itself again.
func TestStartNeedsServe(t *testing.T) {
	serving.Store(false)
	defer serving.Store(true)
	if _, err := Start("record", "/dev/null"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start without Serve: %v, want ErrUnavailable", err)
	}
}

// TestStrayRoleIgnored: the role variable in a process started without a
// guard's page (inherited from a guard's environment, or typed) makes no
// guard.
func TestStrayRoleIgnored(t *testing.T) {
	t.Setenv(roleEnv, strconv.Itoa(os.Getppid()))
	if _, _, _, ok := role(); ok {
		t.Error("a role without the guard's page was taken")
	}
}
