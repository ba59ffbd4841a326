package cmd

import (
	"bytes"
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

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sender"
)

// fakeControl is a running send's side of the control socket.
type fakeControl struct {
	mu     sync.Mutex
	target string
	names  []string // its destinations: "a" when none
	cannot bool     // its source cannot switch
}

func (f *fakeControl) dests() []string {
	if len(f.names) == 0 {
		return []string{"a"}
	}
	return f.names
}

func (f *fakeControl) Switch(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "local" && !strings.Contains(","+strings.Join(f.dests(), ",")+",", ","+name+",") {
		return fmt.Errorf("%w %q", sender.ErrNoSuchDestination, name)
	}
	if f.cannot {
		return fmt.Errorf("%w: --input script plays a script", errCannotSwitch)
	}
	f.target = name
	return nil
}

func (f *fakeControl) Status() controlAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	ans := controlAnswer{Target: f.target, CanSwitch: !f.cannot}
	for _, n := range f.dests() {
		ans.Dests = append(ans.Dests, destStatus{Name: n, Addr: "127.0.0.1:1", State: "live", Live: true})
	}
	return ans
}

// TestControlSocketOnlyItsOwnerOpens checks issue 27 must-have 2's
// control socket: in a directory of the user's that nobody else can open
// (another mode is refused with the chmod to run), the socket 0600, named
// by the send's process id; switch and status answer through it.
func TestControlSocketOnlyItsOwnerOpens(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	path := controlPath()
	if pid, ok := controlPID(path); filepath.Dir(path) != filepath.Join(run, "keyrelay") || !ok || pid != os.Getpid() {
		t.Fatalf("control socket at %s, want in %s/keyrelay, named by pid %d", path, run, os.Getpid())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &fakeControl{target: "b"}
	if err := listenControl(ctx, path, h); err != nil {
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
	if err := listenControl(ctx, path, &fakeControl{}); err == nil || !strings.Contains(err.Error(), "another keyrelay send answers") {
		t.Errorf("a second send took the socket: %v", err)
	}
	cases := []struct {
		req              controlRequest
		target, is, code string
	}{
		{controlRequest{Op: "status"}, "b", "", ""},
		{controlRequest{Op: "switch", To: "a"}, "a", "", ""},
		{controlRequest{Op: "switch", To: "d"}, "a", `no such destination "d"`, codeNoSuchDestination},
		{controlRequest{Op: "jump"}, "", `unknown request "jump"`, ""},
	}
	for _, c := range cases {
		ans, err := askControl(path, c.req)
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
	err := listenControl(ctx, filepath.Join(open, "send.sock"), h)
	if err == nil || !strings.Contains(err.Error(), "chmod 700 "+open) {
		t.Errorf("a directory others can open was taken: %v", err)
	}
}

// TestDeadSendsSocketIsRemoved: a send killed with SIGKILL leaves its
// socket; the next send removes it (its process is gone), and no one
// else's.
func TestDeadSendsSocketIsRemoved(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir := controlDir()
	if err := makeControlDir(dir); err != nil {
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
	if err := listenControl(ctx, controlPath(), &fakeControl{}); err != nil {
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
	at := func(pid int, can bool, names ...string) runningSendAt {
		ans := controlAnswer{PID: pid, CanSwitch: can}
		for _, n := range names {
			ans.Dests = append(ans.Dests, destStatus{Name: n})
		}
		return runningSendAt{path: fmt.Sprint(pid), ans: ans}
	}
	one := []runningSendAt{at(10, false, "a")}
	two := []runningSendAt{at(10, false, "a", "b"), at(20, true, "c")}
	both := []runningSendAt{at(10, true, "a"), at(20, true, "a")}
	for _, c := range []struct {
		name    string
		sends   []runningSendAt
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
		{"none can switch to local", []runningSendAt{at(10, false, "a"), at(20, false, "b")}, "local", 0, "none of the 2 keyrelay sends running (pid 10, 20) can switch: 'keyrelay status' says why"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := pickSend(c.sends, c.to)
			if c.wantErr != "" {
				// Only a name no send has is a usage error.
				var ue config.UsageError
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.As(err, &ue) != (c.to != "local" || strings.Contains(c.wantErr, "--pid")) {
					t.Errorf("pickSend(%q) = %v, want an error with %q", c.to, err, c.wantErr)
				}
				return
			}
			if err != nil || s.ans.PID != c.wantPID {
				t.Errorf("pickSend(%q) = pid %d, %v; want pid %d", c.to, s.ans.PID, err, c.wantPID)
			}
		})
	}
}

// TestStatusListsEverySendAndSwitchTalksToOne runs keyrelay status and
// switch against two sends of one user (issue 27 must-have 2, several
// sends at once): status shows both, --pid one; switch goes to the one
// with the destination and changes only it; one that cannot switch
// answers why, with exit status 1; no send running is an error that says
// to start one.
func TestStatusListsEverySendAndSwitchTalksToOne(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	cmd := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	if code, _, stderr := cmd("status"); code != ExitError || !strings.Contains(stderr, "no keyrelay send runs as this user") {
		t.Errorf("status with none running: exit %d, %q", code, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	routed := &fakeControl{target: "a", names: []string{"a", "b"}}
	script := &fakeControl{target: "s", names: []string{"s"}, cannot: true}
	for _, h := range []*fakeControl{routed, script} {
		if err := listenControl(ctx, controlPath(), h); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := cmd("status")
	if code != 0 || strings.Count(out, fmt.Sprintf("send %d", os.Getpid())) != 2 || !strings.Contains(out, "target: a") || !strings.Contains(out, "target: s") {
		t.Errorf("status: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = cmd("status", "--json")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"target":"s"`) {
		t.Errorf("status --json: exit %d, want one line per send:\n%s", code, out)
	}
	if code, _, stderr = cmd("status", "--pid", "1"); code != ExitError || !strings.Contains(stderr, fmt.Sprintf("no keyrelay send with pid 1 runs as this user: the ones running have pid %d, %d", os.Getpid(), os.Getpid())) {
		t.Errorf("status --pid 1: exit %d, %q", code, stderr)
	}
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"switch", "b"}, 0, "target: b\n", ""},
		{[]string{"switch", "s"}, ExitError, "", "cannot switch: --input script plays a script"},
		{[]string{"switch", "zz"}, ExitUsage, "", `has a destination "zz"`},
	} {
		code, out, stderr := cmd(c.args...)
		if code != c.code || out != c.out || !strings.Contains(stderr, c.err) {
			t.Errorf("%v: exit %d, %q, %q; want %d, %q, %q", c.args, code, out, stderr, c.code, c.out, c.err)
		}
	}
	if routed.target != "b" || script.target != "s" {
		t.Errorf("targets %q and %q after switch b: want b, and s unchanged", routed.target, script.target)
	}
}

// charsControl is a running send with a destination in characters mode.
type charsControl struct{ fakeControl }

func (f *charsControl) Status() controlAnswer {
	return controlAnswer{Target: "mac", Dests: []destStatus{
		{Name: "mac", Addr: "127.0.0.1:1", State: "live", Live: true, Keys: "characters"},
		{Name: "pc", Addr: "127.0.0.1:2", State: "no answer yet", Keys: "physical"}}}
}

// TestDoctorShowsTheRunningSend checks issue 27 must-have 5 for doctor:
// with a send with named destinations running, doctor names its target
// and each destination, its state and whether it gets characters; with
// none, it says so without failing.
func TestDoctorShowsTheRunningSend(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if c := runningSend(); c.Skipped == "" || c.Err != nil {
		t.Errorf("no send running: %+v, want skipped", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := listenControl(ctx, controlPath(), &charsControl{}); err != nil {
		t.Fatal(err)
	}
	c := runningSend()
	want := "target mac; destinations mac 127.0.0.1:1 (live, characters), pc 127.0.0.1:2 (no answer yet)"
	if c.Err != nil || c.OK != want {
		t.Errorf("running send: %+v\nwant ok %q", c, want)
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

// TestPlainSendSwitchesOnlyAGrabbingSource checks keyrelay switch and
// status for a send with one queue to every destination (one, or mirror;
// issue 27 must-have 2): a source that owns the keyboard goes to local
// use and back (the target follows: local, then the destination, or all
// in mirror); a script or a source without --grab cannot switch, and
// says why, while status still answers.
func TestPlainSendSwitchesOnlyAGrabbingSource(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := sender.New(sender.Config{Conn: conn, Dests: []sender.Dest{{UDP: conn.LocalAddr().(*net.UDPAddr)}}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := conn.LocalAddr()
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
			h := &plainControl{s: s, src: c.src, input: c.input, names: c.names, addrs: addrs}
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
		pid, ok := controlPID(filepath.Join("/run/keyrelay", name))
		if ok && pid <= 0 {
			t.Errorf("controlPID(%q) = %d, true: want a positive pid", name, pid)
		}
		if !ok {
			return
		}
		for _, made := range []string{fmt.Sprintf("send-%d.sock", pid), fmt.Sprintf("send-%d.3.sock", pid)} {
			if got, ok := controlPID(made); !ok || got != pid {
				t.Errorf("controlPID(%q) = %d, %v: want %d", made, got, ok, pid)
			}
		}
	})
}

// TestClientsCheckTheControlDirectory (issue 27 must-have 2's directory,
// checked by the clients too): a control directory another user made
// (without XDG_RUNTIME_DIR its name in /tmp is predictable), or one others
// can open, is not talked to by keyrelay status and switch: they refuse,
// naming it, before asking any socket in it. A sender's socket there
// answers; nothing asks it.
func TestClientsCheckTheControlDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"mode 0755", func(t *testing.T, dir string) { os.Chmod(dir, 0o755) }, "has mode 0755"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the directory away")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Skipf("cannot give the directory away: %v", err)
			}
		}, "belongs to another user (uid 65534)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &fakeControl{target: "a", names: []string{"a", "planted"}}
			if err := listenControl(ctx, controlPath(), h); err != nil {
				t.Fatal(err)
			}
			if sends, err := runningSends(0); err != nil || len(sends) != 1 {
				t.Fatalf("before: %d sends, %v; want the one listening", len(sends), err)
			}
			tc.plant(t, controlDir())
			sends, err := runningSends(0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), controlDir()) {
				t.Errorf("runningSends = %d sends, %v; want refused, saying %q", len(sends), err, tc.want)
			}
			var out, errb bytes.Buffer
			for _, args := range [][]string{{"status"}, {"switch", "local"}} {
				code := Run(args, IO{Out: &out, Err: &errb})
				if code == 0 || strings.Contains(out.String(), "planted") {
					t.Errorf("keyrelay %v: exit %d, printed %q; want refused", args, code, out.String())
				}
			}
			if h.target != "a" {
				t.Errorf("the planted socket was switched to %q", h.target)
			}
		})
	}
}
