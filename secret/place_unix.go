//go:build unix

package secret

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

func checkPlace(name, path string) error {
	euid := os.Geteuid()
	trusted := func(fi fs.FileInfo) (uint32, bool) {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return 0, true
		}
		return st.Uid, int(st.Uid) == euid || st.Uid == 0
	}
	if fi, err := os.Stat(path); err == nil {
		if uid, ok := trusted(fi); !ok {
			return unprotectedError(fmt.Sprintf("%s %s belongs to another user (uid %d), who can change it: use a file of your own", name, path, uid))
		}
		if err := CheckMode(name, path, fi.Mode().Perm(), 0o022); err != nil {
			return err
		}
	}
	for _, d := range dirsAbove(path) {
		fi, err := os.Stat(d)
		if err != nil {
			continue
		}
		uid, ok := trusted(fi)
		perm := fi.Mode().Perm()
		switch {
		case !ok:
			return unprotectedError(fmt.Sprintf("directory %s, above the %s %s, belongs to another user (uid %d), who can replace the file: keep it in a directory of your own", d, name, path, uid))
		case perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
			return unprotectedError(fmt.Sprintf("directory %s, above the %s %s, has mode %#o: other users can replace the file in it (chmod go-w %s)", d, name, path, perm, d))
		}
	}
	return nil
}

// dirsAbove lists the directories above path, up to the root: those of
// the path as given (made absolute) and, if links lead elsewhere, those
// of the path they lead to.
func dirsAbove(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	var out []string
	add := func(p string) {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			out = append(out, d)
			if filepath.Dir(d) == d {
				return
			}
		}
	}
	add(abs)
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		add(real)
	}
	return out
}
