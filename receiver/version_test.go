package receiver

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/wire"
)

// versionRig is a receiver that keeps what it logs and what it writes.
func versionRig(t *testing.T, cfg Config) (*Receiver, *fake.Recorder, *ackConn, *[]string) {
	t.Helper()
	rec := &fake.Recorder{}
	conn := &ackConn{}
	var logs []string
	cfg.Conn, cfg.Injector = conn, rec
	cfg.Insecure = cfg.Identity == nil // the tests' packets are plaintext
	cfg.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, rec, conn, &logs
}

// ofVersion is a queue packet of session, counter with its version byte
// set to v.
func ofVersion(t *testing.T, v uint8, session, counter uint64) []byte {
	t.Helper()
	b := packet(t, session, counter, 10, dn(kA, 1))
	b[2] = v
	return b
}

// TestOtherVersionIsNamedAndAnswered (PROTOCOL.md §10): a packet of
// version wire.Version+1 is not malformed: it is counted apart, its sender
// is named with both versions, and it gets one version notice echoing its
// session id and counter, no larger than it. No session starts, nothing is
// typed, and the packets of this version that follow are relayed.
func TestOtherVersionIsNamedAndAnswered(t *testing.T) {
	r, rec, conn, logs := versionRig(t, Config{})
	cause := ofVersion(t, wire.Version+1, 0x77, 9)
	r.Handle(cause, addr1, t0)
	want := fmt.Sprintf("sender at %s speaks keyrelay protocol version %d; this receiver speaks %d: install the same keyrelay release on both machines", addr1, wire.Version+1, wire.Version)
	if got := strings.Join(*logs, "\n"); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	st := r.Stats()
	if st.Mismatched != 1 || st.Malformed != 0 || st.Sessions != 0 || st.Notices != 1 {
		t.Errorf("stats %v: want 1 of another protocol version, none malformed, no session, 1 notice", st)
	}
	if len(conn.sent) != 1 {
		t.Fatalf("%d packets written, want 1 notice", len(conn.sent))
	}
	var n wire.Notice
	if err := wire.ParseNotice(conn.sent[0], &n); err != nil {
		t.Fatalf("the answer is no notice: %v (% x)", err, conn.sent[0])
	}
	if n.Version != wire.Version || fmt.Sprint(n.Speaks) != fmt.Sprint([]uint8{wire.Version}) || n.Session != 0x77 || n.Counter != 9 {
		t.Errorf("notice %+v: want version %d, speaking it, echoing session 0x77 counter 9", n, wire.Version)
	}
	if len(conn.sent[0]) > len(cause) {
		t.Errorf("a %d-byte notice for a %d-byte packet", len(conn.sent[0]), len(cause))
	}
	if vs := r.Versions(); len(vs) != 1 || vs[0].Addr != addr1.String() || fmt.Sprint(vs[0].Speaks) != fmt.Sprint([]uint8{wire.Version + 1}) || vs[0].Packets != 1 {
		t.Errorf("Versions() = %+v", vs)
	}
	expect(t, rec, "")

	// An older sender too, from another address, a second later.
	r.Handle(ofVersion(t, wire.Version-1, 0x78, 1), addr2, t0.Add(time.Second))
	if got := (*logs)[len(*logs)-1]; !strings.Contains(got, fmt.Sprintf("sender at %s speaks keyrelay protocol version %d; this receiver speaks %d", addr2, wire.Version-1, wire.Version)) {
		t.Errorf("log: %s", got)
	}
	if len(conn.sent) != 2 {
		t.Errorf("%d packets written, want a notice to each address", len(conn.sent))
	}
	// The same address with this version's packets: relayed as ever.
	r.Handle(packet(t, 0x79, 1, 10, dn(kA, 1)), addr1, t0.Add(time.Second))
	expect(t, rec, "KeyA down")
}

// TestOtherVersionFloodIsBounded (PROTOCOL.md §10): a flood of packets of
// another version gets one log line per address a minute and one notice
// per address a second; from many (forged) addresses, at most
// MaxNoticesPerSecond notices a second and one log line a second in all,
// and a bounded table.
func TestOtherVersionFloodIsBounded(t *testing.T) {
	r, _, conn, logs := versionRig(t, Config{})
	// One address, 10,000 packets over 10 s.
	for i := range 10_000 {
		r.Handle(ofVersion(t, wire.Version+1, 1, uint64(i+1)), addr1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(*logs) != 1 {
		t.Errorf("%d log lines for one address in 10 s, want 1", len(*logs))
	}
	if n := len(conn.sent); n < 9 || n > 10 {
		t.Errorf("%d notices to one address in 10 s, want one a second", n)
	}
	if st := r.Stats(); st.Mismatched != 10_000 || st.Malformed != 0 {
		t.Errorf("stats %v", st)
	}
	// 5,000 addresses in 2 s.
	start, sent, lines := t0.Add(time.Minute), len(conn.sent), len(*logs)
	for i := range 5000 {
		from := &net.UDPAddr{IP: net.IPv4(10, 0, byte(i>>8), byte(i)), Port: 7575}
		r.Handle(ofVersion(t, wire.Version+1, 1, 1), from, start.Add(time.Duration(i)*400*time.Microsecond))
	}
	if n := len(conn.sent) - sent; n > 2*MaxNoticesPerSecond {
		t.Errorf("%d notices to 5,000 addresses in 2 s, want at most %d", n, 2*MaxNoticesPerSecond)
	}
	if n := len(*logs) - lines; n > 2 {
		t.Errorf("%d log lines for 5,000 addresses in 2 s, want at most 2", n)
	}
	if n := len(r.Versions()); n > maxVersionPeers {
		t.Errorf("%d addresses remembered, want at most %d", n, maxVersionPeers)
	}
}

// TestVersionNoticeIsNotAnswered (PROTOCOL.md §10): a notice that reaches
// a receiver is counted and its versions named, but never answered with a
// notice (two notifiers would bounce them forever); nor is a packet
// shorter than the notice would be, nor anything with --acks=false.
func TestVersionNoticeIsNotAnswered(t *testing.T) {
	r, _, conn, logs := versionRig(t, Config{})
	nb, err := (&wire.Notice{Version: wire.Version + 2, Session: 1, Counter: 1, Speaks: []uint8{wire.Version + 1, wire.Version + 2}}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(append(nb, make([]byte, 100)...), addr1, t0) // not a valid notice, still one
	r.Handle(nb, addr2, t0.Add(time.Second))
	if len(conn.sent) != 0 {
		t.Errorf("a notice was answered: % x", conn.sent)
	}
	want := fmt.Sprintf("sender at %s speaks keyrelay protocol versions %d and %d; this receiver speaks %d", addr2, wire.Version+1, wire.Version+2, wire.Version)
	if got := strings.Join(*logs, "\n"); !strings.Contains(got, want) {
		t.Errorf("log:\n%s\nwant %q", got, want)
	}
	short := ofVersion(t, wire.Version+1, 1, 1)[:wire.HeaderLen+1]
	r.Handle(short, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 3), Port: 1}, t0.Add(2*time.Second))
	if len(conn.sent) != 0 {
		t.Errorf("a %d-byte packet was answered with % x", len(short), conn.sent)
	}
	if st := r.Stats(); st.Mismatched != 3 || st.Malformed != 0 {
		t.Errorf("stats %v", st)
	}

	quiet, _, qconn, qlogs := versionRig(t, Config{NoAcks: true})
	quiet.Handle(ofVersion(t, wire.Version+1, 1, 1), addr1, t0)
	if len(qconn.sent) != 0 || len(*qlogs) != 1 {
		t.Errorf("--acks=false: %d packets written, %d log lines; want none and 1", len(qconn.sent), len(*qlogs))
	}
}
