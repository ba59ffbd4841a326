//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// netns runs ip(8) and fails the test on error.
func netns(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestBroadcast (PROTOCOL.md §8.6): a sender in one network namespace
// sends to the subnet's broadcast address, and receivers in two others,
// on one bridge with it, each type every key: one datagram reaches both
// (each receiver reads as many as the sender sent). All ends run
// --one-way, which a broadcast needs; the sender is a machine of its own,
// which both receivers pair: its packets are signed by its identity. The
// namespaces, the bridge and the veth pairs are made by the test and
// removed after it.
func TestBroadcast(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) from iproute2")
	}
	id := os.Getpid() % 100000
	ns := []string{fmt.Sprintf("kr-a-%d", id), fmt.Sprintf("kr-b-%d", id), fmt.Sprintf("kr-c-%d", id)}
	if out, err := exec.Command("ip", "netns", "add", ns[0]).CombinedOutput(); err != nil {
		t.Skipf("cannot create network namespaces here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns[0]).Run() })
	for _, n := range ns[1:] {
		netns(t, "netns", "add", n)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", n).Run() })
	}
	// The sender's namespace holds the bridge; each receiver is a veth
	// pair away from it.
	netns(t, "-n", ns[0], "link", "add", "br0", "type", "bridge")
	netns(t, "-n", ns[0], "addr", "add", "10.77.0.1/24", "brd", "10.77.0.255", "dev", "br0")
	netns(t, "-n", ns[0], "link", "set", "br0", "up")
	netns(t, "-n", ns[0], "link", "set", "lo", "up")
	for i, n := range ns[1:] {
		here, there := fmt.Sprintf("krb%d-%d", i, id), fmt.Sprintf("krr%d-%d", i, id)
		netns(t, "link", "add", here, "netns", ns[0], "type", "veth", "peer", "name", there, "netns", n)
		netns(t, "-n", ns[0], "link", "set", here, "master", "br0")
		netns(t, "-n", ns[0], "link", "set", here, "up")
		netns(t, "-n", n, "addr", "add", fmt.Sprintf("10.77.0.%d/24", i+2), "brd", "10.77.0.255", "dev", there)
		netns(t, "-n", n, "link", "set", there, "up")
		netns(t, "-n", n, "link", "set", "lo", "up")
	}
	h := &twoHosts{}
	dir := t.TempDir()
	sendID := filepath.Join(dir, "sender.identity")
	code, out, stderr := run(t, "", "id", "--identity", sendID)
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	sendKey := strings.Fields(out)[0]
	var recvs []*proc
	for i, n := range ns[1:] {
		rid, rpeers := filepath.Join(dir, fmt.Sprintf("recv%d.identity", i)), filepath.Join(dir, fmt.Sprintf("recv%d-peers.toml", i))
		if code, _, stderr := run(t, "", "peers", "add", "sender", sendKey, "--peers", rpeers, "--identity", rid); code != 0 {
			t.Fatalf("peers add: exit %d\n%s", code, stderr)
		}
		recvs = append(recvs, startCmd(t, h.in(t, n, "recv", "--inject", "log", "--listen", "0.0.0.0:7575", "--one-way", "--identity", rid, "--peers", rpeers), "recv"))
	}
	send := h.in(t, ns[0], "send", "--to", "10.77.0.255", "--one-way", "--identity", sendID, "--peers", filepath.Join(dir, "sender-peers.toml"),
		"--log-format", "json", "--script", "../testdata/scripts/hello.keys")
	o, err := send.CombinedOutput()
	if err != nil {
		t.Fatalf("send: %v\n%s", err, o)
	}
	sent := -1
	for _, l := range strings.Split(string(o), "\n") {
		var rec struct {
			Summary string `json:"summary"`
			Packets int    `json:"packets"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Summary == "session" {
			sent = rec.Packets
		}
	}
	if sent <= 0 {
		t.Fatalf("send's summary gives no packet count:\n%s", o)
	}
	want := "'h' down\n'h' up\n'e' down\n'e' up\n'l' down\n'l' up\n'l' down\n'l' up\n'o' down\n'o' up\nEnter down\nEnter up"
	packetsRE := regexp.MustCompile(`recv: (\d+) packets \((\d+) applied`)
	for i, r := range recvs {
		if got := render(r.stop()); got != want {
			t.Errorf("receiver %d typed:\n%s\nwant hello + Enter\n%s", i, got, r.stderr)
		}
		m := packetsRE.FindStringSubmatch(r.stderr.String())
		if m == nil {
			t.Errorf("receiver %d gives no packet count:\n%s", i, r.stderr)
			continue
		}
		read, _ := strconv.Atoi(m[1])
		t.Logf("receiver %d read %d datagrams, applied %s; the sender sent %d", i, read, m[2], sent)
		if read != sent {
			t.Errorf("receiver %d read %d datagrams, the sender sent %d: one broadcast datagram is for every receiver", i, read, sent)
		}
	}
}
