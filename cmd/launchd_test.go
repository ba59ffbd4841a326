package cmd

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// plist is the part of a launchd property list the agents use: a dict of
// keys and string, array, bool, integer or dict values.
type plist struct {
	Dict plistDict `xml:"dict"`
}

type plistDict struct {
	Items []plistItem `xml:",any"`
}

type plistItem struct {
	XMLName xml.Name
	Text    string      `xml:",chardata"`
	Strings []string    `xml:"string"`
	Items   []plistItem `xml:",any"`
}

// values pairs a dict's keys with their values' elements.
func (d plistDict) values() map[string]plistItem {
	out := map[string]plistItem{}
	for i := 0; i+1 < len(d.Items); i += 2 {
		if d.Items[i].XMLName.Local == "key" {
			out[d.Items[i].Text] = d.Items[i+1]
		}
	}
	return out
}

// TestLaunchdAgents: contrib/launchd's agents (README "Platforms") are
// property lists whose Label is their file's name, that run the installed
// keyrelay with flags keyrelay takes and a macos backend, at login in the
// desktop session, restarted on failure, logging to a file.
func TestLaunchdAgents(t *testing.T) {
	files, _ := filepath.Glob("../contrib/launchd/*.plist")
	if len(files) != 2 {
		t.Fatalf("contrib/launchd has %d agents, want recv's and send's: %q", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p plist
		if err := xml.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		v := p.Dict.values()
		label := strings.TrimSuffix(filepath.Base(f), ".plist")
		if got := strings.TrimSpace(v["Label"].Text); got != label {
			t.Errorf("%s: Label %q, want %q", f, got, label)
		}
		args := v["ProgramArguments"].Strings
		if len(args) < 2 || args[0] != "/usr/local/bin/keyrelay" {
			t.Fatalf("%s: ProgramArguments %q, want /usr/local/bin/keyrelay and a command", f, args)
		}
		name, flags := args[1], args[2:]
		if label != "com.github.keyrelay."+name {
			t.Errorf("%s runs %s", f, name)
		}
		if err := checkFlags(name, flags); err != nil {
			t.Errorf("%s: keyrelay %s %q: %v", f, name, flags, err)
		}
		if !slices.Contains(flags, "macos") {
			t.Errorf("%s: %q uses no macos backend", f, flags)
		}
		for key, want := range map[string]string{"RunAtLoad": "true", "LimitLoadToSessionType": "Aqua", "ProcessType": "Interactive", "ThrottleInterval": "2"} {
			got := v[key].XMLName.Local
			if got == "string" || got == "integer" {
				got = strings.TrimSpace(v[key].Text)
			}
			if got != want {
				t.Errorf("%s: %s is %q, want %q", f, key, got, want)
			}
		}
		if ka := v["KeepAlive"]; ka.XMLName.Local != "dict" || (plistDict{ka.Items}).values()["SuccessfulExit"].XMLName.Local != "false" {
			t.Errorf("%s: KeepAlive should restart it only on failure (SuccessfulExit false)", f)
		}
		if log := strings.TrimSpace(v["StandardErrorPath"].Text); !filepath.IsAbs(log) {
			t.Errorf("%s: StandardErrorPath %q, want an absolute path (launchd expands no ~)", f, log)
		}
	}
}
