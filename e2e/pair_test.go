//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPairUnderTmux: `keyrelay pair` on one end and `keyrelay pair HOST` on
// the other, each in a terminal, as two people would run them (README
// "Machine identities and peers"). Both screens show the same 6-digit code;
// when both people answer y, each end stores the other's name, key and
// recv address in its peers file; when one answers n, neither stores
// anything and both exit 1 (pair/doc.go: the code is what a person
// compares, so a no anywhere must leave both files as they were).
func TestPairUnderTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux missing in CI: .ci/run must install it")
		}
		t.Skip("needs tmux")
	}
	for _, tc := range []struct {
		name       string
		answerB    string
		wantStatus string
	}{
		{"both confirm", "y", "0"},
		{"one refuses", "n", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := fmt.Sprintf("keyrelay-pair-%d-%s", os.Getpid(), strings.ReplaceAll(tc.name, " ", "-"))
			tmux := func(args ...string) (string, error) {
				out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
				return string(out), err
			}
			t.Cleanup(func() { tmux("kill-server") })
			file := func(name string) string { return filepath.Join(dir, name) }
			// An exact session name: a bare "b" would also match a window
			// whose name starts with b.
			target := func(who string) string { return "=pair-" + who + ":" }
			end := func(who string, args string) {
				t.Helper()
				cmd := fmt.Sprintf("%s pair %s --name %s --identity %s --peers %s; echo $? > %s",
					bin, args, who, file(who+".identity"), file(who+"-peers.toml"), file(who+".status"))
				if out, err := tmux("new-session", "-d", "-s", "pair-"+who, "-x", "150", "-y", "30", cmd); err != nil {
					t.Fatalf("tmux: %v %s", err, out)
				}
			}
			pane := func(who string) string { out, _ := tmux("capture-pane", "-p", "-t", target(who)); return out }
			poll := func(who, what string, re *regexp.Regexp) []string {
				t.Helper()
				var m []string
				pollPane(t, who+": "+what, func() bool { m = re.FindStringSubmatch(pane(who)); return m != nil }, func() string { return pane(who) })
				return m
			}

			end("b", "--listen 127.0.0.1:0")
			addr := poll("b", "waiting", regexp.MustCompile(`on UDP (127\.0\.0\.1:\d+)`))[1]
			end("a", addr)
			code := regexp.MustCompile(`Code: +(\d{3} \d{3})`)
			codeA := poll("a", "the code", code)[1]
			codeB := poll("b", "the code", code)[1]
			if codeA != codeB {
				t.Fatalf("codes differ without anyone in the middle: a shows %s, b %s", codeA, codeB)
			}
			tmux("send-keys", "-t", target("a"), "y", "Enter")
			tmux("send-keys", "-t", target("b"), tc.answerB, "Enter")
			for _, who := range []string{"a", "b"} {
				pollPane(t, who+" to exit", func() bool {
					b, err := os.ReadFile(file(who + ".status"))
					return err == nil && strings.TrimSpace(string(b)) != ""
				}, func() string { return pane(who) })
				b, _ := os.ReadFile(file(who + ".status"))
				if got := strings.TrimSpace(string(b)); got != tc.wantStatus {
					t.Errorf("%s exited %s, want %s; pane:\n%s", who, got, tc.wantStatus, pane(who))
				}
			}

			keyOf := func(who string) string {
				t.Helper()
				out, err := exec.Command(bin, "id", "--identity", file(who+".identity")).Output()
				if err != nil {
					t.Fatalf("keyrelay id %s: %v", who, err)
				}
				return strings.Fields(string(out))[0]
			}
			for _, p := range []struct{ self, other, addr string }{{"a", "b", addr}, {"b", "a", "127.0.0.1:7575"}} {
				out, err := exec.Command(bin, "peers", "--peers", file(p.self+"-peers.toml")).CombinedOutput()
				if err != nil {
					t.Fatalf("keyrelay peers (%s): %v %s", p.self, err, out)
				}
				stored := strings.Contains(string(out), keyOf(p.other))
				switch {
				case tc.wantStatus == "0" && !stored:
					t.Errorf("%s's peers file lacks %s's key:\n%s", p.self, p.other, out)
				case tc.wantStatus == "0" && !regexp.MustCompile(`(?m)^`+p.other+` .* `+regexp.QuoteMeta(p.addr)+`$`).MatchString(string(out)):
					t.Errorf("%s's peers file does not list %s at %s:\n%s", p.self, p.other, p.addr, out)
				case tc.wantStatus != "0" && stored:
					t.Errorf("%s stored %s although b answered n:\n%s", p.self, p.other, out)
				}
			}
		})
	}
}
