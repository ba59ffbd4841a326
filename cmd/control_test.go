package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/control/controltest"
)

// TestStatusListsEverySendAndSwitchTalksToOne runs keyrelay status and
// switch against two sends of one user, running at once: status shows
// both, --pid one; switch goes to the one
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
	routed := controltest.New("a", "a", "b")
	script := controltest.New("s", "s")
	script.Cannot = true
	for _, h := range []*controltest.Send{routed, script} {
		if err := control.Listen(ctx, control.Path(), h); err != nil {
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
	if routed.Target() != "b" || script.Target() != "s" {
		t.Errorf("targets %q and %q after switch b: want b, and s unchanged", routed.Target(), script.Target())
	}
}

// TestClientsCheckTheControlDirectory: the clients check the control
// directory too: one another user made (without XDG_RUNTIME_DIR its name
// in /tmp is predictable), or one others can open, is not talked to by
// keyrelay status and switch: they refuse, naming it, before asking any
// socket in it. A sender's socket there answers; nothing asks it.
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
			h := controltest.New("a", "a", "planted")
			if err := control.Listen(ctx, control.Path(), h); err != nil {
				t.Fatal(err)
			}
			if sends, err := control.Sends(0); err != nil || len(sends) != 1 {
				t.Fatalf("before: %d sends, %v; want the one listening", len(sends), err)
			}
			tc.plant(t, control.Dir())
			sends, err := control.Sends(0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), control.Dir()) {
				t.Errorf("runningSends = %d sends, %v; want refused, saying %q", len(sends), err, tc.want)
			}
			var out, errb bytes.Buffer
			for _, args := range [][]string{{"status"}, {"switch", "local"}} {
				code := Run(args, IO{Out: &out, Err: &errb})
				if code == 0 || strings.Contains(out.String(), "planted") {
					t.Errorf("keyrelay %v: exit %d, printed %q; want refused", args, code, out.String())
				}
			}
			if h.Target() != "a" {
				t.Errorf("the planted socket was switched to %q", h.Target())
			}
		})
	}
}
