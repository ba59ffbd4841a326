package cmd

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestAutostartAdd: add checks the command and its flags before it touches
// the Run key (a mistake exits 2 and names it); off Windows a right one
// says what starts keyrelay with the session there (exit 1).
func TestAutostartAdd(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"autostart", "add", "impair"}, ExitUsage, `"impair" is not recv or send`},
		{[]string{"autostart", "add", "recv", "--", "--nope"}, ExitUsage, "keyrelay autostart add recv: unknown flag: --nope"},
		{[]string{"autostart", "add", "recv", "--", "--timeout", "soon"}, ExitUsage, `invalid argument "soon"`},
		{[]string{"autostart", "add", "send", "--", "--to", "a", "extra"}, ExitUsage, `send takes flags only, not ["extra"]`},
		{[]string{"autostart", "add", "send", "--", "--help"}, ExitUsage, "--help is not a flag to start send with"},
		{[]string{"autostart", "add", "recv", "--inject", "windows"}, ExitUsage, "unknown flag: --inject"},
		{[]string{"autostart", "remove", "impair"}, ExitUsage, `"impair" is not recv or send`},
		{[]string{"autostart", "run", "keygen"}, ExitUsage, `"keygen" is not recv or send`},
	} {
		var out, errb bytes.Buffer
		code := Run(tc.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("keyrelay %s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), code, errb.String(), tc.code, tc.msg)
		}
	}
	if runtime.GOOS == "windows" {
		return
	}
	for _, args := range [][]string{
		{"autostart", "add", "recv", "--", "--inject", "windows", "--listen", ":7575", "--peers", "p.toml"},
		{"autostart", "remove", "recv"},
		{"autostart", "list"},
	} {
		var errb bytes.Buffer
		code := Run(args, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb})
		if code != ExitError || !strings.Contains(errb.String(), "on Linux use the systemd user units (contrib/systemd") {
			t.Errorf("keyrelay %s off Windows: exit %d, %q; want exit 1 naming the systemd units", strings.Join(args, " "), code, errb.String())
		}
	}
	// Hidden off Windows: not in the help.
	var out bytes.Buffer
	Run([]string{"--help"}, IO{In: strings.NewReader(""), Out: &out, Err: &out})
	if strings.Contains(out.String(), "autostart") {
		t.Errorf("keyrelay --help lists autostart off Windows:\n%s", out.String())
	}
}
