package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/sender"
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
