//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/wire"
)

// TestRecvNamesAndAnswersOtherVersion (PROTOCOL.md §10.1): a hand-made queue
// packet of protocol version wire.Version+1 sent to a running recv types
// nothing; recv names the sender's address and both versions on standard
// error, counts the packet as of another protocol version (not malformed),
// and answers with a version notice echoing the packet's session id and
// counter.
func TestRecvNamesAndAnswersOtherVersion(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	to, err := net.ResolveUDPAddr("udp", recv.addr)
	if err != nil {
		t.Fatal(err)
	}
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 0x0123456789ABCDEF, Counter: 42},
		Clock: 10, Wall: uint64(time.Now().UnixMilli()),
		Events: []eventqueue.Event{{Key: keys.Key(keys.KeyA), Kind: eventqueue.Down, Stamp: 1}, {}, {}, {}}}
	b, err := q.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	b[2] = wire.Version + 1
	if _, err := pc.WriteTo(b, to); err != nil {
		t.Fatal(err)
	}

	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, wire.MaxPacketSize)
	n, from, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no answer from recv: %v\n%s", err, recv.stderr)
	}
	var notice wire.Notice
	if err := wire.ParseNotice(buf[:n], &notice); err != nil {
		t.Fatalf("recv answered % x, no version notice: %v", buf[:n], err)
	}
	if from.String() != recv.addr || notice.Version != wire.Version || fmt.Sprint(notice.Speaks) != fmt.Sprint([]uint8{wire.Version}) ||
		notice.Session != 0x0123456789ABCDEF || notice.Counter != 42 || n > len(b) {
		t.Errorf("notice %+v (%d bytes) from %v: want version %d speaking it, echoing session and counter 42, from %s, at most %d bytes",
			notice, n, from, wire.Version, recv.addr, len(b))
	}

	want := fmt.Sprintf("sender at %s speaks keyrelay protocol version %d; this receiver speaks %d: install the same keyrelay release on both machines", pc.LocalAddr(), wire.Version+1, wire.Version)
	if !recv.waitStderr(want, 5*time.Second) {
		t.Errorf("recv's stderr lacks %q:\n%s", want, recv.stderr)
	}
	if got := recv.stop(); len(got) != 0 {
		t.Errorf("a packet of another version typed:\n%s", render(got))
	}
	summary := recv.stderr.String()
	if !regexp.MustCompile(`1 packets \(0 applied, 0 stale, 0 malformed, 1 of another protocol version,.*, 1 version notices sent`).MatchString(summary) {
		t.Errorf("recv's summary does not count one packet of another version and one notice:\n%s", summary)
	}
}

// TestSendToReceiverOfOtherVersion (PROTOCOL.md §10.2): send, against a
// receiver that answers every packet with a version notice of protocol
// version wire.Version+1 (a UDP socket here), names the receiver and both
// versions on standard error, again in the end-of-run summary, and exits 3:
// nothing was delivered.
func TestSendToReceiverOfOtherVersion(t *testing.T) {
	t.Parallel()
	addr := fake.OtherVersion(t, wire.Version+1)
	start := time.Now()
	code, _, stderr := run(t, "tap KeyA\n", "send", "--to", addr, "--script", "-")
	took := time.Since(start)
	says := fmt.Sprintf("%s speaks keyrelay protocol version %d; this sender speaks %d: install the same keyrelay release on both machines", addr, wire.Version+1, wire.Version)
	if code != 3 {
		t.Errorf("send exited %d, want 3 (delivery not confirmed):\n%s", code, stderr)
	}
	for _, want := range []string{
		"keyrelay send: receiver at " + says,              // as soon as the notice came
		"delivery not confirmed (exit status 3): " + says, // the summary, why nothing was delivered
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("send's stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The per-receiver summary line: what it missed (PROTOCOL.md §9.1),
	// then why.
	if line := regexp.MustCompile(`keyrelay send: receiver ` + regexp.QuoteMeta(addr) + `: [^\n]*speaks keyrelay protocol version`); !line.MatchString(stderr) {
		t.Errorf("send's summary has no line for %s naming its version:\n%s", addr, stderr)
	}
	if strings.Contains(stderr, "never answered") || strings.Contains(stderr, "no answer from") {
		t.Errorf("send blames silence, not the version:\n%s", stderr)
	}
	if n := strings.Count(stderr, "keyrelay send: receiver at "); n != 1 {
		t.Errorf("the receiver's version named %d times as it came, want once:\n%s", n, stderr)
	}
	t.Logf("send took %v", took.Round(time.Millisecond))
}
