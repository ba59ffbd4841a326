package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/fake"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

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

// TestUnknownLogFormat: --log-format takes text or json only; another is
// a usage error that names the choices.
func TestUnknownLogFormat(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"recv", "--log-format", "xml"}, IO{Out: &out, Err: &errb}); code != ExitUsage || !strings.Contains(errb.String(), `unknown --log-format "xml" (choose text or json)`) {
		t.Errorf("--log-format xml: exit %d, %q", code, errb.String())
	}
}
