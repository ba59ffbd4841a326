//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// doctor runs keyrelay doctor with DISPLAY set to display ("" for none).
func doctor(t *testing.T, display string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"doctor"}, args...)...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func wantLine(t *testing.T, out, prefix string, parts ...string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			next := out[strings.Index(out, l)+len(l):]
			for _, p := range parts {
				if !strings.Contains(l+next[:min(len(next), 300)], p) {
					t.Errorf("line %q (and its fix) lacks %q", l, p)
				}
			}
			return
		}
	}
	t.Errorf("no line starting %q in:\n%s", prefix, out)
}

// TestDoctor (issue 6): under Xvfb with and without RECORD, with no
// DISPLAY, with a key file of mode 0644 and with the port taken, doctor
// reports the right failure and fix, and exits non-zero when something the
// chosen injector or source needs is missing.
func TestDoctor(t *testing.T) {
	needX(t)
	withRecord := startXvfb(t)
	code, out := doctor(t, withRecord, "--inject", "robotgo", "--input", "hook", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Errorf("all present: exit %d\n%s", code, out)
	}
	wantLine(t, out, "ok    X display and XTEST")
	wantLine(t, out, "ok    X RECORD extension")
	wantLine(t, out, "ok    key file", "mode 0600", "fingerprint")

	// (This Xvfb drops XTEST too when RECORD is disabled; with --inject
	// log only RECORD is needed.)
	noRecord := startXvfbArgs(t, "-extension", "RECORD")
	code, out = doctor(t, noRecord, "--inject", "log", "--input", "hook", "--listen", "127.0.0.1:0")
	if code != 1 {
		t.Errorf("no RECORD: exit %d\n%s", code, out)
	}
	wantLine(t, out, "FAIL  X RECORD extension", "lacks the RECORD extension", "fix:", "Load \"record\"")

	code, out = doctor(t, "", "--inject", "robotgo", "--input", "script", "--listen", "127.0.0.1:0")
	if code != 1 {
		t.Errorf("no DISPLAY: exit %d\n%s", code, out)
	}
	wantLine(t, out, "FAIL  X display and XTEST", "DISPLAY is not set", "fix:", "DISPLAY=:0")

	loose := filepath.Join(t.TempDir(), "loose.key")
	run(t, "", "keygen", "--out", loose)
	os.Chmod(loose, 0o644)
	code, out = doctor(t, "", "--inject", "log", "--input", "script", "--listen", "127.0.0.1:0", "--key-file", loose)
	if code != 1 {
		t.Errorf("key 0644: exit %d\n%s", code, out)
	}
	wantLine(t, out, "FAIL  key file mode", "0644", "fix: chmod 600 "+loose)

	busy := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	code, out = doctor(t, "", "--inject", "log", "--input", "script", "--listen", busy.addr, "--peer", busy.addr)
	if code != 1 {
		t.Errorf("port taken: exit %d\n%s", code, out)
	}
	wantLine(t, out, "FAIL  UDP port for recv", "is in use", "fix:", "--listen")
	wantLine(t, out, "ok    round trip to "+busy.addr, "a recv answered in")
	wantLine(t, out, "ok    clock offset to "+busy.addr, "its clock is", "--max-skew")
	busy.stop()
}
