package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/control/controltest"
	"github.com/keyrelay/keyrelay/sender"
)

// runCmd runs keyrelay with args and returns its exit code and output.
func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestMisspeltCommandsAreSuggested: a command typed as people say it
// (receive) or misspell it (recieve, sned) is answered with the command
// meant, exit status 2.
func TestMisspeltCommandsAreSuggested(t *testing.T) {
	for typed, want := range map[string]string{"receive": "recv", "recieve": "recv", "receiver": "recv", "sned": "send", "sender": "send"} {
		code, _, stderr := runCmd(typed)
		if code != ExitUsage || !strings.Contains(stderr, "Did you mean this?\n\t"+want+"\n") {
			t.Errorf("keyrelay %s: exit %d, %q; want 2 suggesting %s", typed, code, stderr, want)
		}
	}
}

// TestSwitchWithoutADestination: keyrelay switch with no argument, or
// two, says what it takes (a destination's name or local) and where the
// names are, exit status 2, instead of cobra's "accepts 1 arg(s)".
func TestSwitchWithoutADestination(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"switch"}, "keyrelay switch needs a destination: 'keyrelay switch NAME' sends the keys to NAME only, 'keyrelay switch local' keeps them here ('keyrelay status' lists"},
		{[]string{"switch", "a", "b"}, "keyrelay switch takes one destination, got 2 arguments"},
	} {
		code, _, stderr := runCmd(c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "arg(s)") {
			t.Errorf("keyrelay %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	// With a send running, its destinations are named.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := control.Listen(ctx, control.Path(), controltest.New("a", "a", "b")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd("switch"); code != ExitUsage || !strings.Contains(stderr, "(the running send's destinations: a, b)") {
		t.Errorf("keyrelay switch with a send running: exit %d, %q; want its destinations named", code, stderr)
	}
}

// TestSummaryLossBeforeAnyAck: a receiver heard, but no packet's fate
// acknowledged yet (a short session), has no loss figure in send's
// summary, instead of "loss 0.0% (0 of 0 packets)"; once acks settled
// packets, the loss is given over them.
func TestSummaryLossBeforeAnyAck(t *testing.T) {
	heard := sender.PeerStatus{Addr: "127.0.0.1:7575", LastHeard: time.Now(), SRTT: time.Millisecond}
	line := receiverSummary{sender.Delivery{Addr: heard.Addr}, heard, true}.text(time.Now())
	if strings.Contains(line, "0 of 0 packets") || !strings.Contains(line, "loss not measured (no packet's fate acknowledged yet)") {
		t.Errorf("no packet settled: %q", line)
	}
	heard.Settled, heard.Lost, heard.Loss = 40, 2, 0.05
	line = receiverSummary{sender.Delivery{Addr: heard.Addr}, heard, true}.text(time.Now())
	if !strings.Contains(line, "loss 5.0% (2 of 40 packets)") {
		t.Errorf("40 packets settled, 2 lost: %q", line)
	}
}
