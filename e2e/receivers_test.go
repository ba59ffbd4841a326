//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pairedMachine is a second machine on loopback: its identity and peers
// file, paired both ways with a keyboard's (kb) identity and peers file,
// the keyboard's naming it vm at addr.
type pairedMachine struct {
	vmID, vmPeers, kbID, kbPeers string
}

func pairMachines(t *testing.T, addr string) pairedMachine {
	t.Helper()
	dir := t.TempDir()
	m := pairedMachine{filepath.Join(dir, "vm.identity"), filepath.Join(dir, "vm-peers.toml"), filepath.Join(dir, "kb.identity"), filepath.Join(dir, "kb-peers.toml")}
	key := func(id string) string {
		code, out, stderr := run(t, "", "id", "--identity", id)
		if code != 0 {
			t.Fatalf("id: exit %d\n%s", code, stderr)
		}
		return strings.Fields(out)[0]
	}
	vmKey, kbKey := key(m.vmID), key(m.kbID)
	for _, args := range [][]string{
		{"peers", "add", "kb", kbKey, "--peers", m.vmPeers, "--identity", m.vmID},
		{"peers", "add", "vm", vmKey, "--addr", addr, "--peers", m.kbPeers, "--identity", m.kbID},
	} {
		if code, _, stderr := run(t, "", args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	return m
}

// TestSeveralReceiversOnOnePairedMachine: two receivers on one paired
// machine (one per display, say), on two ports, both under its identity:
// --to NAME:PORT reaches the second (PROTOCOL.md §8.3: the peer's key,
// its host, that port), as do a [[send.to]] table's addr = "NAME:PORT"
// and keyrelay switch between the two, and doctor probes both as send
// reaches them; a second name for the same
// machine is refused by peers add with the way that works instead.
func TestSeveralReceiversOnOnePairedMachine(t *testing.T) {
	t.Parallel()
	first := reservePort(t)
	m := pairMachines(t, first)
	recvArgs := []string{"recv", "--inject", "log", "--identity", m.vmID, "--peers", m.vmPeers}
	one := start(t, append(recvArgs, "--listen", first)...)
	two := start(t, append(recvArgs, "--listen", "127.0.0.1:0")...)
	_, port2, _ := strings.Cut(two.addr, ":")
	kb := []string{"--identity", m.kbID, "--peers", m.kbPeers}

	// --to vm:PORT, with the key the peers file gives vm.
	code, _, stderr := run(t, "tap KeyA\n", append([]string{"send", "--script", "-", "--to", "vm:" + port2}, kb...)...)
	if code != 0 {
		t.Fatalf("send --to vm:%s: exit %d\n%s", port2, code, stderr)
	}
	two.expect(t, "KeyA down", "KeyA up")
	code, _, stderr = run(t, "tap KeyB\n", append([]string{"send", "--script", "-", "--to", "vm"}, kb...)...)
	if code != 0 {
		t.Fatalf("send --to vm: exit %d\n%s", code, stderr)
	}
	one.expect(t, "KeyB down", "KeyB up")

	// [[send.to]] tables naming both, and keyrelay switch between them.
	cfg, env := sendConfig(t, fmt.Sprintf("[[send.to]]\nname = \"left\"\naddr = \"vm\"\n\n[[send.to]]\nname = \"right\"\naddr = \"vm:%s\"\n", port2))
	send, w := startStreamedEnv(t, env, append([]string{"--config", cfg, "--switch"}, kb...)...)
	io.WriteString(w, "pace 0s\ntap KeyC\n")
	one.expect(t, "KeyC down", "KeyC up")
	if code, out, stderr := runWithEnv(t, env, "switch", "right"); code != 0 || out != "target: right\n" {
		t.Fatalf("keyrelay switch right exited %d:\n%s%s", code, out, stderr)
	}
	io.WriteString(w, "tap KeyD\n")
	two.expect(t, "KeyD down", "KeyD up")
	w.Close()
	if code := send.wait(20 * time.Second); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, send.stderr)
	}

	// doctor reaches both as send does: the peers file's address, its
	// host on the second port, under vm's key.
	code, out := doctorEnv(t, append(env, "DISPLAY="), append([]string{"--config", cfg, "--input", "script"}, kb...)...)
	if code != 0 {
		t.Errorf("doctor on the two destinations: exit %d\n%s", code, out)
	}
	wantLine(t, out, "ok    round trip to vm at "+first+" (paired machine vm, destination left, ")
	wantLine(t, out, "ok    round trip to vm:"+port2+" at "+two.addr+" (paired machine vm, destination right, ")

	// A second name for the same machine: refused, saying what works.
	vmKey := func() string {
		_, out, _ := run(t, "", "id", "--identity", m.vmID)
		return strings.Fields(out)[0]
	}()
	code, _, stderr = run(t, "", "peers", "add", "vm2", vmKey, "--peers", m.kbPeers, "--identity", m.kbID)
	if code != 1 || !strings.Contains(stderr, "a second recv there needs no second name: --to vm:PORT") {
		t.Errorf("peers add vm2 with vm's key: exit %d, want 1 and --to vm:PORT named\n%s", code, stderr)
	}
	for _, r := range []struct {
		name string
		p    *proc
	}{{"first", one}, {"second", two}} {
		if got := render(r.p.stop()); got != "" {
			t.Errorf("the %s receiver logged more:\n%s", r.name, got)
		}
	}
}

// TestPairNameTakenSaysSo: pairing with a machine whose peers file has
// this one's name under another key is refused there before anyone is
// asked; this end, which cannot tell that from a no, says that the name
// may be taken there and how to pair under another (--as, --name), not
// only that something changed the exchange.
func TestPairNameTakenSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	code, out, stderr := run(t, "", "id", "--identity", file("old-b.identity"))
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "", "peers", "add", "b", strings.Fields(out)[0], "--peers", file("a-peers.toml"), "--identity", file("a.identity")); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	addr := reservePort(t)
	// Both ends answer from a script (no terminal here): --scripted, and
	// the listener takes only the loopback's request (--from).
	a := start(t, "pair", "--listen", addr, "--scripted", "--from", "127.0.0.1", "--name", "a", "--identity", file("a.identity"), "--peers", file("a-peers.toml"), "--timeout", "20s")
	code, _, stderr = run(t, "y\n", "pair", addr, "--scripted", "--name", "b", "--identity", file("b.identity"), "--peers", file("b-peers.toml"), "--timeout", "20s")
	if code != 1 || !strings.Contains(stderr, `If the other machine's peers file already has a machine named "b", that name is taken there (it says so): pair again with --as OTHERNAME on that machine, or --name OTHERNAME here`) {
		t.Errorf("pair as b: exit %d, want 1 naming the taken name and --as\n%s", code, stderr)
	}
	a.wait(20 * time.Second)
	if !strings.Contains(a.stderr.String(), "the peers file already has b with another key") || !strings.Contains(a.stderr.String(), "--as OTHERNAME") {
		t.Errorf("the machine that refused did not say why:\n%s", a.stderr)
	}
}
