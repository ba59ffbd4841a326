package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestSendWaitRefusesWhatCannotAnswer: --wait waits for a receiver's
// answer (PROTOCOL.md §7.1), so it is refused, exit 2, where none can come:
// --feedback=false, or only broadcast or multicast destinations (one-way,
// never acked: §8.6, §9); and a negative wait.
func TestSendWaitRefusesWhatCannotAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"negative", []string{"--to", "127.0.0.1", "--wait", "-1s"}, "--wait -1s is negative (0: start at once)"},
		{"no feedback", []string{"--to", "127.0.0.1", "--wait", "1s", "--feedback=false", "--one-way"}, "--wait needs feedback: with --feedback=false no receiver answers"},
		{"broadcast only", []string{"--to", "255.255.255.255:9", "--wait", "1s", "--one-way"}, "--to 255.255.255.255:9 is broadcast or multicast, which no receiver answers (one-way): nothing to wait for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			args := append([]string{"send", "--insecure", "--script", "-"}, tc.args...)
			code := Run(args, IO{In: strings.NewReader("tap KeyA\n"), Out: &bytes.Buffer{}, Err: &errb})
			if code != ExitUsage || !strings.Contains(errb.String(), tc.err) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), ExitUsage, tc.err)
			}
		})
	}
}
