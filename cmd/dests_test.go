package cmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/keys"
)

// TestNamedDestinationsFromFileAndFlags (DESIGN.md, "Named
// destinations"): the config file's [[send.to]] tables (name, addr, hotkey, map, local-keys)
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
	c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.Check() })
	c.SetArgs([]string{"--config", cfg, "--script", "-", "--insecure"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if len(got.Dests()) != 1 || got.Dests()[0].Name != "mac" || got.Dests()[0].Addr != "127.0.0.1:7001" {
		t.Fatalf("destinations %+v, want mac at 127.0.0.1:7001", got.Dests())
	}
	mac := got.Dests()[0]
	if mac.Hotkey.String() != "ControlRight+Digit1" || mac.Map[keys.MetaLeft] != keys.ControlLeft || !slices.Equal(mac.Local, []keys.Code{keys.AudioVolumeUp}) {
		t.Fatalf("mac's table read as %+v", mac)
	}
	// The command line wins over the file, as for every setting.
	c = NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.Check() })
	c.SetArgs([]string{"--config", cfg, "--to", "pc=127.0.0.1:7002,127.0.0.1:7003", "--script", "-", "--insecure"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, d := range got.Dests() {
		names = append(names, d.Name+"@"+d.Addr)
	}
	want := []string{"pc@127.0.0.1:7002", "127.0.0.1:7003@127.0.0.1:7003"}
	if !slices.Equal(names, want) {
		t.Fatalf("destinations %v, want %v", names, want)
	}
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
keys = "characters"
`)
	var out, stderr bytes.Buffer
	if code := Run([]string{"config"}, IO{Out: &out, Err: &stderr}); code != ExitOK {
		t.Fatalf("config exited %d: %s", code, stderr.String())
	}
	want := `to = [{ name = "mac", addr = "mac.lan:7001", hotkey = "ControlRight+Digit1", map = { "AltLeft" = "MetaLeft", "MetaLeft" = "ControlLeft" }, local-keys = ["AudioVolumeUp", "AudioVolumeDown"], keys = "characters" }]`
	if !strings.Contains(out.String(), want) {
		t.Fatalf("keyrelay config printed:\n%s\nwant a line with\n%s", out.String(), want)
	}
	var m map[string]any
	line := want[strings.Index(want, "["):]
	if _, err := toml.Decode("to = "+line, &m); err != nil {
		t.Fatal(err)
	}
	var tables []dest.Spec
	_, err := dest.Flag{To: new([]string), Tables: &tables}.SetTable(m["to"].([]any)[0].(map[string]any))
	if err != nil || len(tables) != 1 {
		t.Fatalf("read back as %+v, %v", tables, err)
	}
	if d := tables[0]; d.Name != "mac" || d.Map[keys.AltLeft] != keys.MetaLeft || len(d.Local) != 2 || !d.Characters {
		t.Errorf("read back as %+v", d)
	}
}

// TestSendKeysCharactersSettings checks characters mode's settings: keys
// = "characters" in a [[send.to]] table, --keys for every
// destination, and --layout, which characters mode needs for a source
// that cannot ask the keyboard's layout (evdev); mistakes are usage
// errors that say what to write.
func TestSendKeysCharactersSettings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, cfg, "[[send.to]]\nname = \"mac\"\naddr = \"127.0.0.1:7001\"\nkeys = \"characters\"\n[[send.to]]\nname = \"pc\"\naddr = \"127.0.0.1:7002\"\n")
	cases := []struct {
		name  string
		args  []string
		chars []bool // per destination; nil: a usage error with err
		err   string
	}{
		{"per destination from the table", []string{"--config", cfg, "--script", "-", "--layout", "de"}, []bool{true, false}, ""},
		{"--keys characters for every destination", []string{"--config", cfg, "--script", "-", "--keys", "characters", "--layout", "de"}, []bool{true, true}, ""},
		{"--keys physical for every destination", []string{"--config", cfg, "--script", "-", "--keys", "physical"}, []bool{false, false}, ""},
		{"an unknown --keys", []string{"--to", "127.0.0.1:1", "--script", "-", "--keys", "character"}, nil, `--keys "character": unknown (choose "physical" or "characters")`},
		{"evdev cannot tell its layout", []string{"--to", "127.0.0.1:1", "--input", "evdev", "--keys", "characters"}, nil, "characters mode with --input evdev needs this keyboard's layout"},
		{"--layout without characters", []string{"--to", "127.0.0.1:1", "--script", "-", "--layout", "de"}, nil, "no destination gets characters: add --keys characters"},
		{"--layout that is no layout name", []string{"--to", "127.0.0.1:1", "--script", "-", "--keys", "characters", "--layout", "de de"}, nil, `"de de" is not a layout name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *SendOptions
			c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.Check() })
			c.SetArgs(append(tc.args, "--insecure"))
			c.SilenceErrors, c.SilenceUsage = true, true
			err := c.Execute()
			if tc.chars == nil {
				var ue config.UsageError
				if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a usage error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var chars []bool
			for _, d := range got.Dests() {
				chars = append(chars, d.Characters)
			}
			// A destination in characters mode is routed through a
			// Router, which holds the translator.
			if !slices.Equal(chars, tc.chars) || got.Routed() != slices.Contains(tc.chars, true) {
				t.Errorf("characters per destination %v (routed %v), want %v", chars, got.Routed(), tc.chars)
			}
		})
	}
}
