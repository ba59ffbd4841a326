//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// readmeConfig is a config file the README or docs/ show: a ```toml block,
// or the body of a heredoc written to ~/.config/keyrelay/config.toml.
type readmeConfig struct {
	where string // FILE:LINE where it starts, lines from 1
	text  string
}

var (
	tomlFence   = regexp.MustCompile("^( *)```toml\\s*$")
	heredocTOML = regexp.MustCompile(`^cat > ~/\.config/keyrelay/config\.toml <<'TOML'\s*$`)
)

// readmeConfigs finds the config files of README.md and docs/*.md.
func readmeConfigs(t *testing.T) []readmeConfig {
	t.Helper()
	var out []readmeConfig
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, configsIn(file, string(text))...)
	}
	return out
}

// configsIn finds the config files of one Markdown text.
func configsIn(file, text string) []readmeConfig {
	lines := strings.Split(text, "\n")
	var out []readmeConfig
	for i := 0; i < len(lines); i++ {
		var indent, end string
		switch {
		case tomlFence.MatchString(lines[i]):
			indent, end = tomlFence.FindStringSubmatch(lines[i])[1], "```"
		case heredocTOML.MatchString(lines[i]):
			end = "TOML"
		default:
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != end; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		out = append(out, readmeConfig{where: fmt.Sprintf("%s:%d", file, start+1), text: strings.Join(body, "\n") + "\n"})
	}
	return out
}

// destHost is a destination's host and port ("" if none), NAME= left out.
func destHost(dest string) (host, port string) {
	if _, addr, ok := strings.Cut(dest, "="); ok {
		dest = addr
	}
	if h, p, err := net.SplitHostPort(dest); err == nil {
		return h, p
	}
	return dest, ""
}

// configHosts are the machines a config names by name (not by address):
// send's destinations ([send] to, [[send.to]] addr) and [doctor] peer,
// each with the ports it is given (none: the peers file's).
func configHosts(t *testing.T, text string) map[string][]string {
	t.Helper()
	var cfg map[string]any
	if _, err := toml.Decode(text, &cfg); err != nil {
		t.Fatalf("the README's config does not parse: %v\n%s", err, text)
	}
	var dests []string
	add := func(v any) {
		switch v := v.(type) {
		case string:
			dests = append(dests, v)
		case map[string]any:
			if a, ok := v["addr"].(string); ok {
				dests = append(dests, a)
			}
		}
	}
	for _, table := range []string{"send", "doctor"} {
		sec, _ := cfg[table].(map[string]any)
		for _, key := range []string{"to", "peer"} {
			switch v := sec[key].(type) {
			case []any:
				for _, e := range v {
					add(e)
				}
			case []map[string]any:
				for _, e := range v {
					add(e)
				}
			default:
				add(v)
			}
		}
	}
	hosts := map[string][]string{}
	for _, d := range dests {
		h, p := destHost(d)
		if _, err := netip.ParseAddr(h); err == nil {
			continue // an address: nothing to pair
		}
		if _, ok := hosts[h]; !ok {
			hosts[h] = nil
		}
		if p != "" && !slices.Contains(hosts[h], p) {
			hosts[h] = append(hosts[h], p)
		}
	}
	return hosts
}

// TestDoctorOnTheREADMEConfigs: doctor passes each config file the README
// and docs/ show, on a machine set up as the README says (paired with the machines
// the config names, each with its recv running; its own recv running if the
// config has [recv]; an X display; a terminal), and send and doctor agree:
// doctor resolves a paired machine's name as send does, and the README's
// sender config (input = "x11", grab = true) plays a script given on the
// command line. Here every machine runs on this one: each named machine is
// a recv with an identity of its own on loopback, paired both ways, on the
// port the config gives it (7575, fixed) or one of its own.
func TestDoctorOnTheREADMEConfigs(t *testing.T) {
	holdFixedPorts(t) // the configs' recvs listen on 7575
	needX(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("needs script (util-linux) for a terminal")
	}
	configs := readmeConfigs(t)
	if len(configs) < 4 {
		t.Fatalf("found %d config files in README.md and docs/, want at least 4 (the sender's, the receiver's, the named destinations', the config file reference's)", len(configs))
	}
	display := startXvfb(t)
	for _, c := range configs {
		t.Run(c.where, func(t *testing.T) {
			home := t.TempDir()
			confDir := filepath.Join(home, ".config", "keyrelay")
			if err := os.MkdirAll(confDir, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(confDir, "config.toml")
			if err := os.WriteFile(cfg, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			// This machine, as its user runs keyrelay: the config file,
			// identity and peers file under HOME, none of the tests'.
			env := []string{"HOME=" + home, "XDG_CONFIG_HOME=", "KEYRELAY_KEY_FILE=", "DISPLAY=" + display, noExitSleep}
			var keyArgs []string
			if m := regexp.MustCompile(`(?m)^key-file = "([^"]+)"`).FindStringSubmatch(c.text); m != nil {
				key := filepath.Join(confDir, m[1])
				if code, _, stderr := runWithEnv(t, env, "keygen", "--out", key); code != 0 {
					t.Fatalf("keygen: exit %d\n%s", code, stderr)
				}
				keyArgs = []string{"--key-file", key}
			}
			code, out, stderr := runWithEnv(t, env, "id")
			if code != 0 {
				t.Fatalf("id: exit %d\n%s", code, stderr)
			}
			ownKey := strings.Fields(out)[0]

			// Each machine the config names: paired, its recv running.
			var recvs []*proc
			for host, ports := range configHosts(t, c.text) {
				// That machine: a home of its own (not this one's config).
				dir := t.TempDir()
				there := append(slices.Clone(env), "HOME="+dir)
				id, peersFile := filepath.Join(dir, "identity"), filepath.Join(dir, "peers.toml")
				code, out, stderr := runWithEnv(t, there, "id", "--identity", id)
				if code != 0 {
					t.Fatalf("id: exit %d\n%s", code, stderr)
				}
				if code, _, stderr := runWithEnv(t, there, "peers", "add", "keyboard", ownKey, "--identity", id, "--peers", peersFile); code != 0 {
					t.Fatalf("peers add there: exit %d\n%s", code, stderr)
				}
				listen := []string{"127.0.0.1:0"}
				if len(ports) > 0 {
					listen = nil
					for _, p := range ports {
						listen = append(listen, "127.0.0.1:"+p)
					}
				}
				var addr string
				for _, l := range listen {
					r := startWithEnv(t, there, append([]string{"recv", "--inject", "log", "--listen", l, "--identity", id, "--peers", peersFile}, keyArgs...)...)
					recvs = append(recvs, r)
					if addr == "" {
						addr = r.addr
					}
				}
				if code, _, stderr := runWithEnv(t, env, "peers", "add", host, strings.Fields(out)[0], "--addr", addr); code != 0 {
					t.Fatalf("peers add %s: exit %d\n%s", host, code, stderr)
				}
			}
			// This machine's own recv, as its [recv] says.
			if strings.Contains(c.text, "[recv]") {
				startWithEnv(t, env, "recv")
			}

			// doctor in a terminal (script gives it one), as a person runs it.
			doctor := exec.Command("script", "-qec", bin+" doctor", "/dev/null")
			doctor.Env = append(append(os.Environ(), runtimeEnv(t)...), env...)
			doctor.Dir = home
			report, _ := doctor.CombinedOutput()
			t.Logf("%s:\n%s\nkeyrelay doctor (exit %d):\n%s", c.where, c.text, doctor.ProcessState.ExitCode(), report)
			if code := doctor.ProcessState.ExitCode(); code != 0 || strings.Contains(string(report), "FAIL") {
				t.Errorf("doctor on the config at %s: exit %d, want 0 and no FAIL", c.where, code)
			}

			// A script given on the command line plays whatever source
			// the config names (its grab goes with it), to the machines
			// it names.
			if len(recvs) > 0 && !strings.Contains(c.text, "[doctor]") && !strings.Contains(c.text, "hotkey") {
				if code, _, stderr := runIn(t, "tap KeyQ\n", env, "send", "--script", "-"); code != 0 {
					t.Errorf("send --script - with the config at %s: exit %d\n%s", c.where, code, stderr)
				}
				for _, r := range recvs {
					r.expect(t, "KeyQ down", "KeyQ up")
				}
			}
		})
	}
}
