package cmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/BurntSushi/toml"

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

// FuzzNamedDests: --to's text (comma lists, NAME=HOST[:PORT]) never
// panics, and what it accepts has a name and an address for each
// destination, names unique.
func FuzzNamedDests(f *testing.F) {
	for _, s := range []string{"a=127.0.0.1:1,b=[::1]:2", "mac.lan", "=x", "a=", "local=h", "a=h,a=i", "a b=h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := namedDests(splitList([]string{s}), nil)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range ds {
			if d.Name == "" || d.Addr == "" || seen[d.Name] {
				t.Fatalf("%q gave %+v", s, ds)
			}
			seen[d.Name] = true
		}
	})
}

// FuzzDestTable: a [[send.to]] table of any TOML never panics, and one
// it accepts has a usable name and an address.
func FuzzDestTable(f *testing.F) {
	f.Add("name = \"mac\"\naddr = \"mac.lan\"\nhotkey = \"ControlRight+Digit1\"\nmap = { MetaLeft = \"ControlLeft\" }\nlocal-keys = [\"AudioVolumeUp\"]\n")
	f.Add("name = \"x\"\naddr = 1\n")
	f.Add("name = \"x\"\naddr = \"h\"\nmap = { MetaLeft = 3 }\n")
	f.Fuzz(func(t *testing.T, text string) {
		var m map[string]any
		if _, err := toml.Decode(text, &m); err != nil {
			return
		}
		d, _, err := parseDestTable(m)
		if err != nil {
			return
		}
		if d.Name == "" || d.Addr == "" || checkDestName(d.Name) != nil {
			t.Fatalf("%q accepted as %+v", text, d)
		}
	})
}
