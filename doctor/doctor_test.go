package doctor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportRolesAndFailures: Run lists every check of the role this
// machine has, and the other role's as not checked; Failed counts the
// needed checks that failed (the key source's, here: evdev on a device
// that is not there), not those of other sources, which are not needed.
func TestReportRolesAndFailures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir) // no send of the developer's running
	missing := filepath.Join(dir, "event9")
	o := &Options{Role: RoleSend, Inject: "log", Input: "evdev", Devices: []string{missing}, Listen: "127.0.0.1:0", Insecure: true,
		IdentityPath: filepath.Join(dir, "identity"), PeersPath: filepath.Join(dir, "peers.toml")}
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Check{}
	for _, c := range rep.Checks {
		byName[c.Name] = c
	}
	if c := byName["UDP port for recv"]; !strings.HasPrefix(c.Skipped, "not checked: this machine sends only") {
		t.Errorf("recv's port check %+v, want not checked", c)
	}
	if c := byName["keyboards under /dev/input (--input evdev)"]; !c.Needed || c.Err == nil || !strings.Contains(c.Err.Error(), missing) {
		t.Errorf("the evdev check %+v, want needed and failed, naming %s", c, missing)
	}
	if n := rep.Failed(); n != 1 {
		t.Errorf("Failed() = %d, want 1 (the evdev check)\n%+v", n, rep.Checks)
	}
	if rep.Choices != "--input evdev" {
		t.Errorf("choices %q, want --input evdev", rep.Choices)
	}
	if _, err := Run(context.Background(), &Options{Role: "sender"}); err == nil || !strings.Contains(err.Error(), `unknown --role "sender"`) {
		t.Errorf("--role sender: %v, want refused", err)
	}
}
