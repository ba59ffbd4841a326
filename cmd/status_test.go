package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/fake"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// TestStatusBoardRedraw: on a terminal the block is redrawn in place, and a
// log line goes above it with the block drawn again below.
func TestStatusBoardRedraw(t *testing.T) {
	var out bytes.Buffer
	b := &statusBoard{w: &out, term: true}
	logf := b.wrap(func(f string, a ...any) { out.WriteString("LOG\n") })
	b.draw([]string{"one", "two"})
	b.draw([]string{"uno", "dos"})
	logf("x")
	want := "one\ntwo\n" + "\x1b[2A\r\x1b[J" + "uno\ndos\n" + "\x1b[2A\r\x1b[J" + "LOG\n" + "uno\ndos\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

// TestStatusBoardFinish (issue 13 must-have 6: no status redraw after the
// exit summary): the last block is drawn from the state at the end, and a
// line logged after it (the summary) goes below it with no block again.
func TestStatusBoardFinish(t *testing.T) {
	var out bytes.Buffer
	b := &statusBoard{w: &out, term: true}
	logf := b.wrap(func(f string, a ...any) { out.WriteString("SUMMARY\n") })
	b.draw([]string{"held KeyA"})
	b.finish([]string{"held -"})
	logf("x")
	want := "held KeyA\n" + "\x1b[1A\r\x1b[J" + "held -\n" + "SUMMARY\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

// TestTextStatusLines (issue 13 must-have 6: one log style per run, figures
// rounded for people): without a terminal, text status lines look like the
// other log lines, with no time, level or long floats.
func TestTextStatusLines(t *testing.T) {
	var out bytes.Buffer
	logf, logger := newLogf(&out, "recv", "text")
	logf("listening on %s", "127.0.0.1:7575")
	logger.Info("status", "session", "00ab", "live", true, "packets_per_s", 6.698467457630368, "held", "-", "from", "a b")
	want := "keyrelay recv: listening on 127.0.0.1:7575\n" +
		"keyrelay recv: status session=00ab live=true packets_per_s=6.698 held=- from=\"a b\"\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

func TestJSONLogLines(t *testing.T) {
	var out bytes.Buffer
	logf, _ := newLogf(&out, "recv", "json")
	logf("listening on %s", "127.0.0.1:7575")
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %q", out.String())
	}
	if m["msg"] != "listening on 127.0.0.1:7575" || m["cmd"] != "recv" || m["level"] != "INFO" {
		t.Errorf("line %v", m)
	}
	var plain bytes.Buffer
	logf, _ = newLogf(&plain, "send", "text")
	logf("hello %d", 1)
	if plain.String() != "keyrelay send: hello 1\n" {
		t.Errorf("text line %q", plain.String())
	}
	if code := Run([]string{"recv", "--log-format", "xml"}, IO{Out: &out, Err: &plain}); code != ExitUsage || !strings.Contains(plain.String(), `unknown --log-format "xml"`) {
		t.Errorf("--log-format xml: exit %d, %q", code, plain.String())
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

// TestSendNamesOtherVersion (PROTOCOL.md §10.2): a sender whose receiver
// answers with version notices shows it in its status line (text and
// attributes) and the terminal's liveness line, and its end says why
// nothing was delivered: both versions, exit status 3.
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
	err = checkDelivery(&SendOptions{Feedback: true}, s.Report(), "", func(string, ...any) {})
	says := fmt.Sprintf("%s speaks keyrelay protocol version %d; this sender speaks %d: install the same keyrelay release on both machines", addr, wire.Version+1, wire.Version)
	if !errors.As(err, &undeliveredError{}) || !strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("checkDelivery = %v, want undelivered: %q", err, says)
	}
}

// TestRecvStatusShowsAllowance (issue 15 must-have 4): a session losing
// packets says, in recv's status, after how long a silence its keys are
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

// TestStatusBoardFitsTheTerminal: a status line wider than the terminal
// is cut short of its last column with an ellipsis, so that each line
// takes one row and a redraw moves up over the whole block; one that fits
// is left as it is, and with no width known nothing is cut.
func TestStatusBoardFitsTheTerminal(t *testing.T) {
	const long = "us (characters) → 127.0.0.1:7575 live rtt 300µs"
	for _, tc := range []struct {
		name string
		cols int
		want string
	}{
		{"wider than the terminal: cut", 20, "us (characters) → …"},
		{"as wide as the terminal: cut, the last column left free", len([]rune(long)), long[:len(long)-len("300µs")] + "300…"},
		{"one column narrower: as it is", len([]rune(long)) + 1, long},
		{"no width known: as it is", 0, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			b := &statusBoard{w: &out, term: true, width: func() int { return tc.cols }}
			b.draw([]string{"target: all", long})
			b.draw([]string{"target: all", long})
			block := "target: all\n" + tc.want + "\n"
			if got, want := out.String(), block+"\x1b[2A\r\x1b[J"+block; got != want {
				t.Errorf("wrote %q\nwant  %q", got, want)
			}
		})
	}
}
