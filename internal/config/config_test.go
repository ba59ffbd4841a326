package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// tables is a --to that also takes tables ([[send.to]]): a TableValue.
type tables struct {
	strs []string
	tabs []map[string]any
}

func (t *tables) String() string     { return "[" + strings.Join(t.strs, ",") + "]" }
func (t *tables) Set(s string) error { t.strs = append(t.strs, s); return nil }
func (t *tables) Type() string       { return "stringArray" }
func (t *tables) SetTable(m map[string]any) (string, error) {
	if v, ok := m["bad"]; ok {
		return "bad", fmt.Errorf("bad = %v is refused", v)
	}
	if _, ok := m["name"]; !ok {
		return "", errors.New("a table needs a name")
	}
	t.tabs = append(t.tabs, m)
	return "", nil
}
func (t *tables) TOML() (string, bool) { return "", false }

// testFlags are a command's flags as the schema gives them: send's and
// doctor's take the destinations and a queue, recv a listen address;
// every command has the shared key-file and insecure.
type testFlags struct {
	fs       *pflag.FlagSet
	to       *tables
	interval *time.Duration
	queue    *int
	keyFile  *string
}

func newTestFlags(command string) testFlags {
	f := testFlags{fs: pflag.NewFlagSet(command, pflag.ContinueOnError), to: &tables{}}
	f.keyFile = f.fs.String("key-file", "", "")
	f.fs.Bool("insecure", false, "")
	f.fs.String("config", "", "")
	switch command {
	case "send", "doctor":
		f.fs.Var(f.to, "to", "")
		f.interval = f.fs.Duration("interval", 100*time.Millisecond, "")
		f.queue = f.fs.Int("queue", 16, "")
	case "recv":
		f.fs.String("listen", ":"+DefaultPort, "")
	}
	return f
}

var testSchema = Schema{Flags: func(command string) *pflag.FlagSet { return newTestFlags(command).fs }}

// writeConfig writes a config file of mode 0600 in a directory of the
// test's own (a file others can change is refused) and names it in
// $KEYRELAY_CONFIG; the test has no other KEYRELAY_ variable.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KEYRELAY_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, path)
	return path
}

// TestApplyPrecedence checks the order keyrelay config documents: the
// command line, then KEYRELAY_<COMMAND>_<FLAG>, then the command's table
// of the file, then the top of the file (shared settings only), then the
// default; a path in the file is relative to the file's directory.
func TestApplyPrecedence(t *testing.T) {
	path := writeConfig(t, "key-file = \"top.key\"\n[send]\ninterval = \"40ms\"\nqueue = 8\nto = [\"file-a\", \"file-b\"]\n")
	t.Setenv("KEYRELAY_SEND_INTERVAL", "30ms")
	cf, err := Load("", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Found || !cf.Explicit || cf.Path != path || !cf.HasTable("send") || cf.HasTable("recv") {
		t.Fatalf("loaded %+v, want %s, found and explicit, with [send] only", cf, path)
	}
	f := newTestFlags("send")
	if err := f.fs.Parse([]string{"--queue", "7"}); err != nil {
		t.Fatal(err)
	}
	settings, err := cf.Apply("send", f.fs)
	if err != nil {
		t.Fatal(err)
	}
	if *f.interval != 30*time.Millisecond || *f.queue != 7 || strings.Join(f.to.strs, ",") != "file-a,file-b" || *f.keyFile != filepath.Join(filepath.Dir(path), "top.key") {
		t.Errorf("interval %v queue %d to %v key-file %q", *f.interval, *f.queue, f.to.strs, *f.keyFile)
	}
	want := map[string]struct {
		source string
		rank   Rank
	}{
		"interval": {"env KEYRELAY_SEND_INTERVAL", RankEnv},
		"queue":    {"flag --queue", RankFlag},
		"to":       {"file " + path + " [send]", RankFile},
		"key-file": {"file " + path, RankFile},
		"insecure": {"default", RankDefault},
	}
	for _, s := range settings {
		w, ok := want[s.Name]
		if !ok {
			continue
		}
		delete(want, s.Name)
		if s.Source != w.source || s.Rank != w.rank {
			t.Errorf("%s: source %q rank %d, want %q rank %d", s.Name, s.Source, s.Rank, w.source, w.rank)
		}
	}
	for name := range want {
		t.Errorf("no setting %s", name)
	}
}

// TestMistakesNameTheirPlace checks that a mistake in a setting names
// where its value came from: the file's line (a value the command
// refuses, through Attribute; a value the flag cannot parse; an unquoted
// duration; a table's faulty key), the variable, or the command line's
// flag as the command said it.
func TestMistakesNameTheirPlace(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        []string
		args       []string
		refuse     error // the command's error, as validation returns it
		want       string
	}{
		{name: "a value the command refuses, from the file", file: "[send]\nqueue = 200\n",
			refuse: BadValue("queue", "out of range 1..80", "--queue 200 out of range 1..80"), want: "PATH:2: queue = 200 in [send]: out of range 1..80"},
		{name: "the same from the environment", env: []string{"KEYRELAY_SEND_QUEUE=200"},
			refuse: BadValue("queue", "out of range 1..80", "--queue 200 out of range 1..80"), want: `KEYRELAY_SEND_QUEUE="200": out of range 1..80`},
		{name: "the same from the command line", args: []string{"--queue", "200"},
			refuse: BadValue("queue", "out of range 1..80", "--queue 200 out of range 1..80"), want: "--queue 200 out of range 1..80"},
		{name: "two settings that do not go together", file: "[send]\ninterval = \"40ms\"\n", args: []string{"--queue", "3"},
			refuse: Involving(errors.New("--queue 3 and --interval 40ms do not go together"), "queue", "interval"),
			want:   `--queue 3 and --interval 40ms do not go together (interval = "40ms" from PATH:2 in [send])`},
		{name: "a value the flag cannot parse", file: "\n[send]\nqueue = \"many\"\n", want: `PATH:3: queue in [send]: want a whole number (no quotes), got "many"`},
		{name: "an unquoted duration", file: "[send]\ninterval = 100ms\n", want: `PATH:2: interval = 100ms: a duration must be quoted: interval = "100ms"`},
		{name: "a misspelt setting", file: "[send]\nqeue = 3\n", want: `PATH:2: unknown setting "qeue" in [send] (did you mean "queue"?)`},
		{name: "a table's faulty key", file: "[[send.to]]\nname = \"a\"\n\n[[send.to]]\nname = \"b\"\nbad = 1\n", want: "PATH:6: bad = 1 is refused"},
		{name: "a table without what it needs", file: "[[send.to]]\naddr = \"x\"\n", want: "PATH:1: a table needs a name"},
		{name: "insecure left on in the file", file: "insecure = true\n", want: "PATH:1: insecure = true: insecure is refused from the config file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConfig(t, c.file)
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			f := newTestFlags("send")
			err := f.fs.Parse(c.args)
			var cf *File
			if err == nil {
				cf, err = Load("", testSchema)
			}
			var settings []Setting
			if err == nil {
				settings, err = cf.Apply("send", f.fs)
			}
			if err == nil {
				err = Attribute(c.refuse, settings, cf)
			}
			want := strings.ReplaceAll(c.want, "PATH", path)
			if !errors.As(err, new(UsageError)) || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want a usage error saying %q", err, want)
			}
		})
	}
}
