package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
)

// TestPeersWatchFollowsThePeersFile (PROTOCOL.md §8.1): recv reads its
// peers file again when it changes, so a machine added while it runs is
// accepted and one removed is refused; a file that stops loading accepts
// nobody (not the list before it), said as an error even with --quiet,
// until it loads again.
func TestPeersWatchFollowsThePeersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peers.toml")
	a, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var logged, errs []string
	w, err := NewWatch(path, func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) },
		func(f string, args ...any) { errs = append(errs, fmt.Sprintf(f, args...)) })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, ok := w.Lookup(a.Public()); ok {
		t.Fatal("an empty peers file accepts a machine")
	}
	if w.Recheck(now) {
		t.Error("an unchanged file was taken for changed")
	}

	one := &List{}
	if err := one.Add(Peer{Name: "keyboard", Key: a.Public()}); err != nil {
		t.Fatal(err)
	}
	if err := one.Save(path); err != nil {
		t.Fatal(err)
	}
	if !w.Recheck(now) {
		t.Error("peers add: the change was not seen")
	}
	if name, ok := w.Lookup(a.Public()); !ok || name != "keyboard" {
		t.Errorf("after peers add: %q, %v; want keyboard accepted", name, ok)
	}

	// A second save of the same size within the file system's clock
	// tick: the rename makes it another inode.
	b, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	other := &List{}
	if err := other.Add(Peer{Name: "keyboarx", Key: b.Public()}); err != nil {
		t.Fatal(err)
	}
	if err := other.Save(path); err != nil {
		t.Fatal(err)
	}
	if !w.Recheck(now) {
		t.Error("a file of the same size saved again at once: the change was not seen")
	}
	if _, ok := w.Lookup(a.Public()); ok {
		t.Error("a machine replaced by another in the file is still accepted")
	}

	if err := one.Save(path); err != nil {
		t.Fatal(err)
	}
	w.Recheck(now)
	if err := os.WriteFile(path, []byte("[[peer]]\nname = 'x'\nkey = 'not a key'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !w.Recheck(now) {
		t.Error("a broken file was not taken for a change")
	}
	if _, ok := w.Lookup(a.Public()); ok {
		t.Error("a peers file that no longer loads still accepts the machines it listed")
	}
	if len(errs) == 0 || !strings.Contains(errs[0], "does not load") || !strings.Contains(errs[0], "no paired machine is accepted") {
		t.Errorf("no error said for the broken file: %q", errs)
	}
	w.Lookup(a.Public())
	if len(errs) != 1 {
		t.Errorf("the refusal was said again within a minute: %q", errs)
	}
	w.said = now.Add(-2 * time.Minute)
	w.Lookup(a.Public())
	if len(errs) != 2 || !strings.Contains(errs[1], identity.Fingerprint(a.Public())) {
		t.Errorf("a minute on, a refused machine is not named: %q", errs)
	}

	if err := one.Save(path); err != nil {
		t.Fatal(err)
	}
	if !w.Recheck(now) {
		t.Error("the repaired file was not seen")
	}
	if _, ok := w.Lookup(a.Public()); !ok {
		t.Error("the repaired file does not accept its machine")
	}
	if last := errs[len(errs)-1]; !strings.Contains(last, "loads again") {
		t.Errorf("the repair is not said: %q", errs)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !w.Recheck(now) {
		t.Error("a removed file was not seen")
	}
	if _, ok := w.Lookup(a.Public()); ok {
		t.Error("after the file was removed the machine is still accepted")
	}
}
