//go:build unix

package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPlaceRefusesWhatOthersCanReplace (PROTOCOL.md §8.1, as ssh's
// StrictModes): a file is refused when a directory above it can be
// written by group or others (not sticky), or belongs to another user, or
// the file itself can be written by others, whether the path is given
// straight or through a link; a private directory, or a sticky one such
// as /tmp above it, is fine, and so is a file not made yet in a private
// directory.
func TestCheckPlaceRefusesWhatOthersCanReplace(t *testing.T) {
	mk := func(t *testing.T, dir string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	file := func(t *testing.T, path string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		path func(t *testing.T, base string) string
		bad  string // "" if accepted, else the directory (or file) the error names
	}{
		{"private directory", func(t *testing.T, b string) string { return file(t, filepath.Join(mk(t, b+"/cfg", 0o700), "f")) }, ""},
		{"not made yet", func(t *testing.T, b string) string { return filepath.Join(mk(t, b+"/cfg", 0o700), "f") }, ""},
		{"directory 0777", func(t *testing.T, b string) string { return file(t, filepath.Join(mk(t, b+"/cfg", 0o777), "f")) }, "/cfg"},
		{"directory 0770", func(t *testing.T, b string) string { return file(t, filepath.Join(mk(t, b+"/cfg", 0o770), "f")) }, "/cfg"},
		{"missing file in a directory 0777", func(t *testing.T, b string) string { return filepath.Join(mk(t, b+"/cfg", 0o777), "f") }, "/cfg"},
		{"sticky directory 1777", func(t *testing.T, b string) string {
			return file(t, filepath.Join(mk(t, b+"/tmp", 0o777|os.ModeSticky), "f"))
		}, ""},
		{"parent 0777 above a private directory", func(t *testing.T, b string) string {
			mk(t, b+"/home", 0o777)
			return file(t, filepath.Join(mk(t, b+"/home/cfg", 0o700), "f"))
		}, "/home"},
		{"link from a private directory into a directory 0777", func(t *testing.T, b string) string {
			target := file(t, filepath.Join(mk(t, b+"/shared", 0o777), "f"))
			link := filepath.Join(mk(t, b+"/cfg", 0o700), "f")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "/shared"},
		{"file 0666", func(t *testing.T, b string) string {
			f := file(t, filepath.Join(mk(t, b+"/cfg", 0o700), "f"))
			os.Chmod(f, 0o666)
			return f
		}, "/cfg/f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			path := tc.path(t, base)
			err := CheckPlace("peers file", path)
			if tc.bad == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrUnprotected) || !strings.Contains(err.Error(), base+tc.bad) || !strings.Contains(err.Error(), "peers file") {
				t.Errorf("CheckPlace(%s) = %v; want ErrUnprotected naming %s", path, err, base+tc.bad)
			}
			if err != nil && tc.bad != "/cfg/f" && !strings.Contains(err.Error(), "chmod go-w "+base+tc.bad) {
				t.Errorf("no fix named: %v", err)
			}
		})
	}
}

// TestCheckPlaceRefusesAnotherUsersDirectory: a directory above the file
// that belongs to another user (who can chmod it, or replace the file
// whatever its mode) is refused. Needs root, to give it away.
func TestCheckPlaceRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory of another user's")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "cfg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Skipf("cannot give the directory away: %v", err)
	}
	path := filepath.Join(dir, "identity")
	if err := CheckPlace("identity file", path); err == nil || !strings.Contains(err.Error(), "belongs to another user (uid 65534)") {
		t.Errorf("a directory of uid 65534's: %v", err)
	}
}
