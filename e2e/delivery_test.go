//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSendReportsDelivery (PROTOCOL.md §9.1: a scripted send reports
// delivery): send exits 0 only when every receiver acknowledged the final
// state, and 3 (documented in send --help and the README) when one did not,
// naming the likely causes; one-way use (only with --one-way, PROTOCOL.md
// §8.4) exits 0 and says delivery was not confirmed.
func TestSendReportsDelivery(t *testing.T) {
	t.Parallel()
	otherKey := filepath.Join(t.TempDir(), "other.key")
	if code, _, stderr := run(t, "", "keygen", "--out", otherKey); code != 0 {
		t.Fatal(stderr)
	}
	nothing := deadAddr(t)

	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	plain := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--insecure")
	keys := "tap KeyA\ntap KeyB\n"
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"a working receiver", []string{"--to", recv.addr}, 0, "delivered: every receiver acknowledged the final state"},
		{"nothing listening", []string{"--to", nothing}, 3, "never answered: nothing listening there"},
		{"another key", []string{"--to", recv.addr, "--key-file", otherKey}, 3, "another key file, or another receiver"},
		{"sealed to a plaintext receiver", []string{"--to", plain.addr}, 3, "--insecure on one end only"},
		{"plaintext to a sealed receiver", []string{"--to", recv.addr, "--insecure"}, 3, "--insecure on one end only"},
		{"one working, one silent", []string{"--to", recv.addr, "--to", nothing}, 3, nothing + " never answered"},
		{"one-way", []string{"--to", nothing, "--feedback=false", "--one-way"}, 0, "delivery not confirmed: one-way"},
		{"one-way not asked for", []string{"--to", nothing, "--feedback=false"}, 2, "--feedback=false is one-way and needs --one-way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, keys, append([]string{"send", "--script", "-"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.say) {
				t.Errorf("exit %d, want %d saying %q:\n%s", code, tc.code, tc.say, stderr)
			}
		})
	}
	recv.stop()
	plain.stop()
}

// deadAddr is a loopback UDP address where nothing listens (reservePort:
// not one that another parallel test's socket could take meanwhile).
func deadAddr(t *testing.T) string {
	t.Helper()
	return reservePort(t)
}
