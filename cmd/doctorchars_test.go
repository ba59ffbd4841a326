package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
)

// TestDoctorChecksCharactersMode checks doctor's line for send's
// characters mode (README "Characters across layouts"): it names the
// destinations that get characters and where this keyboard's layout comes
// from, and fails, with the fix, where send would: a source that cannot
// tell the layout without --layout, a layout XKB lacks, --layout with no
// destination in characters mode, an unknown --keys. recv's --layout (the
// target's) is not taken for send's, and without characters mode there is
// no line.
func TestDoctorChecksCharactersMode(t *testing.T) {
	const table = "[[send.to]]\nname = \"mac\"\naddr = \"RECV\"\nkeys = \"characters\"\n[[send.to]]\nname = \"pc\"\naddr = \"RECV\"\n"
	for _, tc := range []struct {
		name   string
		config string
		args   []string
		want   string // the line's start, "" for no line
		parts  []string
		fails  bool // doctor must fail
	}{
		{name: "no characters mode: no line", config: table[:0] + "[send]\nto = \"RECV\"\n", args: []string{"--input", "script"}},
		{name: "a table in characters mode, evdev without --layout", config: table, args: []string{"--input", "script"},
			want: "FAIL  characters mode: mac (keys = \"characters\" in [send] to in ", parts: []string{"--input script cannot tell this keyboard's layout", "fix: add --layout LAYOUT"}, fails: true},
		{name: "a table, and --layout de", config: table, args: []string{"--input", "script", "--layout", "de"},
			want: "ok    characters mode: mac (", parts: []string{"through the layout de (German), named by --layout de", "XKB data"}},
		{name: "[send] layout names a layout XKB lacks", config: "[send]\nlayout = \"xx\"\nkeys = \"characters\"\nto = \"RECV\"\n", args: []string{"--input", "script"},
			want: "FAIL  characters mode: every destination (characters ([send] keys in ", parts: []string{"xx ([send] layout in ", `no such XKB layout "xx"`, "fix: name the XKB layout", "rules/evdev.lst"}, fails: true},
		{name: "a variant XKB lacks", config: table, args: []string{"--input", "script", "--layout", "de(nosuch)"},
			want: "FAIL  characters mode: mac", parts: []string{`has no variant "nosuch"`, "fix: name the XKB layout"}, fails: true},
		{name: "--layout without characters mode", config: "[send]\nto = \"RECV\"\n", args: []string{"--input", "script", "--layout", "de"},
			want: "FAIL  characters mode: no destination", parts: []string{"no destination gets characters", "fix: add --keys characters"}, fails: true},
		{name: "--keys physical turns the table's characters off", config: table, args: []string{"--input", "script", "--keys", "physical"}},
		{name: "an unknown --keys", config: table, args: []string{"--input", "script", "--keys", "charakters"},
			want: "FAIL  characters mode: --keys \"charakters\": unknown", parts: []string{`fix: choose "physical" or "characters"`}, fails: true},
		{name: "[recv] layout is the target's, not send's", config: "[recv]\nlayout = \"xx\"\n[send]\nto = \"RECV\"\n", args: []string{"--role", "send", "--input", "script"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			key := keyInEnv(t, dir)
			recv, _, _ := recvOn(t, "127.0.0.1:0", key, fake.Nop{})
			writeFile(t, filepath.Join(dir, "config.toml"), strings.ReplaceAll(tc.config, "RECV", recv))
			text, err := doctorCmd(t, append([]string{"--role", "send"}, tc.args...)...)
			var line, fix string
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				if strings.Contains(l, "characters mode") {
					line = l
					if i+1 < len(lines) {
						fix = lines[i+1]
					}
				}
			}
			switch {
			case tc.want == "" && line != "":
				t.Errorf("a characters line where none is due: %q\n%s", line, text)
			case !strings.HasPrefix(line, tc.want):
				t.Errorf("line %q, want it to start %q\n%s", line, tc.want, text)
			}
			for _, p := range tc.parts {
				if !strings.Contains(line+fix, p) {
					t.Errorf("line %q (and its fix %q) lacks %q", line, fix, p)
				}
			}
			if tc.fails && err == nil {
				t.Errorf("doctor passed with a FAIL line: characters mode is needed\n%s", text)
			}
		})
	}
}
