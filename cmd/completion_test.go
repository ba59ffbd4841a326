package cmd

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
)

// complete runs cobra's hidden __complete command, as the scripts of
// `keyrelay completion` do, and returns the values offered (descriptions
// cut off) and the directive line.
func complete(t *testing.T, args ...string) (values []string, directive string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(append([]string{"__complete"}, args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("__complete %q: exit %d, %s", args, code, errb.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, ":") {
			directive = l
			continue
		}
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}

// TestFlagValuesComplete: the values of --input,
// --inject, --role, --log-format, --hotkey (after each +) and --to (the
// peers file's names, after each comma) complete, and none of them
// completes file names (directive 4, NoFileComp).
func TestFlagValuesComplete(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	peersFile := filepath.Join(dir, "peers.toml")
	// Keys of no real machine, but points of full order (not all zeros).
	peersText := "[[peer]]\nname = \"mediapc\"\nkey = \"" + identity.FormatPublic(sha256.Sum256([]byte("mediapc"))) + "\"\naddr = \"mediapc.lan\"\n\n" +
		"[[peer]]\nname = \"kiosk\"\nkey = \"" + identity.FormatPublic(sha256.Sum256([]byte("kiosk"))) + "\"\n"
	if err := os.WriteFile(peersFile, []byte(peersText), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // exactly these values (contains, for hotkey)
		some bool     // want is a subset
	}{
		{"send --input", []string{"send", "--input", ""}, []string{"terminal", "x11", "evdev", "windows", "macos", "script", "hook"}, false},
		{"doctor --input", []string{"doctor", "--input", ""}, []string{"terminal", "x11", "evdev", "windows", "macos", "script", "hook"}, false},
		{"recv --inject", []string{"recv", "--inject", ""}, []string{"auto", "x11", "robotgo", "uinput", "wayland", "hidg", "windows", "macos", "log"}, false},
		{"doctor --role", []string{"doctor", "--role", ""}, []string{"auto", "send", "recv", "both"}, false},
		{"recv --log-format", []string{"recv", "--log-format", ""}, []string{"text", "json"}, false},
		{"send --hotkey, first key", []string{"send", "--hotkey", "scroll"}, []string{"ScrollLock"}, false},
		{"send --hotkey, after +", []string{"send", "--hotkey", "ControlLeft+Pau"}, []string{"ControlLeft+Pause"}, false},
		{"send --hotkey, any key", []string{"send", "--hotkey", ""}, []string{"KeyA", "ShiftLeft", "ScrollLock", "F12"}, true},
		{"send --to, peer names", []string{"send", "--peers", peersFile, "--to", ""}, []string{"mediapc", "kiosk"}, false},
		{"send --to, after a comma", []string{"send", "--peers", peersFile, "--to", "kiosk,me"}, []string{"kiosk,mediapc"}, false},
		{"send --to, no peers file", []string{"send", "--peers", filepath.Join(dir, "none.toml"), "--to", ""}, nil, false},
		{"doctor --to", []string{"doctor", "--peers", peersFile, "--to", "K"}, []string{"kiosk"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, directive := complete(t, tc.args...)
			if directive != ":4" && directive != ":6" {
				t.Errorf("directive %q: want :4 (no file names) or :6 (and no space, for --hotkey)", directive)
			}
			if tc.some {
				for _, w := range tc.want {
					if !slices.Contains(got, w) {
						t.Errorf("%s completes %q, lacking %q", tc.name, got, w)
					}
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s completes %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// TestLayoutCompletes: recv --layout completes with the layouts this
// machine's XKB data lists, and a layout's variants once its "(" is typed;
// never file names.
func TestLayoutCompletes(t *testing.T) {
	if _, err := os.Stat("/usr/share/X11/xkb/rules/evdev.lst"); err != nil {
		t.Skip("no XKB data (apt-get install xkb-data)")
	}
	for _, tc := range []struct {
		typed       string
		has, hasNot string
	}{
		{"d", "de", "de(nodeadkeys)"},
		{"de(", "de(nodeadkeys)", "fr"},
		{"us(in", "us(intl)", "us"},
	} {
		values, directive := complete(t, "recv", "--layout", tc.typed)
		if !slices.Contains(values, tc.has) || slices.Contains(values, tc.hasNot) || directive != ":4" {
			t.Errorf("--layout %s: %q %s; want %s and not %s, directive :4", tc.typed, values, directive, tc.has, tc.hasNot)
		}
	}
}
