package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeControl is a running send's side of the control socket.
type fakeControl struct{ target string }

func (f *fakeControl) Switch(_ context.Context, name string) error {
	if name != "a" && name != "local" {
		return errors.New(`no such destination "` + name + `"`)
	}
	f.target = name
	return nil
}

func (f *fakeControl) Status() controlAnswer {
	return controlAnswer{Target: f.target, Dests: []destStatus{{Name: "a", Addr: "127.0.0.1:1", State: "live", Live: true}}}
}

// TestControlSocketOnlyItsOwnerOpens checks issue 27 must-have 2's
// control socket: in a directory of the user's that nobody else can open
// (another mode is refused with the chmod to run), the socket 0600; a
// second send cannot take it over; switch and status answer through it.
func TestControlSocketOnlyItsOwnerOpens(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	path := controlPath()
	if path != filepath.Join(run, "keyrelay", "send.sock") {
		t.Fatalf("control socket at %s", path)
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
		req        controlRequest
		target, is string
	}{
		{controlRequest{Op: "status"}, "b", ""},
		{controlRequest{Op: "switch", To: "a"}, "a", ""},
		{controlRequest{Op: "switch", To: "d"}, "a", `no such destination "d"`},
		{controlRequest{Op: "jump"}, "", `unknown request "jump"`},
	}
	for _, c := range cases {
		ans, err := askControl(c.req)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Target != c.target || ans.Error != c.is {
			t.Errorf("%+v answered %+v, want target %q error %q", c.req, ans, c.target, c.is)
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
	if c := runningSend(); c.skipped == "" || c.err != nil {
		t.Errorf("no send running: %+v, want skipped", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := listenControl(ctx, controlPath(), &charsControl{}); err != nil {
		t.Fatal(err)
	}
	c := runningSend()
	want := "target mac; destinations mac 127.0.0.1:1 (live, characters), pc 127.0.0.1:2 (no answer yet)"
	if c.err != nil || c.ok != want {
		t.Errorf("running send: %+v\nwant ok %q", c, want)
	}
}
