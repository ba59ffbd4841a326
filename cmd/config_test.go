package cmd

// Tests of the commands' settings: from the flag, then the environment
// (KEYRELAY_…), then the TOML config file, then the default; `keyrelay
// config` prints each with its source.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/spf13/cobra"
)

// isolate gives the test its own empty config directory and home, and no
// KEYRELAY_ variables, so the developer's own settings cannot leak in.
func isolate(t *testing.T) (configDir string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KEYRELAY_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	// doctor and keyrelay status list the sends running as this user,
	// through their control sockets there: none of the developer's own.
	run := filepath.Join(home, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	configDir = filepath.Join(home, ".config", "keyrelay")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return configDir
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runConfigured runs a command's flag parsing and configure step (its real
// PreRunE) and returns the options it would run with and each source.
func runSendConfigured(t *testing.T, args ...string) (*SendOptions, map[string]string, error) {
	t.Helper()
	var got *SendOptions
	c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return nil })
	sources := captureSources(c)
	c.SetArgs(args)
	err := c.Execute()
	return got, sources, err
}

func captureSources(c *cobra.Command) map[string]string {
	sources := map[string]string{}
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		settings, _, err := configure(c)
		for _, s := range settings {
			sources[s.Name] = s.Source
		}
		return err
	}
	return sources
}

// TestConfigPrecedence: a setting comes from the flag, then the
// environment, then the file, then the default (keyrelay config --help),
// for a scalar (interval), a list (to) and a shared setting (key-file),
// each from every source.
func TestConfigPrecedence(t *testing.T) {
	const file = `
key-file = "/file/top.key"
[send]
interval = "40ms"
to = ["file-a", "file-b:9"]
`
	cases := []struct {
		name     string
		file     bool
		env      map[string]string
		args     []string
		interval time.Duration
		to       string
		keyFile  string
		sources  map[string]string // setting -> source prefix
	}{
		{name: "default", interval: 100 * time.Millisecond, to: "", keyFile: "",
			sources: map[string]string{"interval": "default", "to": "default", "key-file": "default"}},
		{name: "file", file: true, interval: 40 * time.Millisecond, to: "file-a,file-b:9", keyFile: "/file/top.key",
			sources: map[string]string{"interval": "file ", "to": "file ", "key-file": "file "}},
		{name: "env over file", file: true,
			env:      map[string]string{"KEYRELAY_SEND_INTERVAL": "30ms", "KEYRELAY_SEND_TO": "env-a, env-b:8", "KEYRELAY_KEY_FILE": "/env/shared.key"},
			interval: 30 * time.Millisecond, to: "env-a,env-b:8", keyFile: "/env/shared.key",
			sources: map[string]string{"interval": "env KEYRELAY_SEND_INTERVAL", "to": "env KEYRELAY_SEND_TO", "key-file": "env KEYRELAY_KEY_FILE"}},
		{name: "command env over shared env",
			env:     map[string]string{"KEYRELAY_KEY_FILE": "/env/shared.key", "KEYRELAY_SEND_KEY_FILE": "/env/send.key"},
			keyFile: "/env/send.key", interval: 100 * time.Millisecond,
			sources: map[string]string{"key-file": "env KEYRELAY_SEND_KEY_FILE"}},
		{name: "flag over env over file", file: true,
			env:      map[string]string{"KEYRELAY_SEND_INTERVAL": "30ms", "KEYRELAY_SEND_TO": "env-a", "KEYRELAY_KEY_FILE": "/env/shared.key"},
			args:     []string{"--interval", "20ms", "--to", "flag-a", "--key-file", "/flag.key"},
			interval: 20 * time.Millisecond, to: "flag-a", keyFile: "/flag.key",
			sources: map[string]string{"interval": "flag --interval", "to": "flag --to", "key-file": "flag --key-file"}},
		{name: "flag over default", args: []string{"--queue", "7"}, interval: 100 * time.Millisecond,
			sources: map[string]string{"queue": "flag --queue", "interval": "default"}},
		{name: "mixed", file: true, env: map[string]string{"KEYRELAY_SEND_TO": "env-a"}, args: []string{"--key-file", "/flag.key"},
			interval: 40 * time.Millisecond, to: "env-a", keyFile: "/flag.key",
			sources: map[string]string{"interval": "file ", "to": "env KEYRELAY_SEND_TO", "key-file": "flag --key-file", "queue": "default"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			if tc.file {
				writeFile(t, filepath.Join(dir, "config.toml"), file)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, sources, err := runSendConfigured(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Interval != tc.interval || strings.Join(got.To, ",") != tc.to || got.Key.KeyFile != tc.keyFile {
				t.Errorf("interval %v to %q key-file %q; want %v %q %q", got.Interval, strings.Join(got.To, ","), got.Key.KeyFile, tc.interval, tc.to, tc.keyFile)
			}
			for k, want := range tc.sources {
				if !strings.HasPrefix(sources[k], want) {
					t.Errorf("source of %s = %q, want %q…", k, sources[k], want)
				}
			}
		})
	}
}

// TestConfigFileLocation: the XDG path by default, $KEYRELAY_CONFIG over
// it, --config over both; a named file must exist, the default need not.
func TestConfigFileLocation(t *testing.T) {
	dir := isolate(t)
	writeFile(t, filepath.Join(dir, "config.toml"), "[send]\nqueue = 11\n")
	other := writeFile(t, filepath.Join(t.TempDir(), "other.toml"), "[send]\nqueue = 22\n")
	third := writeFile(t, filepath.Join(t.TempDir(), "third.toml"), "[send]\nqueue = 33\n")

	got, _, err := runSendConfigured(t, "--to", "x")
	if err != nil || got.Queue != 11 {
		t.Fatalf("XDG default: queue %v, err %v; want 11", got, err)
	}
	t.Setenv(config.Env, other)
	if got, _, err = runSendConfigured(t, "--to", "x"); err != nil || got.Queue != 22 {
		t.Fatalf("$KEYRELAY_CONFIG: queue %v, err %v; want 22", got, err)
	}
	if got, _, err = runSendConfigured(t, "--to", "x", "--config", third); err != nil || got.Queue != 33 {
		t.Fatalf("--config: queue %v, err %v; want 33", got, err)
	}
	if _, _, err = runSendConfigured(t, "--config", filepath.Join(dir, "missing.toml")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing --config file: err %v", err)
	}
	os.Remove(filepath.Join(dir, "config.toml"))
	os.Unsetenv(config.Env)
	if got, _, err = runSendConfigured(t, "--to", "x"); err != nil || got.Queue != 16 {
		t.Errorf("no file at the default path: queue %v, err %v; want the default 16", got, err)
	}
}

// TestConfigSectionsAndPaths: a command's table wins over the top level; a
// relative key-file is relative to the file; "~/" is the home directory;
// doctor reads [recv] and [send] after [doctor].
func TestConfigSectionsAndPaths(t *testing.T) {
	dir := isolate(t)
	home := os.Getenv("HOME")
	writeFile(t, filepath.Join(dir, "config.toml"), `
key-file = "keyrelay.key"
log-format = "json"
[send]
input = "hook"
[recv]
key-file = "~/recv.key"
inject = "uinput"
listen = "127.0.0.1:7000"
[doctor]
listen = "127.0.0.1:7001"
`)
	got, _, err := runSendConfigured(t, "--to", "x")
	if err != nil {
		t.Fatal(err)
	}
	if got.Key.KeyFile != filepath.Join(dir, "keyrelay.key") || got.LogFormat != "json" || got.Input != "hook" {
		t.Errorf("send: key-file %q log-format %q input %q", got.Key.KeyFile, got.LogFormat, got.Input)
	}

	var rgot *RecvOptions
	rc := NewCmdRecv(IO{}, func(_ context.Context, o *RecvOptions) error { rgot = o; return nil })
	rc.SetArgs(nil)
	if err := rc.Execute(); err != nil {
		t.Fatal(err)
	}
	if rgot.Key.KeyFile != filepath.Join(home, "recv.key") || rgot.Inject != "uinput" || rgot.LogFormat != "json" {
		t.Errorf("recv: key-file %q inject %q log-format %q", rgot.Key.KeyFile, rgot.Inject, rgot.LogFormat)
	}

	dc := NewCmdDoctor(IO{})
	sources := captureSources(dc)
	if err := dc.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := dc.PreRunE(dc, nil); err != nil {
		t.Fatal(err)
	}
	flag := func(n string) string { return dc.Flags().Lookup(n).Value.String() }
	if flag("listen") != "127.0.0.1:7001" || flag("inject") != "uinput" || flag("input") != "hook" || flag("key-file") != filepath.Join(home, "recv.key") {
		t.Errorf("doctor: listen %q inject %q input %q key-file %q", flag("listen"), flag("inject"), flag("input"), flag("key-file"))
	}
	if !strings.HasSuffix(sources["inject"], "[recv]") || !strings.HasSuffix(sources["input"], "[send]") || !strings.HasSuffix(sources["listen"], "[doctor]") {
		t.Errorf("doctor sources %v", sources)
	}
}

// TestConfigExclusive: a flag overrides a lower setting it excludes
// (--insecure over a configured key file, --script over a configured
// --input hook) instead of failing.
func TestConfigExclusive(t *testing.T) {
	dir := isolate(t)
	writeFile(t, filepath.Join(dir, "config.toml"), "key-file = \"/k\"\n[send]\ninput = \"hook\"\n")
	got, sources, err := runSendConfigured(t, "--to", "x", "--insecure", "--script", "-")
	if err != nil {
		t.Fatal(err)
	}
	if got.Key.KeyFile != "" || !got.Key.Insecure || got.Input != "" || got.Script != "-" {
		t.Errorf("key-file %q insecure %v input %q script %q", got.Key.KeyFile, got.Key.Insecure, got.Input, got.Script)
	}
	if !strings.Contains(sources["key-file"], "overridden by flag --insecure") {
		t.Errorf("key-file source %q", sources["key-file"])
	}
	// Both on the command line stay a conflict for the command to report.
	got, _, err = runSendConfigured(t, "--to", "x", "--insecure", "--key-file", "/k2")
	if err != nil || got.Key.KeyFile != "/k2" || !got.Key.Insecure {
		t.Errorf("both flags: %+v %v", got, err)
	}
}

// TestConfigErrors: every mistake names the file, the setting and the fix,
// and is a usage error (exit 2) before anything runs.
func TestConfigErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"intervall = \"1s\"", `unknown top-level setting "intervall"`},
		{"listen = \":1\"", "listen belongs in [recv] or [doctor]"},
		{"[send]\nintervall = \"1s\"", `unknown setting "intervall" in [send] (did you mean "interval"?)`},
		{"[send]\nqueue = \"16\"", `queue in [send]: want a whole number (no quotes), got "16"`},
		{"[send]\ninterval = 100", `interval in [send]: want a duration as a string with a unit`},
		{"[send]\ninterval = \"1x\"", `interval in [send]: `},
		{"[recv]\nbalanced = \"yes\"", `balanced in [recv]: want true or false`},
		{"[recv]\nallow = []", `allow in [recv]: empty list`},
		{"[recv]\nlisten = 5", `listen in [recv]: want a string, got the number 5`},
		{"[send\nto = 1", ":2:6: expected '.' or ']' to end table name"},
		{"send = 3", "send must be a table"},
		{"[send]\nconfig = \"x\"", `unknown setting "config" in [send]`},
		// A mistake in [recv] stops send too: the file is checked whole.
		{"[recv]\ninjec = \"log\"", `unknown setting "injec" in [recv] (did you mean "inject"?)`},
	}
	for _, tc := range cases {
		dir := isolate(t)
		path := writeFile(t, filepath.Join(dir, "config.toml"), tc.file)
		var stderr bytes.Buffer
		code := Run([]string{"send", "--to", "x", "--script", "-"}, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
		if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), path) {
			t.Errorf("file %q: exit %d, stderr %q; want exit %d and %q with the path", tc.file, code, stderr.String(), ExitUsage, tc.want)
		}
	}
	for env, want := range map[string]string{
		"KEYRELAY_SEND_QUEUE=x":       `KEYRELAY_SEND_QUEUE="x": want a whole number`,
		"KEYRELAY_SEND_FEEDBACK=nope": `KEYRELAY_SEND_FEEDBACK="nope": want true or false`,
		"KEYRELAY_SEND_TIMEOUT=5":     `KEYRELAY_SEND_TIMEOUT="5": time: missing unit`,
		"KEYRELAY_SEND_TO=,":          `KEYRELAY_SEND_TO=",": empty list`,
	} {
		isolate(t)
		k, v, _ := strings.Cut(env, "=")
		t.Setenv(k, v)
		var stderr bytes.Buffer
		code := Run([]string{"send", "--script", "-"}, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
		if code != ExitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", env, code, stderr.String(), want)
		}
	}
}

// TestConfigCommand: `keyrelay config` names each setting's source, flags
// unknown KEYRELAY_ variables, and prints a valid config file that, read
// back, gives the same settings.
func TestConfigCommand(t *testing.T) {
	dir := isolate(t)
	path := writeFile(t, filepath.Join(dir, "config.toml"), `
log-format = "json"
[send]
to = ["desk.lan", "[::1]:9"]
queue = 24
[recv]
allow = ["192.168.1.0/24"]
listen = "127.0.0.1:7600"
`)
	t.Setenv("KEYRELAY_RECV_TIMEOUT", "3s")
	t.Setenv("KEYRELAY_SEND_INTERVALL", "1s")
	var out, stderr bytes.Buffer
	if code := Run([]string{"config"}, IO{Out: &out, Err: &stderr}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	text := out.String()
	for _, want := range []string{
		"# config file: " + path,
		`to = ["desk.lan", "[::1]:9"]`, "# file " + path + " [send]",
		`timeout = "3s"`, "# env KEYRELAY_RECV_TIMEOUT",
		`interval = "100ms"`,
		`log-format = "json"`, "# file " + path + "\n",
		`inject = "auto"`,
		"# ignored: $KEYRELAY_SEND_INTERVALL is no setting",
		`# script = ""`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config output lacks %q:\n%s", want, text)
		}
	}
	var decoded map[string]map[string]any
	if _, err := toml.Decode(text, &decoded); err != nil {
		t.Fatalf("output is not TOML: %v\n%s", err, text)
	}
	if decoded["send"]["queue"] != int64(24) || decoded["recv"]["timeout"] != "3s" {
		t.Errorf("decoded %v", decoded)
	}

	// Read back with nothing else set: the same values, now all from the file.
	os.Unsetenv("KEYRELAY_RECV_TIMEOUT")
	os.Unsetenv("KEYRELAY_SEND_INTERVALL")
	again := writeFile(t, filepath.Join(t.TempDir(), "again.toml"), text)
	var out2 bytes.Buffer
	if code := Run([]string{"config", "--config", again}, IO{Out: &out2, Err: &stderr}); code != ExitOK {
		t.Fatalf("reading the output back: exit %d: %s", code, stderr.String())
	}
	strip := func(s string) []string {
		var vals []string
		for _, line := range strings.Split(s, "\n") {
			if v, _, _ := strings.Cut(line, "  #"); strings.Contains(v, " = ") {
				vals = append(vals, strings.TrimSpace(v))
			}
		}
		return vals
	}
	a, b := strip(text), strip(out2.String())
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("settings differ after a round trip:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if !strings.Contains(out2.String(), "# file "+again+" [recv]") {
		t.Errorf("round trip sources:\n%s", out2.String())
	}

	if code := Run([]string{"config", "sendd"}, IO{Out: &out, Err: &stderr}); code != ExitUsage {
		t.Errorf("config sendd: exit %d", code)
	}
}

// TestREADMEConfigExamples: the config files the README and docs/ show
// (```toml blocks and the heredocs written to config.toml) are accepted as
// they stand.
func TestREADMEConfigExamples(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	type example struct{ file, text string }
	var examples []example
	for _, file := range append([]string{"../README.md"}, docs...) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(text), "```toml\n")[1:] {
			block, _, _ := strings.Cut(part, "```")
			examples = append(examples, example{file, block})
		}
		for _, part := range strings.Split(string(text), "<<'TOML'\n")[1:] {
			block, _, _ := strings.Cut(part, "\nTOML\n")
			examples = append(examples, example{file, block})
		}
	}
	if len(examples) < 3 {
		t.Fatalf("found %d config examples in README.md and docs/, want the reference and the quick start's two", len(examples))
	}
	for _, ex := range examples {
		dir := isolate(t)
		writeFile(t, filepath.Join(dir, "config.toml"), ex.text)
		var out, stderr bytes.Buffer
		if code := Run([]string{"config"}, IO{Out: &out, Err: &stderr}); code != ExitOK {
			t.Errorf("%s example: exit %d: %s\n%s", ex.file, code, stderr.String(), ex.text)
		}
		if !strings.Contains(out.String(), "# file ") {
			t.Errorf("%s example: no setting came from the file:\n%s", ex.file, out.String())
		}
	}
}

// TestInsecureOnlyOnTheCommandLine: insecure = true is refused from the
// config file and the environment (left there, it would let anyone on the
// LAN type on every later run), with where it came from and why; false
// there, what 'keyrelay config' writes, is fine.
func TestInsecureOnlyOnTheCommandLine(t *testing.T) {
	why := "would let anyone on the LAN type on this machine"
	for _, tc := range []struct {
		name, file, env string
		args            []string
		want            []string // "" code: ExitOK
	}{
		{name: "top of the file", file: "insecure = true\n", args: []string{"send", "--to", "x", "--script", "-"},
			want: []string{"config.toml:1: insecure = true: insecure is refused from the config file, only taken on the command line: a config file left with insecure = true " + why, "give --insecure on the command line"}},
		{name: "[recv]", file: "[recv]\ninsecure = true\n", args: []string{"recv", "--listen", "127.0.0.1:0"},
			want: []string{"config.toml:2: insecure = true in [recv]: insecure is refused from the config file"}},
		{name: "shared variable", env: "KEYRELAY_INSECURE=true", args: []string{"send", "--to", "x", "--script", "-"},
			want: []string{`KEYRELAY_INSECURE="true": insecure is refused from the environment, only taken on the command line: a variable left set (in a shell profile, a service unit) ` + why}},
		{name: "command's variable", env: "KEYRELAY_RECV_INSECURE=1", args: []string{"recv", "--listen", "127.0.0.1:0"},
			want: []string{`KEYRELAY_RECV_INSECURE="1": insecure is refused from the environment`}},
		{name: "doctor reads [recv]", file: "[recv]\ninsecure = true\n", args: []string{"doctor"},
			want: []string{"insecure = true in [recv]: insecure is refused from the config file"}},
		{name: "debug", file: "[send]\ndebug = true\n", args: []string{"send", "--to", "x", "--script", "-"},
			want: []string{"config.toml:2: debug = true in [send]: debug is refused from the config file, only taken on the command line: a config file left with debug = true would put the keys typed, passwords included, in every later run's log"}},
		{name: "false in the file", file: "insecure = false\n[send]\ninsecure = false\n", args: []string{"config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			if tc.file != "" {
				writeFile(t, filepath.Join(dir, "config.toml"), tc.file)
			}
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			code := Run(tc.args, IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
			if tc.want == nil {
				if code != ExitOK {
					t.Errorf("exit %d, want 0: %s", code, stderr.String())
				}
				return
			}
			if code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}
