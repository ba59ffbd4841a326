//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnpairedOneWaySenderTypesNothing (PROTOCOL.md §8.6, §8.7): recv
// --one-way with the key file K takes one-way packets only from machines
// it pairs, whose identity signs them. A machine holding K but not paired
// types nothing, in any of three sends (send --one-way --feedback=false,
// each a new session), and recv names its identity as not paired; the
// paired machine, with the same K, types all of its script.
func TestUnpairedOneWaySenderTypesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ids := map[string]string{}
	for _, m := range []string{"recv", "laptop", "stranger"} {
		ids[m] = filepath.Join(dir, m+".identity")
		if code, _, stderr := run(t, "", "id", "--identity", ids[m]); code != 0 {
			t.Fatalf("id: exit %d\n%s", code, stderr)
		}
	}
	code, out, stderr := run(t, "", "id", "--identity", ids["laptop"])
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	recvPeers := filepath.Join(dir, "recv-peers.toml")
	if code, _, stderr := run(t, "", "peers", "add", "laptop", strings.Fields(out)[0], "--peers", recvPeers, "--identity", ids["recv"]); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--one-way", "--identity", ids["recv"], "--peers", recvPeers)
	oneWay := func(who string) (int, string) {
		p := start(t, "send", "--to", recv.addr, "--one-way", "--feedback=false", "--identity", ids[who],
			"--peers", filepath.Join(dir, who+"-peers.toml"), "--script", "../testdata/scripts/hello.keys")
		return p.wait(30 * time.Second), p.stderr.String()
	}
	for range 3 {
		if code, said := oneWay("stranger"); code != 0 {
			t.Fatalf("the stranger's send: exit %d, want 0 (one-way: delivery not confirmed)\n%s", code, said)
		}
	}
	if l, ok := recv.next(500 * time.Millisecond); ok {
		t.Fatalf("the unpaired machine holding the key file typed %v\n%s", l, recv.stderr)
	}
	if !recv.waitStderr("which is not paired here", 5*time.Second) {
		t.Errorf("recv does not say why it refused the stranger:\n%s", recv.stderr)
	}
	if code, said := oneWay("laptop"); code != 0 {
		t.Fatalf("the paired machine's send: exit %d\n%s", code, said)
	}
	var typed []line
	for len(typed) < 12 {
		l, ok := recv.next(5 * time.Second)
		if !ok {
			t.Fatalf("the paired machine typed %d key events, want 12 (hello, Enter)\n%s", len(typed), recv.stderr)
		}
		typed = append(typed, l)
	}
	t.Logf("stranger with the key file: 3 sends, nothing typed; paired machine: %d key events typed", len(typed))
}
