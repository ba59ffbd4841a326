//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
