package peers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/secret"
)

// Two machines' public keys (RFC 7748 section 6.1's Alice and Bob).
const (
	keyA = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
	keyB = "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
)

func mustKey(t testing.TB, s string) [identity.KeyLen]byte {
	t.Helper()
	k, err := identity.ParsePublic(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestParse: a well-formed file loads in its order, an address optional.
func TestParse(t *testing.T) {
	l, err := Parse("p.toml", []byte(`# paired machines
[[peer]]
name = "mediapc"
key = "`+keyA+`"
addr = "mediapc.lan:7575"   # optional

[[peer]]
name = 'desk'
key = '`+keyB+`'
`))
	if err != nil {
		t.Fatal(err)
	}
	got := l.Peers()
	if len(got) != 2 || got[0] != (Peer{"mediapc", mustKey(t, keyA), "mediapc.lan:7575"}) || got[1] != (Peer{"desk", mustKey(t, keyB), ""}) {
		t.Errorf("parsed %+v", got)
	}
}

// TestParseErrors: every mistake is named with the file, the line it is
// on and what is wanted; a bad key with identity.ParsePublic's words.
func TestParseErrors(t *testing.T) {
	peer := func(name, key string, more ...string) string {
		return "[[peer]]\nname = \"" + name + "\"\nkey = \"" + key + "\"\n" + strings.Join(more, "\n") + "\n"
	}
	for _, tt := range []struct{ name, in, want string }{
		{"syntax", "[[peer]]\nname = \"a\n", "p.toml:2: "},
		{"duplicate toml key", "[[peer]]\nname = \"a\"\nname = \"b\"\n", "p.toml:3: "},
		{"unknown top level", "[[peer]]\nname = \"a\"\n[peers]\nx = 1\n", `p.toml:3: unknown setting "peers" (did you mean [[peer]]?)`},
		{"unknown top key", "nmae = 1\n", `p.toml:1: unknown setting "nmae": the peers file holds only [[peer]] tables`},
		{"single table", "[peer]\nname = \"a\"\n", "p.toml:1: peer must be [[peer]] tables, one per machine, not a table"},
		{"unknown field", peer("a", keyA, "adr = \"x\""), `p.toml:4: unknown setting "adr" in [[peer]] (did you mean "addr"?): a peer has name, key and addr`},
		{"unknown field far", peer("a", keyA, "colour = \"red\""), `p.toml:4: unknown setting "colour" in [[peer]]: a peer has`},
		{"second table's field", peer("a", keyA) + "\n" + peer("b", keyB, "nam = 1"), `p.toml:9: unknown setting "nam" in [[peer]] (did you mean "name"?)`},
		{"no name", "[[peer]]\nkey = \"" + keyA + "\"\n", "p.toml:1: a [[peer]] has no name"},
		{"no key", peer("a", keyA) + "[[peer]]\nname = \"b\"\n", `p.toml:5: peer "b" has no key: give it key = "...", the public key 'keyrelay id' prints`},
		{"name not a string", "[[peer]]\nname = 7\n", "p.toml:2: name must be a string in quotes, not a number"},
		{"bad name", peer("-a", keyA), `p.toml:2: peer name "-a": a peer's name is 1 to 63 letters`},
		{"long name", peer(strings.Repeat("a", 64), keyA), "is 64 characters"},
		{"short key", peer("a", "AAAA"), `p.toml:3: peer "a"'s key: "AAAA" is 4 characters, not a key: a public key is 44 characters of base64`},
		{"low-order key", peer("a", "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), `p.toml:3: peer "a"'s key: "AQAA`},
		{"bad port", peer("a", keyA, "addr = \"host:70000\""), `p.toml:4: peer "a"'s address "host:70000": port "70000" is not a number from 1 to 65535`},
		{"no host", peer("a", keyA, "addr = \":7575\""), `p.toml:4: peer "a"'s address ":7575" has no host`},
		{"duplicate name", peer("mediapc", keyA) + peer("MediaPC", keyB), `p.toml:6: a second peer named "MediaPC" (the first, "mediapc", is at line 2): names must differ, case ignored`},
		{"duplicate key", peer("a", keyA) + peer("b", keyA), `p.toml:7: peer "b" has the key of peer "a" (line 3): each machine has its own key`},
		{"inline tables", "peer = [{name = \"a\", key = \"AAAA\"}]\n", `p.toml: peer "a"'s key: "AAAA" is 4 characters`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("p.toml", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, %v\nwant an error with %q", l, err, tt.want)
			}
		})
	}
}

// TestAddRemove: Add checks every field and keeps names (case ignored)
// and keys unique, naming the peer that has them; Remove takes a name in
// any case and suggests the name meant for a typo.
func TestAddRemove(t *testing.T) {
	l := &List{}
	a, b := mustKey(t, keyA), mustKey(t, keyB)
	if err := l.Add(Peer{"mediapc", a, "mediapc.lan:7575"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    Peer
		want string
	}{
		{Peer{"MediaPC", b, ""}, `a peer named "mediapc" already exists, with key ` + keyA},
		{Peer{"desk", a, ""}, `key ` + keyA + ` is peer "mediapc"'s already`},
		{Peer{"", b, ""}, "empty peer name"},
		{Peer{"a b", b, ""}, `peer name "a b": a peer's name is`},
		{Peer{"desk", [identity.KeyLen]byte{}, ""}, "low-order point"},
		{Peer{"desk", b, "desk:0"}, `address "desk:0": port "0"`},
	} {
		if err := l.Add(tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Add(%+v) = %v, want %q", tt.p, err, tt.want)
		}
	}
	if l.Len() != 1 {
		t.Fatalf("refused peers were added: %+v", l.Peers())
	}
	if err := l.Add(Peer{"desk", b, ""}); err != nil {
		t.Fatal(err)
	}
	if p, ok := l.ByName("DESK"); !ok || p.Key != b {
		t.Errorf("ByName(DESK) = %+v, %v", p, ok)
	}
	if p, ok := l.ByKey(a); !ok || p.Name != "mediapc" {
		t.Errorf("ByKey(a) = %+v, %v", p, ok)
	}
	for name, want := range map[string]string{
		"medipc":  `no peer named "medipc" (did you mean "mediapc"?)`,
		"DSK":     `no peer named "DSK" (did you mean "desk"?)`,
		"laptop0": `no peer named "laptop0"; the peers are mediapc, desk`,
	} {
		if err := l.Remove(name); err == nil || err.Error() != want {
			t.Errorf("Remove(%s) = %v, want %s", name, err, want)
		}
	}
	if err := l.Remove("MEDIAPC"); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ByKey(a); ok || l.Len() != 1 {
		t.Errorf("after Remove: %+v", l.Peers())
	}
	if err := l.Remove("desk"); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove("desk"); err == nil || err.Error() != `no peer named "desk": there are no peers` {
		t.Errorf("Remove from an empty list = %v", err)
	}
}

// TestCheckAddr: HOST[:PORT] with a name or an IP (IPv6 bare or in
// brackets) and a port from 1 to 65535; nothing is resolved.
func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"mediapc", "mediapc.lan:7575", "192.168.1.7", "192.168.1.7:1", "::1", "[::1]", "[fd00::7]:65535", "fe80::1%eth0", "my_host.local:9"} {
		if err := CheckAddr(ok); err != nil {
			t.Errorf("CheckAddr(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ":7575", "host:", "host:0", "host:65536", "host:+1", "host:http", "[::1", "a b", "host/x", "-host"} {
		if err := CheckAddr(bad); err == nil || !strings.Contains(err.Error(), "HOST[:PORT]") {
			t.Errorf("CheckAddr(%q) = %v, want an error saying the shape", bad, err)
		}
	}
}

// TestSaveLoadRoundTrip: what Save writes Load reads back the same; a new
// file has mode 0600, a replaced one keeps its mode; a missing file is an
// empty list; a missing directory is made (0700); nothing is left beside
// the file.
func TestSaveLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keyrelay") // not there yet: Save makes it
	path := filepath.Join(dir, "peers.toml")
	l, err := Load(path)
	if err != nil || l.Len() != 0 {
		t.Fatalf("Load of a missing file = %v, %v; want an empty list", l, err)
	}
	for _, p := range []Peer{{"mediapc", mustKey(t, keyA), "mediapc.lan:7575"}, {"desk.home", mustKey(t, keyB), ""}} {
		if err := l.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Save(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("new peers file has mode %#o, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("new directory has mode %#o, want 0700", st.Mode().Perm())
	}
	back, err := Load(path)
	if err != nil || len(back.Peers()) != 2 || back.Peers()[0] != l.Peers()[0] || back.Peers()[1] != l.Peers()[1] {
		t.Fatalf("Load after Save = %+v, %v; want %+v", back, err, l.Peers())
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), header) {
		t.Errorf("saved file lacks the header:\n%s", b)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := back.Remove("desk.home"); err != nil {
		t.Fatal(err)
	}
	if err := back.Save(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("replaced peers file has mode %#o, want its 0644 kept", st.Mode().Perm())
	}
	if again, err := Load(path); err != nil || again.Len() != 1 {
		t.Errorf("after Remove and Save: %+v, %v", again, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind in %s: %v", dir, entries)
	}
}

// TestSaveThroughSymlink: a peers file that is a link (to a shared copy)
// stays one: the file it points to is replaced.
func TestSaveThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.toml"), filepath.Join(dir, "peers.toml")
	if err := os.WriteFile(real, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.toml", link); err != nil {
		t.Fatal(err)
	}
	l := &List{}
	if err := l.Add(Peer{"a", mustKey(t, keyA), ""}); err != nil {
		t.Fatal(err)
	}
	if err := l.Save(link); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is no longer a link: %v %v", link, st, err)
	}
	if got, err := Load(real); err != nil || got.Len() != 1 {
		t.Errorf("the link's target holds %+v, %v; want the saved peer", got, err)
	}
}

// TestLoadRefusesWritableByOthers: whoever can write the peers file can
// pair a machine that types here, so a file writable by group or others is
// refused, with the chmod that fixes it; readable by others is fine (it
// holds public keys).
func TestLoadRefusesWritableByOthers(t *testing.T) {
	for _, tt := range []struct {
		perm fs.FileMode
		want string
	}{
		{0o600, ""},
		{0o644, ""},
		{0o664, "has mode 0664: other users can write it (chmod 644 PATH)"},
		{0o602, "has mode 0602: other users can write it (chmod 600 PATH)"},
		{0o666, "has mode 0666: other users can write it (chmod 644 PATH)"},
	} {
		path := filepath.Join(t.TempDir(), "peers.toml")
		if err := os.WriteFile(path, []byte(header), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tt.perm); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		want := strings.ReplaceAll(tt.want, "PATH", path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("mode %#o: %v", tt.perm, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "peers file "+path+" "+want) || !errors.Is(err, secret.ErrUnprotected)):
			t.Errorf("mode %#o: Load = %v\nwant peers file %s %s", tt.perm, err, path, want)
		}
	}
}

// TestLoadRefusesWhatIsNotAPeersFile: a directory is named as one, not
// read as an empty list.
func TestLoadRefusesWhatIsNotAPeersFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNotPeersFile) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Load(a directory) = %v", err)
	}
}

// FuzzLoadPeers: no content panics Parse; what it accepts holds valid,
// unique peers and survives Encode and Parse unchanged.
func FuzzLoadPeers(f *testing.F) {
	f.Add([]byte(header + "\n[[peer]]\nname = \"mediapc\"\nkey = \"" + keyA + "\"\naddr = \"mediapc.lan:7575\"\n"))
	f.Add([]byte("[[peer]]\nname = 'a'\nkey = '" + keyA + "'\n[[peer]]\nname = 'A'\nkey = '" + keyB + "'\n"))
	f.Add([]byte("peer = [{name = \"a\", key = \"" + keyB + "\", addr = \"[::1]:9\"}]\n"))
	f.Add([]byte("[peer]\nname = 1\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Parse("p.toml", b)
		if err != nil {
			return
		}
		check := &List{}
		for _, p := range l.Peers() {
			if err := check.Add(p); err != nil {
				t.Fatalf("Parse accepted a peer Add refuses: %v", err)
			}
		}
		back, err := Parse("p.toml", l.Encode())
		if err != nil {
			t.Fatalf("Parse of Encode's output: %v\n%s", err, l.Encode())
		}
		if len(back.Peers()) != l.Len() {
			t.Fatalf("round trip: %d peers, want %d", back.Len(), l.Len())
		}
		for i, p := range back.Peers() {
			if p != l.Peers()[i] {
				t.Fatalf("round trip: peer %d is %+v, want %+v", i, p, l.Peers()[i])
			}
		}
	})
}
