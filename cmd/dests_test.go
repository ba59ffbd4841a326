package cmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// TestNamedDestinationsFromFileAndFlags checks issue 27 must-have 1: the
// config file's [[send.to]] tables (name, addr, hotkey, map, local-keys)
// and --to NAME=HOST[:PORT] next to plain addresses make one list of
// named destinations, in order, plain ones named by their address.
func TestNamedDestinationsFromFileAndFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := `[[send.to]]
name = "mac"
addr = "127.0.0.1:7001"
hotkey = "ControlRight+Digit1"
map = { MetaLeft = "ControlLeft" }
local-keys = ["AudioVolumeUp"]
`
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var got *SendOptions
	c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.validate() })
	c.SetArgs([]string{"--config", cfg, "--script", "-", "--insecure"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if len(got.dests) != 1 || got.dests[0].Name != "mac" || got.dests[0].Addr != "127.0.0.1:7001" {
		t.Fatalf("destinations %+v, want mac at 127.0.0.1:7001", got.dests)
	}
	mac := got.dests[0]
	if mac.Hotkey.String() != "ControlRight+Digit1" || mac.Map[keys.MetaLeft] != keys.ControlLeft || !slices.Equal(mac.Local, []keys.Code{keys.AudioVolumeUp}) {
		t.Fatalf("mac's table read as %+v", mac)
	}
	// The command line wins over the file, as for every setting.
	c = NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.validate() })
	c.SetArgs([]string{"--config", cfg, "--to", "pc=127.0.0.1:7002,127.0.0.1:7003", "--script", "-", "--insecure"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, d := range got.dests {
		names = append(names, d.Name+"@"+d.Addr)
	}
	want := []string{"pc@127.0.0.1:7002", "127.0.0.1:7003@127.0.0.1:7003"}
	if !slices.Equal(names, want) {
		t.Fatalf("destinations %v, want %v", names, want)
	}
}
