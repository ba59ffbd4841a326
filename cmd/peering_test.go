package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/peers"
)

// TestPeerNamerFollowsThePeersFile (PROTOCOL.md §8.1): recv reads its peers
// file again when it changes, so a machine added while it runs is accepted
// and one removed is refused; a file that stops loading keeps the old list.
func TestPeerNamerFollowsThePeersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peers.toml")
	a, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	list, err := peers.Load(path) // missing: empty
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	w := newPeersWatch(path, list, func(f string, args ...any) { logged = append(logged, f) })
	lookup := w.lookup
	if _, ok := lookup(a.Public()); ok {
		t.Fatal("an empty peers file accepts a machine")
	}
	// peerNamer checks the file at most once a second: age its last check
	// instead of waiting.
	age := func() { w.checked = time.Now().Add(-2 * time.Second) }

	added := &peers.List{}
	if err := added.Add(peers.Peer{Name: "keyboard", Key: a.Public()}); err != nil {
		t.Fatal(err)
	}
	if err := added.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := lookup(a.Public()); ok {
		t.Error("the file was read again within a second of the last check")
	}
	age()
	if name, ok := lookup(a.Public()); !ok || name != "keyboard" {
		t.Errorf("after peers add: %q, %v; want keyboard accepted", name, ok)
	}

	if err := os.WriteFile(path, []byte("[[peer]]\nname = 'x'\nkey = 'not a key'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	age()
	if _, ok := lookup(a.Public()); !ok {
		t.Error("a peers file that no longer loads dropped the machines it listed")
	}
	if len(logged) == 0 || !strings.Contains(logged[len(logged)-1], "does not load") {
		t.Errorf("no word of the broken file: %q", logged)
	}

	if err := (&peers.List{}).Save(path); err != nil {
		t.Fatal(err)
	}
	age()
	if _, ok := lookup(a.Public()); ok {
		t.Error("after peers remove the machine is still accepted")
	}
}
