//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/flood"
)

var fingerprintRE = regexp.MustCompile(`fingerprint ([0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4})`)

// TestKeygen: keygen writes a 0600 key file, refuses to overwrite it without
// --force, and send and recv print the same fingerprint as keygen did.
func TestKeygen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k")
	code, _, stderr := run(t, "", "keygen", "--out", path)
	m := fingerprintRE.FindStringSubmatch(stderr)
	if code != 0 || m == nil {
		t.Fatalf("keygen: exit %d\n%s", code, stderr)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if code, _, stderr := run(t, "", "keygen", "--out", path); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("overwrite without --force: exit %d\n%s", code, stderr)
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--key-file", path)
	code, _, sendErr := run(t, "", "send", "--to", recv.addr, "--key-file", path, "--script", "../testdata/scripts/hello.keys")
	if code != 0 {
		t.Fatalf("send: exit %d\n%s", code, sendErr)
	}
	got := recv.stop()
	for name, out := range map[string]string{"recv": recv.stderr.String(), "send": sendErr} {
		if f := fingerprintRE.FindStringSubmatch(out); f == nil || f[1] != m[1] {
			t.Errorf("%s shows fingerprint %v, keygen %s", name, f, m[1])
		}
	}
	if len(got) != 12 {
		t.Errorf("%d key events with the new key, want 12:\n%s", len(got), render(got))
	}
	if code, _, _ := run(t, "", "keygen", "--out", path, "--force"); code != 0 {
		t.Errorf("--force: exit %d", code)
	}
}

// TestKeyFileOptional (PROTOCOL.md §8.1): without a key file, send and recv
// on one machine relay under its identity (the handshake needs no shared
// secret); one-way use, which cannot handshake, needs one and says how to
// make it; --insecure runs in plaintext with a warning.
func TestKeyFileOptional(t *testing.T) {
	t.Parallel()
	// No key file: KEYRELAY_KEY_FILE empty for every process here (not
	// t.Setenv, which a parallel test cannot use).
	noKey := []string{"KEYRELAY_KEY_FILE="}
	recv := startWithEnv(t, noKey, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	if code, _, stderr := runWithEnv(t, noKey, "send", "--to", recv.addr, "--script", "../testdata/scripts/hello.keys"); code != 0 {
		t.Errorf("send without a key file: exit %d\n%s", code, stderr)
	}
	if got := recv.stop(); len(got) != 12 {
		t.Errorf("relay under the identity alone: %d key events, want 12", len(got))
	}
	for _, args := range [][]string{
		{"recv", "--inject", "log", "--listen", "127.0.0.1:0", "--one-way"},
		{"send", "--to", "127.0.0.1", "--one-way", "--feedback=false", "--script", "../testdata/scripts/hello.keys"},
	} {
		code, _, stderr := runWithEnv(t, noKey, args...)
		if code != 2 || !strings.Contains(stderr, "keyrelay keygen --out") || !strings.Contains(stderr, "--insecure") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	recv = startWithEnv(t, noKey, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--insecure")
	if !strings.Contains(recv.stderr.String(), "WARNING: --insecure") {
		t.Errorf("recv --insecure printed no warning:\n%s", recv.stderr)
	}
	code, _, stderr := runWithEnv(t, noKey, "send", "--insecure", "--to", recv.addr, "--script", "../testdata/scripts/hello.keys")
	if code != 0 || !strings.Contains(stderr, "WARNING: --insecure") {
		t.Errorf("send --insecure: exit %d\n%s", code, stderr)
	}
	if got := recv.stop(); len(got) != 12 {
		t.Errorf("plaintext relay: %d key events, want 12", len(got))
	}
}

// TestWrongKeyInjectsNothing (PROTOCOL.md §8.1, §8.2): a sender with another
// key file, as a second factor, completes no handshake (the key is Noise's
// psk2: its response does not authenticate), so it types nothing and says
// why; a plaintext sender to a sealed receiver neither.
func TestWrongKeyInjectsNothing(t *testing.T) {
	t.Parallel()
	other := filepath.Join(t.TempDir(), "other.key")
	if code, _, stderr := run(t, "", "keygen", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	code, _, stderr := run(t, "", "send", "--key-file", other, "--to", recv.addr, "--script", "../testdata/scripts/hello.keys")
	if code != 3 || !strings.Contains(stderr, "another key file") {
		t.Fatalf("send with another key: exit %d, want 3 naming another key file\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "", "send", "--insecure", "--to", recv.addr, "--script", "../testdata/scripts/hello.keys"); code != 3 {
		t.Fatalf("plaintext send to a sealed receiver: exit %d, want 3\n%s", code, stderr)
	}
	if l, ok := recv.next(300 * time.Millisecond); ok {
		t.Errorf("a wrong key typed %v", l)
	}
	recv.stop()
	if !regexp.MustCompile(`[1-9]\d* forged`).MatchString(recv.stderr.String()) || !regexp.MustCompile(` 0 keys injected`).MatchString(recv.stderr.String()) {
		t.Errorf("recv did not count the plaintext packets as forged, or injected keys:\n%s", recv.stderr)
	}
}

// TestUnpairedSenderInjectsNothing (PROTOCOL.md §8.1): a machine the
// receiver has not paired (another identity, not in its peers file) types
// nothing, whatever key file it shares; send says why with exit 3 and its
// fingerprint, recv names the refused identity with the fix. Paired with
// 'keyrelay peers add' while recv runs, the same sender types.
func TestUnpairedSenderInjectsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	otherID, recvPeers := filepath.Join(dir, "other.identity"), filepath.Join(dir, "recv-peers.toml")
	code, out, stderr := run(t, "", "id", "--identity", otherID)
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	otherKey, otherPrint := strings.Fields(out)[0], strings.Fields(out)[1]
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--peers", recvPeers)
	code, recvKey, stderr := run(t, "", "id")
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	sendPeers := filepath.Join(dir, "send-peers.toml")
	if code, _, stderr := run(t, "", "peers", "add", "typer", strings.Fields(recvKey)[0], "--addr", recv.addr, "--peers", sendPeers, "--identity", otherID); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run(t, "", "send", "--identity", otherID, "--peers", sendPeers, "--to", "typer", "--script", "../testdata/scripts/hello.keys")
	if code != 3 || !strings.Contains(stderr, "this machine not paired there") || !strings.Contains(stderr, otherPrint) {
		t.Errorf("unpaired send: exit %d, want 3 naming the pairing and its fingerprint %s\n%s", code, otherPrint, stderr)
	}
	if l, ok := recv.next(300 * time.Millisecond); ok {
		t.Errorf("an unpaired sender typed %v", l)
	}
	if !recv.waitStderr(otherPrint, 5*time.Second) || !strings.Contains(recv.stderr.String(), "not paired") {
		t.Errorf("recv did not name the refused identity %s:\n%s", otherPrint, recv.stderr)
	}

	// Paired on the receiver too, while it runs: it reads its peers file
	// again when the file has changed.
	if code, _, stderr := run(t, "", "peers", "add", "keyboard", otherKey, "--peers", recvPeers); code != 0 {
		t.Fatalf("peers add: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "", "send", "--identity", otherID, "--peers", sendPeers, "--to", "typer", "--script", "../testdata/scripts/hello.keys"); code != 0 {
		t.Errorf("paired send: exit %d\n%s", code, stderr)
	}
	if got := recv.stop(); len(got) != 12 {
		t.Errorf("paired sender: %d key events, want 12", len(got))
	}
	if !strings.Contains(recv.stderr.String(), "keyboard") {
		t.Errorf("recv did not name the paired sender's machine:\n%s", recv.stderr)
	}
}

// TestFloodWhileTyping: 100,000 random and near-valid datagrams at recv
// while a real sender types: nothing forged is injected, every real key
// arrives in order, recv keeps running and logs rejects at a bounded rate.
func TestFloodWhileTyping(t *testing.T) {
	// Serial: its 100,000 datagrams load the machine, and the reject log's
	// rate is checked against the time taken.
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	text := "flood resistant typing 0123456789"
	send := start(t, "send", "--to", recv.addr, "--script", script(t, fmt.Sprintf("pace 20ms\ntype %q\n", text)))
	conn, err := net.Dial("udp", recv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	sent := 0
	for _, b := range flood.Datagrams(100_000, 42) {
		if _, err := conn.Write(b); err == nil {
			sent++
		}
	}
	floodTook := time.Since(start)
	if code := send.wait(30 * time.Second); code != 0 {
		t.Fatalf("send exited %d\n%s", code, send.stderr)
	}
	select {
	case <-recv.done:
		t.Fatalf("recv died under the flood: %v\n%s", recv.err, recv.stderr)
	default:
	}
	got := recv.stop()
	checkBalanced(t, got)
	var downs []string
	for _, l := range got {
		if l.Action == "down" && l.Key != "ShiftLeft" {
			downs = append(downs, l.Key)
		}
	}
	var want []string
	for _, r := range text {
		want = append(want, typed(r))
	}
	if strings.Join(downs, " ") != strings.Join(want, " ") {
		t.Errorf("injected key-downs:\n%v\nwant\n%v", downs, want)
	}
	rejectLines := strings.Count(recv.stderr.String(), "dropped packet")
	if limit := int(time.Since(start)/time.Second) + 3; rejectLines > limit {
		t.Errorf("%d reject log lines in %v: not rate-limited", rejectLines, time.Since(start))
	}
	summary := recv.stderr.String()
	if i := strings.LastIndex(summary, "keyrelay recv: "); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("flooded %d datagrams in %v; recv: %s", sent, floodTook.Round(time.Millisecond), strings.TrimSpace(summary))
}
