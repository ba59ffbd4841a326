package statusboard

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestStatusBoardRedraw: on a terminal the block is redrawn in place, and a
// log line goes above it with the block drawn again below.
func TestStatusBoardRedraw(t *testing.T) {
	var out bytes.Buffer
	b := &Board{W: &out, Term: true}
	logf := b.Wrap(func(f string, a ...any) { out.WriteString("LOG\n") })
	b.draw([]string{"one", "two"})
	b.draw([]string{"uno", "dos"})
	logf("x")
	want := "one\ntwo\n" + "\x1b[2A\r\x1b[J" + "uno\ndos\n" + "\x1b[2A\r\x1b[J" + "LOG\n" + "uno\ndos\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

// TestStatusBoardFinish: no status redraw after the exit summary: the last
// block is drawn from the state at the end, and a
// line logged after it (the summary) goes below it with no block again.
func TestStatusBoardFinish(t *testing.T) {
	var out bytes.Buffer
	b := &Board{W: &out, Term: true}
	logf := b.Wrap(func(f string, a ...any) { out.WriteString("SUMMARY\n") })
	b.draw([]string{"held KeyA"})
	b.Finish([]string{"held -"})
	logf("x")
	want := "held KeyA\n" + "\x1b[1A\r\x1b[J" + "held -\n" + "SUMMARY\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

// TestTextStatusLines: one log style per run, figures rounded for people:
// without a terminal, text status lines look like the
// other log lines, with no time, level or long floats.
func TestTextStatusLines(t *testing.T) {
	var out bytes.Buffer
	logf, logger := NewLogf(&out, "recv", "text")
	logf("listening on %s", "127.0.0.1:7575")
	logger.Info("status", "session", "00ab", "live", true, "packets_per_s", 6.698467457630368, "held", "-", "from", "a b")
	want := "keyrelay recv: listening on 127.0.0.1:7575\n" +
		"keyrelay recv: status session=00ab live=true packets_per_s=6.698 held=- from=\"a b\"\n"
	if got := out.String(); got != want {
		t.Errorf("wrote %q\nwant  %q", got, want)
	}
}

// TestJSONLogLines: with --log-format json each line is a JSON object
// with the message, the command and the level; text stays plain.
func TestJSONLogLines(t *testing.T) {
	var out bytes.Buffer
	logf, _ := NewLogf(&out, "recv", "json")
	logf("listening on %s", "127.0.0.1:7575")
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %q", out.String())
	}
	if m["msg"] != "listening on 127.0.0.1:7575" || m["cmd"] != "recv" || m["level"] != "INFO" {
		t.Errorf("line %v", m)
	}
	var plain bytes.Buffer
	logf, _ = NewLogf(&plain, "send", "text")
	logf("hello %d", 1)
	if plain.String() != "keyrelay send: hello 1\n" {
		t.Errorf("text line %q", plain.String())
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
			b := &Board{W: &out, Term: true, Width: func() int { return tc.cols }}
			b.draw([]string{"target: all", long})
			b.draw([]string{"target: all", long})
			block := "target: all\n" + tc.want + "\n"
			if got, want := out.String(), block+"\x1b[2A\r\x1b[J"+block; got != want {
				t.Errorf("wrote %q\nwant  %q", got, want)
			}
		})
	}
}
