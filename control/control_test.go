package control_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/control/controltest"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
)

// TestControlSocketOnlyItsOwnerOpens checks the control socket (DESIGN.md,
// Packages: control): in a directory of the user's that nobody else can open
// (another mode is refused with the chmod to run), the socket 0600, named
// by the send's process id; switch and status answer through it.
func TestControlSocketOnlyItsOwnerOpens(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	path := control.Path()
	if pid, ok := control.PID(path); filepath.Dir(path) != filepath.Join(run, "keyrelay") || !ok || pid != os.Getpid() {
		t.Fatalf("control socket at %s, want in %s/keyrelay, named by pid %d", path, run, os.Getpid())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := controltest.New("b")
	if err := control.Listen(ctx, path, h); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{filepath.Dir(path), 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.want {
			t.Errorf("%s has mode %04o, want %04o", c.path, fi.Mode().Perm(), c.want)
		}
	}
	if err := control.Listen(ctx, path, controltest.New("")); err == nil || !strings.Contains(err.Error(), "another keyrelay send answers") {
		t.Errorf("a second send took the socket: %v", err)
	}
	cases := []struct {
		req              control.Request
		target, is, code string
	}{
		{control.Request{Op: "status"}, "b", "", ""},
		{control.Request{Op: "switch", To: "a"}, "a", "", ""},
		{control.Request{Op: "switch", To: "d"}, "a", `no such destination "d"`, control.CodeNoSuchDestination},
		{control.Request{Op: "jump"}, "", `unknown request "jump"`, ""},
	}
	for _, c := range cases {
		ans, err := control.Ask(path, c.req)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Target != c.target || ans.Error != c.is || ans.Code != c.code || ans.PID != os.Getpid() {
			t.Errorf("%+v answered %+v, want target %q error %q code %q pid %d", c.req, ans, c.target, c.is, c.code, os.Getpid())
		}
	}

	open := t.TempDir()
	os.Chmod(open, 0o755)
	t.Setenv("XDG_RUNTIME_DIR", filepath.Dir(open))
	err := control.Listen(ctx, filepath.Join(open, "send.sock"), h)
	if err == nil || !strings.Contains(err.Error(), "chmod 700 "+open) {
		t.Errorf("a directory others can open was taken: %v", err)
	}
}

// TestDeadSendsSocketIsRemoved: a send killed with SIGKILL leaves its
// socket; the next send removes it (its process is gone), and no one
// else's.
func TestDeadSendsSocketIsRemoved(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir := control.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	dead := filepath.Join(dir, fmt.Sprintf("send-%d.sock", gone.Process.Pid))
	alive := filepath.Join(dir, fmt.Sprintf("send-%d.sock", os.Getppid()))
	for _, p := range []string{dead, alive} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := control.Listen(ctx, control.Path(), controltest.New("")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead send's socket is still there: %v", err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("a live process's socket was removed: %v", err)
	}
}

// TestSwitchPicksItsSend checks keyrelay switch with several sends of one
// user running: the one with the destination named, or for local the one
// that can switch; several fit or none: a usage error that says what to
// do (--pid, keyrelay status).
func TestSwitchPicksItsSend(t *testing.T) {
	at := func(pid int, can bool, names ...string) control.Running {
		ans := control.Answer{PID: pid, CanSwitch: can}
		for _, n := range names {
			ans.Dests = append(ans.Dests, control.DestStatus{Name: n})
		}
		return control.Running{Path: fmt.Sprint(pid), Answer: ans}
	}
	one := []control.Running{at(10, false, "a")}
	two := []control.Running{at(10, false, "a", "b"), at(20, true, "c")}
	both := []control.Running{at(10, true, "a"), at(20, true, "a")}
	for _, c := range []struct {
		name    string
		sends   []control.Running
		to      string
		wantPID int
		wantErr string
	}{
		{"the only one, whatever asked (it answers why not)", one, "zz", 10, ""},
		{"the one with the name", two, "b", 10, ""},
		{"local: the one that can switch", two, "local", 20, ""},
		{"none has the name", two, "zz", 0, `none of the 2 keyrelay sends running (pid 10, 20) has a destination "zz"`},
		{"two have the name", both, "a", 0, `2 keyrelay sends running can switch to "a" (pid 10, 20): say which with --pid`},
		{"two can switch to local", both, "local", 0, "say which with --pid"},
		{"none can switch to local", []control.Running{at(10, false, "a"), at(20, false, "b")}, "local", 0, "none of the 2 keyrelay sends running (pid 10, 20) can switch: 'keyrelay status' says why"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := control.Pick(c.sends, c.to)
			if c.wantErr != "" {
				// Only a name no send has, or several have, is the
				// asker's mistake (ErrNoFit: keyrelay switch exits 2).
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.Is(err, control.ErrNoFit) != (c.to != "local" || strings.Contains(c.wantErr, "--pid")) {
					t.Errorf("control.Pick(%q) = %v, want an error with %q", c.to, err, c.wantErr)
				}
				return
			}
			if err != nil || s.Answer.PID != c.wantPID {
				t.Errorf("control.Pick(%q) = pid %d, %v; want pid %d", c.to, s.Answer.PID, err, c.wantPID)
			}
		})
	}
}

// modeFake is a source that owns the keyboard (or not, grab false) and
// switches the moment it is asked.
type modeFake struct {
	grab bool

	mu      sync.Mutex
	on      bool
	changed chan struct{}
}

func (m *modeFake) Play(ctx context.Context, _ func(keys.Key, bool) error) error {
	<-ctx.Done()
	return ctx.Err()
}
func (m *modeFake) Grabbing() bool { return m.grab }
func (m *modeFake) Relaying() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.on
}
func (m *modeFake) SetRelaying(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.grab || m.on == on {
		return
	}
	m.on = on
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}
func (m *modeFake) ModeChanged() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

// loopbackSender is a plaintext sender to its own socket on loopback,
// closed at the test's end, and that socket's address: what a control
// server needs of a Sender, with nothing listening.
func loopbackSender(t *testing.T) (*sender.Sender, net.Addr) {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s, err := sender.New(sender.Config{Conn: conn, Dests: []sender.Dest{{UDP: conn.LocalAddr().(*net.UDPAddr)}}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return s, conn.LocalAddr()
}

// TestPlainSendSwitchesOnlyAGrabbingSource checks keyrelay switch and
// status for a send with one queue to every destination (one, or
// mirror): a source that owns the keyboard goes to local
// use and back (the target follows: local, then the destination, or all
// in mirror); a script or a source without --grab cannot switch, and
// says why, while status still answers.
func TestPlainSendSwitchesOnlyAGrabbingSource(t *testing.T) {
	s, addr := loopbackSender(t)
	for _, c := range []struct {
		name    string
		src     sender.Source
		input   string
		names   []string
		steps   []string // switch to each in turn
		targets []string // the target after each
		errs    []string
	}{
		{"x11 --grab, one destination", &modeFake{grab: true, on: true}, "x11", []string{"pc"},
			[]string{"local", "local", "pc", "zz"}, []string{"local", "local", "pc", "pc"}, []string{"", "", "", `no such destination "zz"`}},
		{"evdev --grab, mirror", &modeFake{grab: true, on: true}, "evdev", []string{"pc", "mac"},
			[]string{"local", "mac"}, []string{"local", "all"}, []string{"", ""}},
		{"x11 without --grab", &modeFake{on: true}, "x11", []string{"pc"},
			[]string{"local"}, []string{"pc"}, []string{"cannot switch: --input x11 without --grab does not own the keyboard"}},
		{"a terminal", fakeScript{}, "terminal", []string{"pc"},
			[]string{"local"}, []string{"pc"}, []string{"cannot switch: --input terminal reads keys typed in send's terminal"}},
		{"a script", fakeScript{}, "script", []string{"pc"},
			[]string{"local", "pc"}, []string{"pc", "pc"}, []string{"cannot switch: --input script plays a script", "cannot switch: --input script"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addrs := make([]net.Addr, len(c.names))
			for i := range addrs {
				addrs[i] = addr
			}
			h := &control.Plain{Sender: s, Source: c.src, Input: c.input, Names: c.names, Addrs: addrs}
			st := h.Status()
			if _, can := c.src.(*modeFake); st.CanSwitch != (can && c.src.(*modeFake).grab) || len(st.Dests) != len(c.names) || st.Input != c.input {
				t.Errorf("status %+v", st)
			}
			if !st.CanSwitch && !strings.Contains(st.Switch, "cannot: --input "+c.input) {
				t.Errorf("status says of switch %q, want why it cannot", st.Switch)
			}
			for i, to := range c.steps {
				err := h.Switch(context.Background(), to)
				if (err == nil) != (c.errs[i] == "") || err != nil && !strings.Contains(err.Error(), c.errs[i]) {
					t.Errorf("switch %s: %v, want %q", to, err, c.errs[i])
				}
				if got := h.Status().Target; got != c.targets[i] {
					t.Errorf("target %q after switch %s, want %q", got, to, c.targets[i])
				}
			}
		})
	}
}

// fakeScript is a source with no keyboard: a script's.
type fakeScript struct{}

func (fakeScript) Play(context.Context, func(keys.Key, bool) error) error { return nil }

// FuzzControlPID reads control socket names as keyrelay status finds
// them in the directory: a name it takes has a positive pid, and the
// names send makes (send-PID.sock, send-PID.N.sock) give their pid back.
func FuzzControlPID(f *testing.F) {
	for _, s := range []string{"send-4242.sock", "send-4242.2.sock", "send.sock", "send-.sock", "send-0.sock", "send--1.sock", "send-99999999999999999999.sock", "other"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		pid, ok := control.PID(filepath.Join("/run/keyrelay", name))
		if ok && pid <= 0 {
			t.Errorf("control.PID(%q) = %d, true: want a positive pid", name, pid)
		}
		if !ok {
			return
		}
		for _, made := range []string{fmt.Sprintf("send-%d.sock", pid), fmt.Sprintf("send-%d.3.sock", pid)} {
			if got, ok := control.PID(made); !ok || got != pid {
				t.Errorf("control.PID(%q) = %d, %v: want %d", made, got, ok, pid)
			}
		}
	})
}

// TestDestinationNamesIgnoreCase: destination names, like peers' names,
// ignore case. keyrelay switch B finds the send with destination b and
// switches it, LOCAL is local (internal/dest's TestNamesIgnoreCase: two
// names that differ only in case are refused).
func TestDestinationNamesIgnoreCase(t *testing.T) {
	at := func(pid int, can bool, names ...string) control.Running {
		ans := control.Answer{PID: pid, CanSwitch: can}
		for _, n := range names {
			ans.Dests = append(ans.Dests, control.DestStatus{Name: n})
		}
		return control.Running{Path: fmt.Sprint(pid), Answer: ans}
	}
	two := []control.Running{at(10, false, "a", "b"), at(20, true, "c")}
	for to, pid := range map[string]int{"B": 10, "C": 20, "LOCAL": 20, "Local": 20} {
		if s, err := control.Pick(two, to); err != nil || s.Answer.PID != pid {
			t.Errorf("control.Pick(%q) = pid %d, %v; want pid %d", to, s.Answer.PID, err, pid)
		}
	}

	s, addr := loopbackSender(t)
	h := &control.Plain{Sender: s, Source: &modeFake{grab: true, on: true}, Input: "x11", Names: []string{"pc"}, Addrs: []net.Addr{addr}}
	for _, step := range []struct{ to, target string }{{"LOCAL", "local"}, {"PC", "pc"}, {"Local", "local"}, {"Pc", "pc"}} {
		if err := h.Switch(context.Background(), step.to); err != nil {
			t.Errorf("switch %s: %v", step.to, err)
		}
		if got := h.Status().Target; got != step.target {
			t.Errorf("target %q after switch %s, want %q", got, step.to, step.target)
		}
	}

}
