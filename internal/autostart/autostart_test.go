package autostart

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// parseWindowsArg reads one argument as Windows' command-line parsing does
// (CommandLineToArgvW, the C runtime): 2n backslashes before a double
// quote are n backslashes and the quote opens or closes a quoted part,
// 2n+1 are n and a literal quote; other backslashes are themselves;
// outside quotes a space or tab ends the argument. It returns the
// argument and what follows it.
func parseWindowsArg(s string) (arg, rest string) {
	var b strings.Builder
	quoted := false
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				b.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					b.WriteByte('"')
					i++
				}
				continue
			}
			b.WriteString(strings.Repeat(`\`, n))
		case c == '"':
			quoted = !quoted
			i++
		case (c == ' ' || c == '\t') && !quoted:
			return b.String(), s[i+1:]
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), ""
}

// TestWindowsQuote: the Run entry's arguments read back as they were
// written, as Microsoft's examples of command-line parsing show.
func TestWindowsQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`recv`, `recv`},
		{`--listen=:7575`, `--listen=:7575`},
		{``, `""`},
		{`a b`, `"a b"`},
		{`a"b`, `"a\"b"`},
		{`C:\keyrelay\keyrelay.exe`, `C:\keyrelay\keyrelay.exe`},
		{`C:\Program Files\keyrelay\keyrelay.exe`, `"C:\Program Files\keyrelay\keyrelay.exe"`},
		{`C:\My Dir\`, `"C:\My Dir\\"`},
		{`a\"b c`, `"a\\\"b c"`},
	} {
		got := windowsQuote(tc.in)
		if got != tc.want {
			t.Errorf("windowsQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if back, rest := parseWindowsArg(got); back != tc.in || rest != "" {
			t.Errorf("%s reads back as %q (rest %q), want %q", got, back, rest, tc.in)
		}
	}
}

// TestWindowsQuoteRoundTrip: any arguments, quoted and joined as the Run
// entry joins them, read back one by one as themselves.
func TestWindowsQuoteRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		args := rapid.SliceOfN(rapid.StringOf(rapid.SampledFrom([]rune{'a', ' ', '\t', '"', '\\', 'é', ':', '-'})), 1, 5).Draw(t, "args")
		var quoted []string
		for _, a := range args {
			quoted = append(quoted, windowsQuote(a))
		}
		line := strings.Join(quoted, " ")
		for i, want := range args {
			var got string
			got, line = parseWindowsArg(line)
			if got != want {
				t.Fatalf("argument %d reads back as %q, want %q (line %s)", i, got, want, strings.Join(quoted, " "))
			}
		}
	})
}

// TestAutostartLine: the entry runs this keyrelay.exe's autostart run with
// the command and its flags.
func TestAutostartLine(t *testing.T) {
	got := Line(`C:\Program Files\keyrelay\keyrelay.exe`, "send", []string{"--to", "media pc", "--input", "windows"})
	want := `"C:\Program Files\keyrelay\keyrelay.exe" autostart run send --to "media pc" --input windows`
	if got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
}
