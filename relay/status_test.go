package relay

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// TestRecvStatusNamesOtherVersion (PROTOCOL.md §10.1): recv's status has
// a line for a sender of another protocol version, naming both versions,
// in text and in the attributes of a status log line.
func TestRecvStatusNamesOtherVersion(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := receiver.New(receiver.Config{Insecure: true, Conn: conn, Injector: &fake.Recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 1, Counter: 1}, Events: make([]eventqueue.Event, 4)}
	b, _ := q.Append(nil)
	b[2] = wire.Version + 1
	from := conn.LocalAddr() // the notice goes back to the socket itself
	r.Handle(b, from, time.Now())
	text, attrs := recvStatus(r, receiver.DefaultTimeout, false)()
	want := fmt.Sprintf("speaks keyrelay protocol version %d, this receiver %d: nothing it sends is typed", wire.Version+1, wire.Version)
	if len(text) != 1 || !strings.HasPrefix(text[0], "← "+from.String()) || !strings.Contains(text[0], want) {
		t.Errorf("status %q, want one line for %s saying %q", text, from, want)
	}
	if len(attrs) != 1 || fmt.Sprint(attrs[0]) != fmt.Sprint([]any{"from", from.String(), "protocol_version", int(wire.Version + 1), "ours", wire.Version, "live", false}) {
		t.Errorf("attributes %v", attrs)
	}
}

// TestRecvStatusShowsAllowance (PROTOCOL.md §7.2, the allowance): a
// session losing packets says, in recv's status, after how long a silence its keys are
// released; one losing none says nothing more than before.
func TestRecvStatusShowsAllowance(t *testing.T) {
	r, err := receiver.New(receiver.Config{Insecure: true, Conn: nopConn{}, Injector: fake.Nop{}, Timeout: time.Second, NoAcks: true})
	if err != nil {
		t.Fatal(err)
	}
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	now := time.Now()
	for _, c := range []uint64{1, 2, 3} { // session 1: none lost
		r.Handle(queuePacket(t, 1, c), from, now)
	}
	for _, c := range []uint64{1, 10} { // session 2: 8 of 9 lost
		r.Handle(queuePacket(t, 2, c), &net.UDPAddr{IP: from.IP, Port: 2}, now)
	}
	text, attrs := recvStatus(r, time.Second, false)()
	if len(text) != 2 || strings.Contains(text[0], "lost") || !strings.Contains(text[1], "89% lost: released after 10s silent") {
		t.Errorf("status lines:\n%s", strings.Join(text, "\n"))
	}
	if got := fmt.Sprint(attrs[1]); !strings.Contains(got, "loss_pct 89 released_after 10s") {
		t.Errorf("status attributes %s, want released_after", got)
	}
}

// queuePacket is a plaintext queue packet of session, numbered counter,
// holding nothing.
func queuePacket(t *testing.T, session, counter uint64) []byte {
	t.Helper()
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: session, Counter: counter}, Events: make([]eventqueue.Event, 4)}
	b, err := q.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type nopConn struct{ net.PacketConn }

func (nopConn) WriteTo(b []byte, _ net.Addr) (int, error) { return len(b), nil }

// TestStatusCountsKeys: recv's status lines and their log attributes say
// how many keys a session holds, not which (the keys of a password typed
// would be on the screen and in the logs); --debug names them too.
func TestStatusCountsKeys(t *testing.T) {
	r, err := receiver.New(receiver.Config{Insecure: true, Conn: nopConn{}, Injector: fake.Nop{}, Timeout: time.Second, NoAcks: true})
	if err != nil {
		t.Fatal(err)
	}
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 1, Counter: 1}, Events: []eventqueue.Event{
		{Key: keys.Key(keys.KeyI), Kind: eventqueue.Down, Stamp: 2},
		{Key: keys.Key(keys.KeyH), Kind: eventqueue.Down, Stamp: 1},
		{}, {},
	}}
	b, err := q.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Handle(b, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, time.Now())
	for _, tc := range []struct {
		debug     bool
		text, not string
		attrs     string
	}{
		{false, "holds 2 keys", "Key", "held 2]"},
		{true, "holds 2 keys (KeyH+KeyI)", "", "held 2 held_keys KeyH+KeyI]"},
	} {
		text, attrs := recvStatus(r, time.Second, tc.debug)()
		if len(text) != 1 || !strings.HasSuffix(text[0], tc.text) || (tc.not != "" && strings.Contains(text[0], tc.not)) {
			t.Errorf("debug %v: status %q, want it to end with %q", tc.debug, text, tc.text)
		}
		if len(attrs) != 1 || !strings.HasSuffix(fmt.Sprint(attrs[0]), tc.attrs) {
			t.Errorf("debug %v: attributes %v, want them to end with %q", tc.debug, attrs, tc.attrs)
		}
	}
	for _, tc := range []struct {
		held  []keys.Key
		debug bool
		want  string
	}{
		{nil, false, "holds no key"},
		{nil, true, "holds no key"},
		{[]keys.Key{keys.Key(keys.KeyA)}, false, "holds 1 key"},
		{[]keys.Key{keys.Key(keys.KeyA)}, true, "holds 1 key (KeyA)"},
		{[]keys.Key{keys.Key(keys.KeyA), keys.Key(keys.ShiftLeft)}, false, "holds 2 keys"},
	} {
		if got := heldText(tc.held, tc.debug); got != tc.want {
			t.Errorf("heldText(%v, %v) = %q, want %q", tc.held, tc.debug, got, tc.want)
		}
	}
}

// TestClockNote: the live line shows a receiver clock a second or more off.
func TestClockNote(t *testing.T) {
	for _, tc := range []struct {
		p    sender.PeerStatus
		want string
	}{
		{sender.PeerStatus{}, ""},
		{sender.PeerStatus{ClockKnown: true, ClockOffset: 900 * time.Millisecond}, ""},
		{sender.PeerStatus{ClockKnown: true, ClockOffset: 20*time.Second + 30*time.Millisecond}, "  clock 20s ahead of ours"},
		{sender.PeerStatus{ClockKnown: true, ClockOffset: -1500 * time.Millisecond}, "  clock 1.5s behind ours"},
	} {
		if got := clockNote(tc.p); got != tc.want {
			t.Errorf("clockNote(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestSendNamesOtherVersion (PROTOCOL.md §10.2): a sender whose receiver
// answers with version notices shows it in its status line (text and
// attributes) and the terminal's liveness line, and its report says why
// nothing was delivered (OtherVersion: keyrelay send's verdict, cmd's
// TestSendEndNamesOtherVersion, names both versions, exit status 3).
func TestSendNamesOtherVersion(t *testing.T) {
	addr := fake.OtherVersion(t, wire.Version+1)
	dests, err := dest.ResolveAll([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Open(dests)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sender.New(sender.Config{Conn: conn, Dests: []sender.Dest{{UDP: dests[0], PeerKey: id.Public()}}, Identity: id,
		Feedback: conn.Sockets(), PeerTimeout: 200 * time.Millisecond, Outage: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	src, err := capture.ParseScript("test", strings.NewReader("tap KeyA\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	text, attrs := sendStatus(s, dests, src, time.Second, false)()
	state := fmt.Sprintf("speaks protocol version %d, not %d", wire.Version+1, wire.Version)
	if len(text) != 1 || !strings.Contains(text[0], state) {
		t.Errorf("status %q, want %q", text, state)
	}
	if len(attrs) != 1 || !strings.Contains(fmt.Sprint(attrs[0]), fmt.Sprintf("protocol_version %d ours %d", wire.Version+1, wire.Version)) {
		t.Errorf("attributes %v", attrs)
	}
	if l := liveness(s, dests, true, time.Second)(); !strings.Contains(l, fmt.Sprintf("%s speaks protocol version %d, not %d", addr, wire.Version+1, wire.Version)) {
		t.Errorf("liveness line %q", l)
	}
	if o := s.Report().Dests[0].Outcome; o != sender.OtherVersion {
		t.Errorf("report: outcome %v, want OtherVersion", o)
	}
}
