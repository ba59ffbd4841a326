//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// doctor runs keyrelay doctor with DISPLAY set to display ("" for none).
func doctor(t *testing.T, display string, args ...string) (int, string) {
	t.Helper()
	return doctorEnv(t, []string{"DISPLAY=" + display}, args...)
}

// doctorEnv runs keyrelay doctor with extra environment variables.
func doctorEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"doctor"}, args...)...)
	cmd.Env = append(append(os.Environ(), runtimeEnv(t)...), env...)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func wantLine(t *testing.T, out, prefix string, parts ...string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			next := out[strings.Index(out, l)+len(l):]
			for _, p := range parts {
				if !strings.Contains(l+next[:min(len(next), 600)], p) {
					t.Errorf("line %q (and its fix) lacks %q", l, p)
				}
			}
			return
		}
	}
	t.Errorf("no line starting %q in:\n%s", prefix, out)
}

// TestDoctor: under Xvfb with and without RECORD, with no DISPLAY, with a
// key file of mode 0644 and with the port taken, doctor reports the right
// failure and fix, and exits non-zero when something the chosen injector or
// source needs is missing.
func TestDoctor(t *testing.T) {
	t.Parallel()
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

	// (A port held by a running recv is fine: TestDoctorWithRecvRunning.)
}

var sessionRE = regexp.MustCompile(`new session ([0-9a-f]{16}) from`)

// TestDoctorWithRecvRunning: doctor checks what the configured role needs,
// with recv-only and send-only configs while recv runs. On a machine whose
// recv runs: with a recv-only config (--config) doctor checks no terminal
// and finds its own recv on the port (it answers the probe): exit 0; with a
// send-only config ($KEYRELAY_CONFIG) it does not check the listen port, and
// probes the recv its [send] to names, by itself or as --peer: exit 0. No
// probe shows up on the receiver as a lost session: each ends, holding no
// key, never "timed out". Once the recv is stopped, the same send-only
// config fails with exit 1, naming the address, the line it came from and
// the likely causes. A port held by another program fails, naming the port
// and how to find the holder.
func TestDoctorWithRecvRunning(t *testing.T) {
	// Serial: a doctor's probe must end on recv's --timeout 100ms, not time
	// out, which a loaded machine could make it do.
	r := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--timeout", "100ms")
	dir := t.TempDir()
	recvConf := filepath.Join(dir, "recv.toml")
	sendConf := filepath.Join(dir, "send.toml")
	writeConf := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf(recvConf, fmt.Sprintf("[recv]\ninject = \"log\"\nlisten = %q\n", r.addr))
	writeConf(sendConf, fmt.Sprintf("[send]\nto = [%q]\nscript = \"keys.txt\"\n", r.addr))

	// No terminal here (doctor runs without one): a receiver needs none.
	code, out := doctorEnv(t, []string{"DISPLAY="}, "--config", recvConf)
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("recv-only config, recv running: exit %d\n%s", code, out)
	}
	wantLine(t, out, "ok    role: recv only", "[recv] in "+recvConf)
	wantLine(t, out, "--    terminal (--input terminal): not checked: this machine receives only")
	wantLine(t, out, "--    X RECORD extension (--input x11 without --grab): not checked")
	wantLine(t, out, "ok    UDP port for recv: keyrelay recv already running on "+r.addr, "answered a probe", "under this key")

	code, out = doctorEnv(t, []string{"DISPLAY=", "KEYRELAY_CONFIG=" + sendConf}, "--peer", r.addr)
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("send-only config, recv running: exit %d\n%s", code, out)
	}
	wantLine(t, out, "ok    role: send only", "[send] in "+sendConf)
	wantLine(t, out, "--    UDP port for recv: not checked: this machine sends only")
	wantLine(t, out, "--    terminal (--input terminal):", "not needed for --input script")
	wantLine(t, out, "--    send's destinations ([send] to in "+sendConf+":2): not probed: "+r.addr+" (--peer) is probed instead")
	wantLine(t, out, "ok    round trip to "+r.addr+": a recv answered in")
	wantLine(t, out, "ok    clock offset to "+r.addr, "its clock is")

	// Without --peer, [send] to is probed by itself.
	code, out = doctorEnv(t, []string{"DISPLAY=", "KEYRELAY_CONFIG=" + sendConf})
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("send-only config, recv running, no --peer: exit %d\n%s", code, out)
	}
	wantLine(t, out, "ok    round trip to "+r.addr+" ([send] to in "+sendConf+":2): a recv answered in")
	wantLine(t, out, "ok    clock offset to "+r.addr, "its clock is")

	// Each probe was a session on the receiver; each must end as a clean
	// sender's does (no key held), not time out as a lost one.
	ids := map[string]bool{}
	for _, m := range sessionRE.FindAllStringSubmatch(r.stderr.String(), -1) {
		ids[m[1]] = true
	}
	if len(ids) < 3 {
		t.Fatalf("recv saw %d probe sessions, want 3 (one per doctor)\n%s", len(ids), r.stderr)
	}
	deadline := time.After(10 * time.Second)
	for id := range ids {
		expired := regexp.MustCompile(`session ` + id + ` from \S+ (ended|timed out)[^\n]*`)
		for {
			if m := expired.FindStringSubmatch(r.stderr.String()); m != nil {
				if m[1] != "ended" {
					t.Errorf("doctor's probe looks like a lost session on the receiver: %q\n%s", m[0], r.stderr)
				}
				break
			}
			select {
			case <-r.stderr.Written():
			case <-r.done:
				t.Fatalf("recv exited: %v\n%s", r.err, r.stderr)
			case <-deadline:
				t.Fatalf("recv did not end probe session %s after its --timeout 100ms\n%s", id, r.stderr)
			}
		}
	}
	r.stop()

	// The receiver [send] to names is gone: nothing listens on its port.
	code, out = doctorEnv(t, []string{"DISPLAY=", "KEYRELAY_CONFIG=" + sendConf})
	if code != 1 {
		t.Errorf("send-only config, recv stopped: exit %d, want 1\n%s", code, out)
	}
	_, recvPort, _ := net.SplitHostPort(r.addr)
	wantLine(t, out, "FAIL  round trip to "+r.addr+" ([send] to in "+sendConf+":2): no answer within 2s",
		"no recv on port "+recvPort+" there", "another key", "--insecure on one end only", "a firewall dropping UDP "+recvPort,
		"fix: start 'keyrelay recv' there, listening on port "+recvPort, "correct [send] to in "+sendConf+":2")

	// Another program holds the port: it does not answer the probe.
	other, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	taken := other.LocalAddr().String()
	_, port, _ := net.SplitHostPort(taken)
	writeConf(recvConf, fmt.Sprintf("[recv]\ninject = \"log\"\nlisten = %q\n", taken))
	code, out = doctorEnv(t, []string{"DISPLAY="}, "--config", recvConf)
	if code != 1 {
		t.Errorf("port held by another program: exit %d, want 1\n%s", code, out)
	}
	wantLine(t, out, "FAIL  UDP port for recv: "+taken+" is in use by a program that does not answer a keyrelay probe",
		"fix: ss -ulpn 'sport = :"+port+"'", "--listen another port")
}

// TestDoctorCharactersFromTheXKeymap is doctor's check of send's
// characters mode with --input x11 (README "Characters across layouts"):
// on a German Xvfb desktop it says the layout comes from the X server's
// keymap, and which layout that is now, and follows setxkbmap fr; with no
// X display it fails, saying to run in the X session or name the layout
// with --layout.
func TestDoctorCharactersFromTheXKeymap(t *testing.T) {
	needX(t, "setxkbmap")
	display := startXvfb(t)
	args := []string{"--role", "send", "--insecure", "--input", "x11", "--keys", "characters"}
	for _, layout := range []string{"de", "fr"} {
		setLayout(t, display, layout)
		code, out := doctor(t, display, args...)
		if code != 0 {
			t.Errorf("on %s: exit %d\n%s", layout, code, out)
		}
		wantLine(t, out, "ok    characters mode: every destination (--keys characters): through the X server's keymap",
			"DISPLAY="+display+", now the layout "+layout+")", "again each time it changes (setxkbmap)")
	}
	code, out := doctor(t, "", args...)
	if code != 1 {
		t.Errorf("no DISPLAY: exit %d\n%s", code, out)
	}
	wantLine(t, out, "FAIL  characters mode: every destination (--keys characters): the X server's keymap cannot be read", "DISPLAY is not set",
		"fix: run doctor and send in the X session", "--layout LAYOUT")
}
