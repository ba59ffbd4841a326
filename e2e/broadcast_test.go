//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/notebuf"
)

// netns runs ip(8) and fails the test on error.
func netns(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestBroadcast: a sender in one network namespace sends to the subnet's
// broadcast address and a receiver in another gets every key (both ends
// with --one-way, which a broadcast needs: PROTOCOL.md §8.4). The two
// namespaces and the veth pair between them are made by the test and
// removed after it.
func TestBroadcast(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) from iproute2")
	}
	a, b := fmt.Sprintf("kr-a-%d", os.Getpid()), fmt.Sprintf("kr-b-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", a).CombinedOutput(); err != nil {
		t.Skipf("cannot create network namespaces here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", a).Run() })
	netns(t, "netns", "add", b)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", b).Run() })
	va, vb := fmt.Sprintf("kra%d", os.Getpid()%100000), fmt.Sprintf("krb%d", os.Getpid()%100000)
	netns(t, "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
	netns(t, "-n", a, "addr", "add", "10.77.0.1/24", "brd", "10.77.0.255", "dev", va)
	netns(t, "-n", b, "addr", "add", "10.77.0.2/24", "brd", "10.77.0.255", "dev", vb)
	netns(t, "-n", a, "link", "set", va, "up")
	netns(t, "-n", b, "link", "set", vb, "up")

	// ip netns exec forks: signal the whole process group.
	recv := exec.Command("ip", "netns", "exec", b, bin, "recv", "--inject", "log", "--listen", "0.0.0.0:7575", "--one-way")
	recv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, errb := notebuf.New(), notebuf.New()
	recv.Stdout, recv.Stderr = out, errb
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- recv.Wait() }()
	defer syscall.Kill(-recv.Process.Pid, syscall.SIGKILL)
	for !strings.Contains(errb.String(), "listening on") {
		select {
		case <-errb.Written():
		case err := <-done:
			t.Fatalf("recv exited: %v\n%s", err, errb.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("recv did not start:\n%s", errb.String())
		}
	}
	send := exec.Command("ip", "netns", "exec", a, bin, "send", "--to", "10.77.0.255", "--one-way", "--script", "../testdata/scripts/hello.keys")
	send.Env = append(os.Environ(), runtimeEnv(t)...)
	if o, err := send.CombinedOutput(); err != nil {
		t.Fatalf("send: %v\n%s", err, o)
	}
	syscall.Kill(-recv.Process.Pid, syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("recv did not stop on SIGINT")
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if i := strings.Index(l, `"session"`); i > 0 {
			l = l[:i]
		}
		got = append(got, l)
	}
	want := `{"char":"h","action":"down", {"char":"h","action":"up", {"char":"e","action":"down", {"char":"e","action":"up", {"char":"l","action":"down", {"char":"l","action":"up", {"char":"l","action":"down", {"char":"l","action":"up", {"char":"o","action":"down", {"char":"o","action":"up", {"key":"Enter","action":"down", {"key":"Enter","action":"up",`
	if strings.Join(got, " ") != want {
		t.Errorf("recv logged:\n%s\nwant hello + Enter", out.String())
	}
}
