package config

import (
	"fmt"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/peers"
)

// TestSharedSettingEnvNames: the environment variables the identity and
// peers packages name are those the shared settings mechanism reads
// (KEYRELAY_<SETTING>), so send and recv will read the same ones.
func TestSharedSettingEnvNames(t *testing.T) {
	if got := EnvName("", "identity"); got != identity.Env {
		t.Errorf("identity's variable is %s, identity.Env %s", got, identity.Env)
	}
	if got := EnvName("", "peers"); got != peers.Env {
		t.Errorf("peers' variable is %s, peers.Env %s", got, peers.Env)
	}
}

// TestListenBarePort: recv --listen 7575 is :7575 (every address), and
// what is no [HOST]:PORT or bare port is refused.
func TestListenBarePort(t *testing.T) {
	for in, want := range map[string]string{"7575": ":7575", "0": ":0", ":7000": ":7000", "127.0.0.1:1": "127.0.0.1:1", "[::1]:9": "[::1]:9"} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"localhost", "7575x", "99999", ":-1", "1.2.3.4:70000", ""} {
		if _, err := ListenAddr(bad); err == nil {
			t.Errorf("ListenAddr(%q) accepted", bad)
		}
	}
}

// TestParseAllow: recv's --allow takes networks and single addresses
// (a host's prefix), masked; anything else is refused.
func TestParseAllow(t *testing.T) {
	got, err := ParseAllow([]string{"192.168.1.7/24", "10.0.0.7", "::1", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[192.168.1.0/24 10.0.0.7/32 ::1/128 fd00::/8]" {
		t.Errorf("parsed %v", got)
	}
	if _, err := ParseAllow([]string{"lan"}); err == nil {
		t.Error("--allow lan accepted")
	}
}
