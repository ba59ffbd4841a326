//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The trust tests: who a receiver accepts, and for how long (PROTOCOL.md
// §8.1, §8.7).

// twoHosts is two network namespaces joined by a veth pair, as two
// machines on a LAN: a at ipA, b at ipB.
type twoHosts struct {
	a, b     string
	ipA, ipB string
}

// newTwoHosts makes them (subnet 10.78.N.0/24), removed after t; it skips
// t where namespaces cannot be made (not root, no ip(8)).
func newTwoHosts(t *testing.T, n int) *twoHosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) from iproute2")
	}
	id := os.Getpid() % 100000
	h := &twoHosts{a: fmt.Sprintf("krt%dA%d", n, id), b: fmt.Sprintf("krt%dB%d", n, id),
		ipA: fmt.Sprintf("10.78.%d.1", n), ipB: fmt.Sprintf("10.78.%d.2", n)}
	if out, err := exec.Command("ip", "netns", "add", h.a).CombinedOutput(); err != nil {
		t.Skipf("cannot create network namespaces here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", h.a).Run() })
	netns(t, "netns", "add", h.b)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", h.b).Run() })
	va, vb := fmt.Sprintf("kt%da%d", n, id), fmt.Sprintf("kt%db%d", n, id)
	netns(t, "link", "add", va, "netns", h.a, "type", "veth", "peer", "name", vb, "netns", h.b)
	netns(t, "-n", h.a, "addr", "add", h.ipA+"/24", "dev", va)
	netns(t, "-n", h.b, "addr", "add", h.ipB+"/24", "dev", vb)
	for _, x := range [][2]string{{h.a, va}, {h.b, vb}, {h.a, "lo"}, {h.b, "lo"}} {
		netns(t, "-n", x[0], "link", "set", x[1], "up")
	}
	return h
}

// in is keyrelay run with args in namespace ns (nsenter execs it: the
// process is keyrelay itself).
func (h *twoHosts) in(t *testing.T, ns string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + ns, "--", bin}, args...)...)
	cmd.Env = append(os.Environ(), runtimeEnv(t)...)
	return cmd
}

// TestOwnIdentityFromAnotherMachineTypesNothing (PROTOCOL.md §8.1, §8.7):
// recv accepts its own identity as "this machine" only from this machine.
// Its own send, on loopback, types; a copy of its identity file used on a
// second machine (another network namespace), with a peers file naming the
// receiver, types nothing: send exits 3, and recv says the identity is
// accepted from this machine only.
func TestOwnIdentityFromAnotherMachineTypesNothing(t *testing.T) {
	t.Parallel()
	h := newTwoHosts(t, 1)
	dir := t.TempDir()
	idFile, recvPeers := filepath.Join(dir, "recv.identity"), filepath.Join(dir, "recv-peers.toml")
	code, out, stderr := run(t, "", "id", "--identity", idFile)
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	recvKey := strings.Fields(out)[0]
	recv := startCmd(t, h.in(t, h.a, "recv", "--inject", "log", "--listen", "0.0.0.0:7575", "--identity", idFile, "--peers", recvPeers), "recv")

	// This machine's own send: the same identity, on loopback.
	own := h.in(t, h.a, "send", "--to", "127.0.0.1:7575", "--identity", idFile, "--peers", filepath.Join(dir, "own-peers.toml"), "--script", "../testdata/scripts/hello.keys")
	if o, err := own.CombinedOutput(); err != nil {
		t.Fatalf("this machine's own send: %v\n%s", err, o)
	}
	var typed []line
	for len(typed) < 12 {
		l, ok := recv.next(5 * time.Second)
		if !ok {
			t.Fatalf("this machine's own send typed %d key events, want 12\n%s", len(typed), recv.stderr)
		}
		typed = append(typed, l)
	}

	// The copy, on the other machine, pairing the receiver by its key.
	stolen := filepath.Join(dir, "stolen.identity")
	b, err := os.ReadFile(idFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stolen, b, 0o600); err != nil {
		t.Fatal(err)
	}
	thiefPeers := filepath.Join(dir, "thief-peers.toml")
	if code, _, stderr := run(t, "", "peers", "add", "victim", recvKey, "--addr", h.ipA+":7575", "--peers", thiefPeers, "--identity", filepath.Join(dir, "unrelated.identity")); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	thief := h.in(t, h.b, "send", "--to", "victim", "--identity", stolen, "--peers", thiefPeers, "--script", "../testdata/scripts/hello.keys")
	o, err := thief.CombinedOutput()
	exit := thief.ProcessState.ExitCode()
	if l, ok := recv.next(500 * time.Millisecond); ok {
		t.Errorf("the copy of recv's identity on %s typed %v (send exit %d: %v)\n%s", h.ipB, l, exit, err, o)
	}
	if exit != 3 {
		t.Errorf("send with the copied identity from %s: exit %d, want 3 (unanswered)\n%s", h.ipB, exit, o)
	}
	if !recv.waitStderr("accepted from this machine only", 5*time.Second) {
		t.Errorf("recv does not say why it refused %s:\n%s", h.ipB, recv.stderr)
	}
	t.Logf("own send on loopback: %d key events typed; the copy from %s: send exit %d", len(typed), h.ipB, exit)
}

// TestRemovedPeerStopsTypingWithinASecond (PROTOCOL.md §8.1, §8.7): a
// machine removed from recv's peers file while it types ('keyrelay peers
// remove', or an edit that leaves the file broken: a file that does not
// load accepts nobody) types nothing from a second after the change, and
// the key it held is released then, for that reason ("revoked"), not
// after recv's --timeout (5 s here); recv says so, and a broken file as an
// error. The sender holds Shift over 80 taps of A, 50 ms apart.
func TestRemovedPeerStopsTypingWithinASecond(t *testing.T) {
	// Serial: the release is timed (within a second of the change: the
	// receiver checks twice a second), which a loaded machine could break.
	var text strings.Builder
	text.WriteString("pace 50ms\ndown ShiftLeft\n")
	for range 80 {
		text.WriteString("tap KeyA\n")
	}
	text.WriteString("up ShiftLeft\n")
	keys := script(t, text.String())
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, peersFile string)
		said   string
	}{
		{"peers remove", func(t *testing.T, peersFile string) {
			if code, _, stderr := run(t, "", "peers", "remove", "laptop", "--peers", peersFile); code != 0 {
				t.Fatalf("peers remove: exit %d\n%s", code, stderr)
			}
		}, "no longer paired"},
		{"broken peers file", func(t *testing.T, peersFile string) {
			if err := os.WriteFile(peersFile, []byte("[[peer]]\nname = 'laptop'\nkey = 'garbled in an edit'\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "ERROR: the peers file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sendID, recvPeers, sendPeers := filepath.Join(dir, "laptop.identity"), filepath.Join(dir, "recv-peers.toml"), filepath.Join(dir, "send-peers.toml")
			code, out, stderr := run(t, "", "id", "--identity", sendID)
			if code != 0 {
				t.Fatalf("id: exit %d\n%s", code, stderr)
			}
			if code, _, stderr := run(t, "", "peers", "add", "laptop", strings.Fields(out)[0], "--peers", recvPeers); code != 0 {
				t.Fatalf("peers add: exit %d\n%s", code, stderr)
			}
			recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--peers", recvPeers, "--timeout", "5s")
			code, recvKey, stderr := run(t, "", "id")
			if code != 0 {
				t.Fatalf("id: exit %d\n%s", code, stderr)
			}
			if code, _, stderr := run(t, "", "peers", "add", "rx", strings.Fields(recvKey)[0], "--addr", recv.addr, "--peers", sendPeers, "--identity", sendID); code != 0 {
				t.Fatalf("peers add: exit %d\n%s", code, stderr)
			}
			send := start(t, "send", "--identity", sendID, "--peers", sendPeers, "--to", "rx", "--script", keys)
			var before []line
			for len(before) < 21 { // Shift and 10 taps
				l, ok := recv.next(10 * time.Second)
				if !ok {
					t.Fatalf("the paired machine typed %d key events, want 21 before the removal\n%s", len(before), recv.stderr)
				}
				before = append(before, l)
			}
			removed := time.Now()
			tc.remove(t, recvPeers)
			send.wait(60 * time.Second)
			got := append(before, recv.stop()...)
			var taps, tapsAfter int
			var released *line
			var lastDown time.Time
			for i, l := range got {
				switch {
				case l.Key == "KeyA" && l.Action == "down":
					taps++
					if l.at.After(removed) {
						tapsAfter++
					}
					lastDown = l.at
				case l.Key == "ShiftLeft" && l.Action == "up" && released == nil:
					released = &got[i]
				}
			}
			rel := "never"
			if released != nil {
				rel = fmt.Sprintf("%v after it (%s)", released.at.Sub(removed).Round(time.Millisecond), released.Reason)
			}
			t.Logf("%s: %d of 80 taps typed, %d after the removal, the last %v after it; Shift released %s",
				tc.name, taps, tapsAfter, lastDown.Sub(removed).Round(time.Millisecond), rel)
			const within = time.Second
			if d := lastDown.Sub(removed); d > within {
				t.Errorf("the removed machine typed until %v after the removal, want within %v", d.Round(time.Millisecond), within)
			}
			switch {
			case released == nil:
				t.Errorf("Shift was never released")
			case released.Reason != "revoked" || released.at.Sub(removed) > within:
				t.Errorf("Shift released %v after the removal for %q, want within %v for \"revoked\"", released.at.Sub(removed).Round(time.Millisecond), released.Reason, within)
			}
			if taps >= 80 {
				t.Errorf("all %d taps typed", taps)
			}
			if !strings.Contains(recv.stderr.String(), tc.said) {
				t.Errorf("recv did not say %q:\n%s", tc.said, recv.stderr)
			}
		})
	}
}

// yesPair runs `yes | keyrelay pair ARGS...` (a script answering y to
// every question) with files in dir, and returns its exit status and
// output once it ends.
func yesPair(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", `yes | exec "$0" pair "$@"`, bin}, args...)...)
	cmd.Env = append(os.Environ(), runtimeEnv(t)...)
	return cmd
}

// peersIn is what `keyrelay peers` lists in the peers file f ("" when
// there are none).
func peersIn(t *testing.T, f string) string {
	t.Helper()
	code, out, stderr := run(t, "", "peers", "--peers", f)
	if code != 0 {
		t.Fatalf("keyrelay peers: exit %d\n%s", code, stderr)
	}
	return strings.TrimSpace(out)
}

// TestYesPipedIntoPairStoresNothing (pair/doc.go; README "Machine
// identities and peers"): an answer must come from a person. `yes |
// keyrelay pair` (no terminal on standard input) exits 2 at once and
// stores nothing, so whoever asks first (here another `yes | keyrelay
// pair`) is not paired; with
// --scripted the waiting end needs --from, and takes a request only from
// that address (a request from elsewhere is ignored, and it times out
// storing nothing); from the address named, the scripted pairing works
// (the --help example's recipe).
func TestYesPipedIntoPairStoresNothing(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	t.Parallel()
	for _, tc := range []struct {
		name        string
		listenFlags []string
		askFlags    []string
		listenExit  int
		paired      bool
	}{
		{"no flag", nil, nil, 2, false},
		{"scripted from another address", []string{"--scripted", "--from", "127.0.0.2"}, []string{"--scripted"}, 1, false},
		{"scripted from the address named", []string{"--scripted", "--from", "127.0.0.1"}, []string{"--scripted"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := func(n string) string { return filepath.Join(dir, n) }
			addr := reservePort(t)
			listener := yesPair(t, append([]string{"--listen", addr, "--name", "b", "--timeout", "4s",
				"--identity", f("b.identity"), "--peers", f("b-peers.toml")}, tc.listenFlags...)...)
			lout := &strings.Builder{}
			listener.Stdout, listener.Stderr = lout, lout
			if err := listener.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { listener.Wait(); close(done) }()
			t.Cleanup(func() { listener.Process.Kill(); <-done })
			// Whoever asks first: a machine on 127.0.0.1, answering y too.
			asker := yesPair(t, append([]string{addr, "--name", "intruder", "--timeout", "4s",
				"--identity", f("intruder.identity"), "--peers", f("intruder-peers.toml")}, tc.askFlags...)...)
			aout, _ := asker.CombinedOutput()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the listener did not end\n%s", lout)
			}
			got := listener.ProcessState.ExitCode()
			stored := peersIn(t, f("b-peers.toml"))
			t.Logf("listener %v: exit %d, stores %q; asker exit %d", tc.listenFlags, got, stored, asker.ProcessState.ExitCode())
			if got != tc.listenExit {
				t.Errorf("the listener exited %d, want %d\n%s", got, tc.listenExit, lout)
			}
			if has := strings.Contains(stored, "intruder"); has != tc.paired {
				t.Errorf("the listener's peers: %q; want the asker stored: %v\nlistener:\n%s\nasker:\n%s", stored, tc.paired, lout, aout)
			}
			if tc.listenExit == 2 && !strings.Contains(lout.String(), "not a terminal") {
				t.Errorf("the listener does not say why it refused:\n%s", lout)
			}
		})
	}
}

// TestConfigDirOthersCanWriteIsRefused (PROTOCOL.md §8.1, as ssh's
// StrictModes): a directory other users can write (0777) lets them swap
// the peers file or the identity in it whatever the files' own modes, so
// recv refuses to start with files there, naming the directory and the
// chmod that fixes it; so does `keyrelay id` with its default config
// directory (XDG_CONFIG_HOME/keyrelay) open to all. Fixed, recv starts.
func TestConfigDirOthersCanWriteIsRefused(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	cfg := filepath.Join(base, "keyrelay")
	idFile, peersFile := filepath.Join(cfg, "identity"), filepath.Join(cfg, "peers.toml")
	if code, _, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + base}, "id"); code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	other := filepath.Join(base, "other.identity")
	code, out, stderr := run(t, "", "id", "--identity", other)
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "", "peers", "add", "laptop", strings.Fields(out)[0], "--peers", peersFile, "--identity", idFile); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	if err := os.Chmod(cfg, 0o777); err != nil {
		t.Fatal(err)
	}
	recv := startCmd(t, exec.Command(bin, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--identity", idFile, "--peers", peersFile), "")
	code = recv.wait(10 * time.Second)
	fix := "chmod go-w " + cfg
	if code == 0 || !strings.Contains(recv.stderr.String(), fix) {
		t.Errorf("recv with its files in a directory of mode 0777: exit %d, want non-zero naming %q\n%s", code, fix, recv.stderr)
	}
	code, _, stderr = runWithEnv(t, []string{"XDG_CONFIG_HOME=" + base}, "id")
	if code == 0 || !strings.Contains(stderr, fix) {
		t.Errorf("keyrelay id with its config directory 0777: exit %d, want non-zero naming %q\n%s", code, fix, stderr)
	}
	t.Logf("config directory 0777: recv exit %d, id exit %d", recv.cmd.ProcessState.ExitCode(), code)
	if err := os.Chmod(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	ok := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--identity", idFile, "--peers", peersFile)
	ok.stop()
}

// TestPlantedControlDirectoryIsRefused (the control socket, package control;
// README "keyrelay switch"): without XDG_RUNTIME_DIR a user's control
// sockets are in /tmp/keyrelay-UID, a name anyone can work out. Another
// user (here nobody) who makes it first, with a socket answering as a
// send, must not be believed: keyrelay status and switch, run as the user
// (a test user made with useradd), refuse the directory, naming it, and
// exit non-zero; they print nothing it says, and the planted socket gets
// no request.
func TestPlantedControlDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to add a test user")
	}
	for _, tool := range []string{"useradd", "userdel", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	name := fmt.Sprintf("krtest%d", os.Getpid()%100000)
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Skipf("cannot add a test user: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	idOut, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid := strings.TrimSpace(string(idOut))
	// The binary where the test user can run it.
	binDir, err := os.MkdirTemp("", "keyrelay-victim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	os.Chmod(binDir, 0o755)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	userBin := filepath.Join(binDir, "keyrelay")
	if err := os.WriteFile(userBin, b, 0o755); err != nil {
		t.Fatal(err)
	}

	// nobody's directory, made first, with a socket that answers as a
	// send would, with a destination of its own.
	planted := filepath.Join(os.TempDir(), "keyrelay-"+uid)
	os.RemoveAll(planted)
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(planted) })
	sock := filepath.Join(planted, "send-4242.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o777)
	for _, p := range []string{planted, sock} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	var asked atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			asked.Add(1)
			bufio.NewReader(c).ReadBytes('\n')
			c.Write([]byte(`{"pid":4242,"input":"x11","target":"planted","mode":"relaying","can_switch":true,"switch":"yes","destinations":[{"name":"planted","addr":"203.0.113.9:7575","state":"live","live":true,"keys":"physical"}]}` + "\n"))
			c.Close()
		}
	}()

	asUser := func(args ...string) (int, string) {
		cmd := exec.Command("setpriv", append([]string{"--reuid", uid, "--regid", uid, "--clear-groups", "env", "-i", "PATH=/usr/bin:/bin", "HOME=/", userBin}, args...)...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	for _, args := range [][]string{{"status"}, {"switch", "local"}} {
		code, out := asUser(args...)
		t.Logf("as %s: keyrelay %s: exit %d: %s", name, strings.Join(args, " "), code, strings.TrimSpace(out))
		if code == 0 || strings.Contains(out, "203.0.113.9") || !strings.Contains(out, "belongs to another user") {
			t.Errorf("keyrelay %s as %s with nobody's %s: exit %d, want non-zero, refusing the directory\n%s", strings.Join(args, " "), name, planted, code, out)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the planted socket was asked %d times", n)
	}
}
