//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// configHome makes an XDG config home whose keyrelay/config.toml is body,
// with a copy of the shared key beside it as "keyrelay.key".
func configHome(t *testing.T, body string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "keyrelay")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyrelay.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestConfigFileRelay: the config file as a user meets it. Two machines set
// up once with a config file each (a key file beside it, by a relative path)
// relay a script with no flags at all, and `keyrelay config` says where each
// setting came from.
func TestConfigFileRelay(t *testing.T) {
	t.Parallel()
	recvHome := configHome(t, `
key-file = "keyrelay.key"
[recv]
listen = "127.0.0.1:0"
inject = "log"
timeout = "900ms"
`)
	basic, err := filepath.Abs("../testdata/e2e/basic.keys")
	if err != nil {
		t.Fatal(err)
	}
	// The sending machine names the receiving one as it paired it
	// (PROTOCOL.md §8.1): to = ["typer"], its address in the peers file.
	sendHome := configHome(t, `
key-file = "keyrelay.key"
[send]
to = ["typer"]
script = "`+basic+`"
`)
	// Pair the two machines as a script would, each with the identity the
	// other's 'keyrelay id' prints; the receiver's address is known only
	// once it listens, so it is added to the sender's peers after.
	idOf := func(home string) string {
		t.Helper()
		code, out, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + home}, "id")
		if code != 0 {
			t.Fatalf("keyrelay id: exit %d\n%s", code, stderr)
		}
		return strings.Fields(out)[0]
	}
	recvKey, sendKey := idOf(recvHome), idOf(sendHome)
	if code, _, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + recvHome}, "peers", "add", "keyboard", sendKey); code != 0 {
		t.Fatalf("peers add on the receiver: exit %d\n%s", code, stderr)
	}
	recv := startWithEnv(t, []string{"XDG_CONFIG_HOME=" + recvHome, "KEYRELAY_KEY_FILE="}, "recv")
	if !strings.Contains(recv.stderr.String(), "timeout 900ms") {
		t.Errorf("recv did not take its timeout from the file:\n%s", recv.stderr)
	}
	if code, _, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + sendHome}, "peers", "add", "typer", recvKey, "--addr", recv.addr); code != 0 {
		t.Fatalf("peers add on the sender: exit %d\n%s", code, stderr)
	}
	code, _, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + sendHome, "KEYRELAY_KEY_FILE="}, "send")
	if code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	want, err := os.ReadFile("../testdata/e2e/basic.expected")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := render(recv.stop()), strings.TrimSpace(string(want)); g != w {
		t.Errorf("recv log:\n%s\nwant:\n%s", g, w)
	}

	code, out, stderr := runWithEnv(t, []string{"XDG_CONFIG_HOME=" + sendHome, "KEYRELAY_KEY_FILE=", "KEYRELAY_SEND_QUEUE=20"}, "config", "send")
	if code != 0 {
		t.Fatalf("config exited %d:\n%s", code, stderr)
	}
	cfg := filepath.Join(sendHome, "keyrelay", "config.toml")
	for _, re := range []string{
		`(?m)^to = \["typer"\] +# file ` + regexp.QuoteMeta(cfg) + ` \[send\]$`,
		`(?m)^key-file = "` + regexp.QuoteMeta(filepath.Join(sendHome, "keyrelay", "keyrelay.key")) + `" +# file ` + regexp.QuoteMeta(cfg) + `$`,
		`(?m)^queue = 20 +# env KEYRELAY_SEND_QUEUE$`,
		`(?m)^interval = "100ms" +# default$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("config output does not match %s:\n%s", re, out)
		}
	}

	// A broken file stops send before anything is sent, with the place.
	broken := configHome(t, "[send]\nto = [\"x\"]\nqueue = \"16\"\n")
	code, _, stderr = runWithEnv(t, []string{"XDG_CONFIG_HOME=" + broken}, "send", "--script", basic)
	if code != 2 || !strings.Contains(stderr, "queue in [send]: want a whole number (no quotes), got \"16\"") {
		t.Errorf("broken config: exit %d, stderr:\n%s", code, stderr)
	}
}
