package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/peers"
)

// run runs keyrelay with args (after isolate) and returns what it did.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestIDPrintsOneLine: 'keyrelay id' prints exactly one line, the public
// key first (scripts cut it) and its fingerprint; the first run makes the
// identity in the config directory (0700, the file 0600) and says so on
// stderr, the next prints the same line and says nothing.
func TestIDPrintsOneLine(t *testing.T) {
	dir := isolate(t)
	os.Remove(dir) // id makes it
	code, out, stderr := run("id")
	path := filepath.Join(dir, "identity")
	if code != ExitOK || stderr != "keyrelay id: made a new identity at "+path+"\n" {
		t.Fatalf("first id: exit %d, stderr %q", code, stderr)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9+/]{43}= [0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}\n$`).MatchString(out) {
		t.Fatalf("id printed %q, want one line: KEY FINGERPRINT", out)
	}
	fields := strings.Fields(out)
	key, err := identity.ParsePublic(fields[0])
	if err != nil || identity.Fingerprint(key) != fields[1] {
		t.Errorf("first field %q: %v; fingerprint %s, want %s", fields[0], err, fields[1], identity.Fingerprint(key))
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700 | os.ModeDir} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("%s: %v (%v), want %v", p, st.Mode(), err, want)
		}
	}
	code, again, stderr := run("id")
	if code != ExitOK || again != out || stderr != "" {
		t.Errorf("second id: exit %d, %q, stderr %q; want the same line, nothing made", code, again, stderr)
	}
}

// TestIDPath: the identity file is --identity, else $KEYRELAY_IDENTITY,
// else identity at the top of the config file (relative to its
// directory), else identity in the config directory.
func TestIDPath(t *testing.T) {
	for _, tt := range []struct {
		name, env, config string
		args              []string
		want              string // relative to the test's directory
	}{
		{"default", "", "", nil, "keyrelay/identity"},
		{"config file", "", `identity = "mine"`, nil, "keyrelay/mine"},
		{"environment", "ENV", `identity = "mine"`, nil, "env.id"},
		{"flag", "ENV", `identity = "mine"`, []string{"--identity", "FLAG"}, "flag.id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Dir(isolate(t))
			if tt.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "keyrelay", "config.toml"), []byte(tt.config+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.env != "" {
				t.Setenv(identity.Env, filepath.Join(dir, "env.id"))
			}
			args := []string{"id"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "FLAG", filepath.Join(dir, "flag.id")))
			}
			code, _, stderr := run(args...)
			if want := "made a new identity at " + filepath.Join(dir, tt.want) + "\n"; code != ExitOK || !strings.HasSuffix(stderr, want) {
				t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
			}
		})
	}
}

// TestIDErrors: an identity others can read is refused (exit 1) with the
// chmod that fixes it; a bad identity setting is a usage error naming the
// config file's line.
func TestIDErrors(t *testing.T) {
	dir := isolate(t)
	if code, _, _ := run("id"); code != ExitOK {
		t.Fatal("id failed")
	}
	path := filepath.Join(dir, "identity")
	os.Chmod(path, 0o640)
	if code, out, stderr := run("id"); code != ExitError || out != "" || !strings.Contains(stderr, "has mode 0640: other users can read it (chmod 600 "+path+")") {
		t.Errorf("0640 identity: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	os.Chmod(path, 0o600)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("log-format = \"text\"\nidentity = 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run("id"); code != ExitUsage || !strings.Contains(stderr, "config.toml:2: identity") || !strings.Contains(stderr, "got the number 5") {
		t.Errorf("identity = 5: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run("id", "extra"); code != ExitUsage || !strings.Contains(stderr, "unknown command") {
		t.Errorf("id extra: exit %d, stderr %q", code, stderr)
	}
}

// TestPeersCommands: peers lists, add pairs, remove unpairs, each a step
// on the same peers file; mistakes in the arguments exit 2, a conflict
// with the file's content (a duplicate, an unknown name) exits 1, and
// nothing refused is written.
func TestPeersCommands(t *testing.T) {
	dir := isolate(t)
	_, own, _ := run("id")
	ownKey := strings.Fields(own)[0]
	other, _ := identity.Generate()
	key := identity.FormatPublic(other.Public())
	third, _ := identity.Generate()
	key3 := identity.FormatPublic(third.Public())
	path := filepath.Join(dir, "peers.toml")
	for _, step := range []struct {
		args   []string
		code   int
		stdout string // a regexp, "" for nothing
		stderr string // contained
	}{
		{[]string{"peers"}, ExitOK, "", "no peers in " + path + "; add one with 'keyrelay peers add NAME KEY'"},
		{[]string{"peers", "add", "mediapc", key, "--addr", "mediapc.lan"}, ExitOK, "", "added mediapc, fingerprint " + identity.Fingerprint(other.Public())},
		{[]string{"peers"}, ExitOK, `^NAME +KEY +FINGERPRINT +ADDR\nmediapc +` + regexp.QuoteMeta(key) + ` +` + identity.Fingerprint(other.Public()) + ` +mediapc\.lan:7575\n$`, ""},
		{[]string{"peers", "add", "MEDIAPC", key3}, ExitError, "", `a peer named "mediapc" already exists, with key ` + key},
		{[]string{"peers", "add", "desk", key}, ExitError, "", "that key is mediapc's already (fingerprint " + identity.Fingerprint(other.Public()) + "): a machine is paired once, whatever runs on it; a second recv there needs no second name: --to mediapc:PORT"},
		{[]string{"peers", "add", "self", ownKey}, ExitUsage, "", "is this machine's own"},
		{[]string{"peers", "add", "desk", "AAAA"}, ExitUsage, "", `KEY "AAAA" is 4 characters, not a key: a public key is 44 characters`},
		{[]string{"peers", "add", "desk", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, ExitUsage, "", "low-order point"},
		{[]string{"peers", "add", "de sk", key3}, ExitUsage, "", `peer name "de sk": a peer's name is 1 to 63`},
		{[]string{"peers", "add", "desk", key3, "--addr", "desk:99999"}, ExitUsage, "", `--addr: address "desk:99999": port "99999" is not a number from 1 to 65535`},
		{[]string{"peers", "add", "desk"}, ExitUsage, "", "peers add takes a NAME and a KEY, got 1 argument(s)"},
		{[]string{"peers", "remove"}, ExitUsage, "", "peers remove takes one NAME"},
		{[]string{"peers", "extra"}, ExitUsage, "", `unknown command "extra" for "keyrelay peers"`},
		{[]string{"peers", "remove", "medipc"}, ExitError, "", `no peer named "medipc" (did you mean "mediapc"?)`},
		{[]string{"peers", "add", "desk", key3, "--addr", "[fd00::7]"}, ExitOK, "", "added desk"},
		{[]string{"peers", "remove", "MediaPC"}, ExitOK, "", "removed mediapc"},
		{[]string{"peers"}, ExitOK, `^NAME +KEY +FINGERPRINT +ADDR\ndesk +\S+ +\S+ +\[fd00::7\]:7575\n$`, ""},
	} {
		code, out, stderr := run(step.args...)
		if code != step.code || !regexp.MustCompile(step.stdout).MatchString(out) || step.stdout == "" && out != "" || !strings.Contains(stderr, step.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q\nwant exit %d, stdout like %q, stderr with %q", step.args, code, out, stderr, step.code, step.stdout, step.stderr)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("peers file: %v %v, want mode 0600", st, err)
	}
}

// TestPeersFileProblems: a peers file others can write is refused with
// the chmod that fixes it, and a mistake in it is named with its line,
// for listing and adding alike (exit 1: the file, not the command line, is
// wrong); --peers names another file.
func TestPeersFileProblems(t *testing.T) {
	dir := isolate(t)
	path := filepath.Join(dir, "peers.toml")
	os.WriteFile(path, []byte("# mine\n[[peer]]\nname = \"a\"\nkey = \"AAAA\"\n"), 0o600)
	other, _ := identity.Generate()
	key := identity.FormatPublic(other.Public())
	for _, args := range [][]string{{"peers"}, {"peers", "add", "b", key}} {
		if code, _, stderr := run(args...); code != ExitError || !strings.Contains(stderr, path+`:4: peer "a"'s key: "AAAA" is 4 characters`) {
			t.Errorf("%v on a bad file: exit %d, stderr %q", args, code, stderr)
		}
	}
	os.WriteFile(path, []byte(""), 0o600)
	os.Chmod(path, 0o664)
	if code, _, stderr := run("peers"); code != ExitError || !strings.Contains(stderr, "has mode 0664: other users can write it (chmod 644 "+path+")") {
		t.Errorf("0664 peers file: exit %d, stderr %q", code, stderr)
	}
	elsewhere := filepath.Join(t.TempDir(), "p.toml")
	if code, _, stderr := run("peers", "add", "b", key, "--peers", elsewhere); code != ExitOK || !strings.Contains(stderr, elsewhere) {
		t.Errorf("add --peers: exit %d, stderr %q", code, stderr)
	}
	if code, out, _ := run("peers", "--peers", elsewhere); code != ExitOK || !strings.Contains(out, key) {
		t.Errorf("peers --peers: exit %d, %q", code, out)
	}
}

// TestPeersAddFirst: pairing before 'keyrelay id' ever ran (no config
// directory, no identity) works: the directory is made, and there is no
// own key to refuse.
func TestPeersAddFirst(t *testing.T) {
	dir := isolate(t)
	os.Remove(dir)
	other, _ := identity.Generate()
	if code, _, stderr := run("peers", "add", "desk", identity.FormatPublic(other.Public())); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "identity")); !os.IsNotExist(err) {
		t.Errorf("peers add made an identity: %v", err)
	}
	if l, err := peers.Load(filepath.Join(dir, "peers.toml")); err != nil || l.Len() != 1 {
		t.Errorf("peers file: %v, %v", l, err)
	}
}
