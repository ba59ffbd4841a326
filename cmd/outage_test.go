package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSendOutageFollowsTimeout: --outage unset is the larger of its 5 s
// and --timeout, so --timeout 10s alone is taken; set anywhere (command
// line, environment, config file) shorter than --timeout, it is refused
// with what to set (lossless typing, sender/backlog.go: a receiver is owed
// keys at least as long as it counts as live).
func TestSendOutageFollowsTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[send]\noutage = \"3s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    string
		outage time.Duration
		err    string
	}{
		{"defaults", nil, "", 5 * time.Second, ""},
		{"a longer timeout alone", []string{"--timeout", "10s"}, "", 10 * time.Second, ""},
		{"a shorter timeout alone", []string{"--timeout", "1s"}, "", 5 * time.Second, ""},
		{"both, consistent", []string{"--timeout", "10s", "--outage", "12s"}, "", 12 * time.Second, ""},
		{"outage shorter, command line", []string{"--timeout", "10s", "--outage", "5s"}, "", 0, "--outage 5s is shorter than --timeout 10s: a receiver is owed keys at least as long as it counts as live; raise --outage to 10s or more, or leave it unset"},
		{"outage shorter, environment", []string{"--timeout", "10s"}, "4s", 0, `KEYRELAY_SEND_OUTAGE="4s": shorter than --timeout 10s`},
		{"outage shorter, config file", []string{"--timeout", "10s", "--config", cfg}, "", 0, `config.toml:2: outage = "3s" in [send]: shorter than --timeout 10s`},
		{"outage from the config file", []string{"--timeout", "2s", "--config", cfg}, "", 3 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("KEYRELAY_SEND_OUTAGE", tc.env)
			}
			args := append([]string{"--insecure", "--to", "127.0.0.1", "--script", "-"}, tc.args...)
			if tc.err != "" {
				// The whole command: its errors name where a value came from.
				var errb bytes.Buffer
				code := Run(append([]string{"send"}, args...), IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb})
				if code != ExitUsage || !strings.Contains(errb.String(), tc.err) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), ExitUsage, tc.err)
				}
				return
			}
			var got *SendOptions
			c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.Check() })
			c.SetArgs(args)
			if err := c.Execute(); err != nil {
				t.Fatal(err)
			}
			if got.Outage != tc.outage {
				t.Errorf("outage %v, want %v", got.Outage, tc.outage)
			}
		})
	}
}
