package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestConfigPrintsDestinationTables: keyrelay config prints [[send.to]]
// tables whole (inline), and its output reads back as the same
// destinations.
func TestConfigPrintsDestinationTables(t *testing.T) {
	dir := isolate(t)
	writeFile(t, filepath.Join(dir, "config.toml"), `[[send.to]]
name = "mac"
addr = "mac.lan:7001"
hotkey = "ControlRight+Digit1"
map = { MetaLeft = "ControlLeft", AltLeft = "MetaLeft" }
local-keys = ["AudioVolumeUp", "AudioVolumeDown"]
`)
	var out, stderr bytes.Buffer
	if code := Run([]string{"config"}, IO{Out: &out, Err: &stderr}); code != ExitOK {
		t.Fatalf("config exited %d: %s", code, stderr.String())
	}
	want := `to = [{ name = "mac", addr = "mac.lan:7001", hotkey = "ControlRight+Digit1", map = { "AltLeft" = "MetaLeft", "MetaLeft" = "ControlLeft" }, local-keys = ["AudioVolumeUp", "AudioVolumeDown"] }]`
	if !strings.Contains(out.String(), want) {
		t.Fatalf("keyrelay config printed:\n%s\nwant a line with\n%s", out.String(), want)
	}
	var m map[string]any
	line := want[strings.Index(want, "["):]
	if _, err := toml.Decode("to = "+line, &m); err != nil {
		t.Fatal(err)
	}
	d, _, err := parseDestTable(m["to"].([]any)[0].(map[string]any))
	if err != nil || d.Name != "mac" || d.Map[keys.AltLeft] != keys.MetaLeft || len(d.Local) != 2 {
		t.Errorf("read back as %+v, %v", d, err)
	}
}
