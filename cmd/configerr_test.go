package cmd

// Tests of the settings' errors: every mistake in a setting names the setting, its source (the config file and
// line, the environment variable, the flag) and what is wanted, and exits
// 2; unknown KEYRELAY_ variables are warned about by the command that
// would read them; misspelt flags get a suggestion; --to takes comma
// lists; --listen takes a bare port.

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/wire"
)

// TestEveryMistakeNamesItsSource is the settings errors' table test: each
// mistake, with the exit status and the words that name the source
// (file:line, env var, flag), the setting and what is wanted.
func TestEveryMistakeNamesItsSource(t *testing.T) {
	const file = "@CONFIG@" // replaced by the config file's path
	queueWant := fmt.Sprintf("out of range 1..%d", wire.MaxSafeEvents)
	cases := []struct {
		name string
		file string            // the config file's text ("" for none)
		env  map[string]string // KEYRELAY_ variables
		args []string          // @CONFIG@ in an argument is the file's path
		code int
		want []string // all in stderr; @CONFIG@ is the file's path
		not  []string // none in stderr
	}{
		// The file: TOML syntax errors name the line and what the
		// setting wants.
		{name: "unquoted duration", file: "[send]\nto = \"x\"\ninterval = 100ms\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:3: interval = 100ms: a duration must be quoted: interval = "100ms"`}},
		{name: "unquoted address", file: "[send]\nto = 127.0.0.1:47601\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: to = 127.0.0.1:47601: an address must be quoted: to = "127.0.0.1:47601"`},
			not:  []string{"Invalid float value"}},
		{name: "unquoted list", file: "[send]\nto = [a.lan, 10.0.0.2:9]\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: to = [a.lan, 10.0.0.2:9]: a list of strings, each quoted: to = ["a.lan", "10.0.0.2:9"]`}},
		{name: "unquoted path at the top", file: "key-file = ~/k # mine\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:1: key-file = ~/k # mine: a path must be quoted: key-file = "~/k"`}},
		{name: "not a number", file: "[send]\nqueue = 16x\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: queue = 16x: want a whole number, without quotes: queue = 16`}},
		{name: "syntax error elsewhere", file: "[send]\nto = \"x\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2:`, "TOML syntax"}},
		// Tables and settings that do not exist.
		{name: "misspelt table", file: "[sned]\nto = \"x\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:1: unknown table [sned]; did you mean [send]?`}},
		{name: "misspelt setting", file: "[send]\n\nintervall = \"1s\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:3: unknown setting "intervall" in [send] (did you mean "interval"?)`}},
		{name: "misplaced setting", file: "# mine\nlisten = \":1\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: unknown top-level setting "listen"`, "listen belongs in [recv] or [doctor]"}},
		{name: "quoted number", file: "[send]\nqueue = \"16\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: queue in [send]: want a whole number (no quotes), got "16"`}},
		// Named destinations ([[send.to]] tables, --to NAME=HOST[:PORT]).
		{name: "destination setting misspelt", file: "[[send.to]]\nname = \"mac\"\naddr = \"mac.lan\"\n\n[[send.to]]\nname = \"pc\"\naddr = \"pc.lan\"\nhotky = \"F1\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:8: unknown setting "hotky" in [[send.to]] (did you mean "hotkey"?)`}},
		{name: "destination without a name", file: "[[send.to]]\naddr = \"mac.lan\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:1: a [[send.to]] destination needs a name`}},
		{name: "destination map to no key", file: "[[send.to]]\nname = \"mac\"\naddr = \"mac.lan\"\nmap = { MetaLeft = \"ControlLeftt\" }\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:4: map of "mac": MetaLeft:`, "ControlLeft"}},
		{name: "destination local key unknown", file: "[[send.to]]\nname = \"mac\"\naddr = \"mac.lan\"\nlocal-keys = [\"VolumeUpp\"]\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:4: local-keys of "mac":`}},
		{name: "destination named local", file: "[[send.to]]\nname = \"local\"\naddr = \"mac.lan\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: name "local" is taken`}},
		{name: "destination names twice", args: []string{"send", "--to", "a=127.0.0.1:1,a=127.0.0.1:2"}, code: ExitUsage,
			want: []string{`two destinations are named "a"`}},
		{name: "destination hotkey is --hotkey", file: "[[send.to]]\nname = \"a\"\naddr = \"127.0.0.1:1\"\nhotkey = \"ControlLeft+ControlRight\"\n", args: []string{"send", "--input", "x11", "--grab"}, code: ExitUsage,
			want: []string{`destination "a"'s hotkey ControlLeft+ControlRight is --hotkey`}},
		{name: "destination without an address", args: []string{"send", "--to", "a="}, code: ExitUsage,
			want: []string{`--to "a=": want NAME=HOST[:PORT]`}},
		// Values the command rejects: the file's line, not the flag.
		{name: "queue out of range", file: "[send]\nto = \"x\"\n# long\nqueue = 200\n", args: []string{"send"}, code: ExitUsage,
			want: []string{"@CONFIG@:4: queue = 200 in [send]: " + queueWant}, not: []string{"--queue"}},
		{name: "unknown input", file: "[send]\nto = \"x\"\ninput = \"hok\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:3: input = "hok" in [send]: unknown key source (choose terminal, x11, evdev, windows, macos or script)`, `did you mean "hook"?`},
			not:  []string{"--input"}},
		{name: "dotted key", file: "send.to = \"x\"\nsend.queue = 0\n", args: []string{"send"}, code: ExitUsage,
			want: []string{"@CONFIG@:2: queue = 0 in [send]: " + queueWant}},
		{name: "port 0 in a list", file: "[send]\nto = [\"a\", \"b:0\"]\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: to = ["a", "b:0"] in [send]: "b:0": port 0 is not a receiver's port (want 1..65535`}},
		{name: "port out of range", file: "[send]\nto = \"b:99999\"\n", args: []string{"send"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: to = "b:99999" in [send]: port 99999 out of range 1..65535`}},
		{name: "recv listen", file: "[recv]\nlisten = \"localhost\"\n", args: []string{"recv"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: listen = "localhost" in [recv]: want [HOST]:PORT`}},
		{name: "recv inject", file: "[recv]\ninject = \"lgo\"\n", args: []string{"recv"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: inject = "lgo" in [recv]: unknown injector`, `did you mean "log"?`}},
		{name: "recv allow", file: "[recv]\nallow = [\"lan\"]\n", args: []string{"recv", "--insecure", "--listen", "127.0.0.1:0"}, code: ExitUsage,
			want: []string{`@CONFIG@:2: allow = ["lan"] in [recv]: "lan" is not a network`}},
		{name: "two settings that exclude each other", file: "[send]\ngrab = true\n", args: []string{"send", "--to", "x", "--script", "-"}, code: ExitUsage,
			want: []string{"--grab needs --input x11, --input evdev, --input windows or --input macos", "(grab = true from @CONFIG@:2 in [send]: --grab=false turns it off)"}},
		{name: "unreadable key file", file: "key-file = \"/does/not/exist.key\"\n", args: []string{"send", "--to", "127.0.0.1", "--script", "-"}, code: ExitError,
			want: []string{"/does/not/exist.key", `(key-file = "/does/not/exist.key" from @CONFIG@:1)`}},
		// --config FILE without a key, which one-way use needs, names FILE.
		{name: "no key with --config", file: "[send]\nto = \"127.0.0.1\"\n", args: []string{"send", "--config", "@CONFIG@", "--script", "-", "--one-way", "--feedback=false"}, code: ExitUsage,
			want: []string{"no key", "key-file in @CONFIG@"}, not: []string{"~/.config"}},

		// The environment: the variable, its value, what is wanted.
		{name: "env queue", env: map[string]string{"KEYRELAY_SEND_QUEUE": "200"}, args: []string{"send", "--to", "x", "--script", "-"}, code: ExitUsage,
			want: []string{`KEYRELAY_SEND_QUEUE="200": ` + queueWant}, not: []string{"--queue"}},
		{name: "env to", env: map[string]string{"KEYRELAY_SEND_TO": "a,b:0"}, args: []string{"send", "--script", "-"}, code: ExitUsage,
			want: []string{`KEYRELAY_SEND_TO="a,b:0": "b:0": port 0 is not a receiver's port`}},
		{name: "env listen", env: map[string]string{"KEYRELAY_RECV_LISTEN": ":70000"}, args: []string{"recv"}, code: ExitUsage,
			want: []string{`KEYRELAY_RECV_LISTEN=":70000": port 70000 out of range 0..65535`}},
		{name: "env input", env: map[string]string{"KEYRELAY_SEND_INPUT": "script"}, args: []string{"send", "--to", "x"}, code: ExitUsage,
			want: []string{"--input script needs --script FILE", `(input from KEYRELAY_SEND_INPUT="script")`}},
		{name: "env not a number", env: map[string]string{"KEYRELAY_SEND_QUEUE": "many"}, args: []string{"send", "--to", "x", "--script", "-"}, code: ExitUsage,
			want: []string{`KEYRELAY_SEND_QUEUE="many": want a whole number`}},
		// Unknown variables: warned about by the command that would read
		// them, not an error (here send stops later, for want of --to).
		{name: "env typo", env: map[string]string{"KEYRELAY_SEND_TOO": "x"}, args: []string{"send", "--script", "-"}, code: ExitUsage,
			want: []string{"warning: KEYRELAY_SEND_TOO is not a setting of send; did you mean KEYRELAY_SEND_TO?", "no destination"}},
		{name: "env of another command", env: map[string]string{"KEYRELAY_SEND_LISTEN": ":1"}, args: []string{"send", "--script", "-"}, code: ExitUsage,
			want: []string{"warning: KEYRELAY_SEND_LISTEN is not a setting of send; listen belongs in [recv] or [doctor]"}},
		{name: "env shared typo", env: map[string]string{"KEYRELAY_KEYFILE": "k"}, args: []string{"recv", "--listen", "nope"}, code: ExitUsage,
			want: []string{"warning: KEYRELAY_KEYFILE is not a keyrelay setting; did you mean KEYRELAY_KEY_FILE?"}},
		{name: "send's variable is not recv's to warn about", env: map[string]string{"KEYRELAY_SEND_TOO": "x"}, args: []string{"recv", "--listen", "nope"}, code: ExitUsage,
			not: []string{"KEYRELAY_SEND_TOO"}},

		// Flags: the flag, what is wanted, exit 2.
		{name: "flag typo", args: []string{"send", "--too", "x"}, code: ExitUsage,
			want: []string{"unknown flag: --too; did you mean --to?"}},
		{name: "flag value", args: []string{"send", "--interval", "soon"}, code: ExitUsage,
			want: []string{`invalid argument "soon" for "--interval"`, "--interval wants a duration with a unit"}},
		{name: "flag queue", args: []string{"send", "--to", "x", "--script", "-", "--queue", "200"}, code: ExitUsage,
			want: []string{"--queue 200 " + queueWant}},
		{name: "send port 0", args: []string{"send", "--to", "127.0.0.1:0", "--script", "-"}, code: ExitUsage,
			want: []string{`--to "127.0.0.1:0": port 0 is not a receiver's port (want 1..65535`}},
		{name: "send port 99999", args: []string{"send", "--to", "no-such-host.invalid:99999", "--script", "-"}, code: ExitUsage,
			want: []string{`--to "no-such-host.invalid:99999": port 99999 out of range 1..65535`}},
		{name: "send port in a comma list", args: []string{"send", "--to", "a:1,b:65536", "--script", "-"}, code: ExitUsage,
			want: []string{`--to "b:65536": port 65536 out of range 1..65535`}},
		{name: "recv port 99999", args: []string{"recv", "--listen", ":99999"}, code: ExitUsage,
			want: []string{`--listen ":99999": port 99999 out of range 0..65535`}},
		{name: "recv no port", args: []string{"recv", "--listen", "localhost"}, code: ExitUsage,
			want: []string{`--listen "localhost": want [HOST]:PORT, like :7575`, "or a bare port"}},
		{name: "impair port 99999", args: []string{"impair", "--to", "127.0.0.1:99999"}, code: ExitUsage,
			want: []string{`--to "127.0.0.1:99999": port 99999 out of range 1..65535`}},
		{name: "impair listen port 70000", args: []string{"impair", "--listen", "70000", "--to", "127.0.0.1:1"}, code: ExitUsage,
			want: []string{`--listen "70000": port 70000 out of range 0..65535`}},
		{name: "recv unknown injector", args: []string{"recv", "--inject", "lgo"}, code: ExitUsage,
			want: []string{`unknown --inject "lgo"`, `did you mean "log"?`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			path := filepath.Join(dir, "config.toml")
			if tc.file != "" {
				writeFile(t, path, tc.file)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, file, path)
			}
			var stderr bytes.Buffer
			code := Run(args, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
			got := stderr.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, got)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, file, path); !strings.Contains(got, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("stderr has %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestToCommaList: --to takes a comma list like KEYRELAY_SEND_TO, with
// [IPv6] addresses, and still repeats.
func TestToCommaList(t *testing.T) {
	isolate(t)
	var got *SendOptions
	c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.Check() })
	c.SetArgs([]string{"--to", "a:1,b:2", "--to", "[::1]:9, [fd00::7],", "--to", "c", "--script", "-"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got.To, " "); s != "a:1 b:2 [::1]:9 [fd00::7] c" {
		t.Errorf("--to gave %q", s)
	}
	as, err := dest.ResolveAll(got.To[2:4])
	if err != nil || as[0].String() != "[::1]:9" || as[1].String() != "[fd00::7]:7575" {
		t.Errorf("resolved %v, %v", as, err)
	}
}
