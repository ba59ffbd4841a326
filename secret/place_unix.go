//go:build unix

package secret

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

func checkMode(name, path string, perm, mask fs.FileMode) error {
	return modeError(name, path, perm, mask)
}

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

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }

// createPrivate creates the file name, which must not exist, with mode
// 0600 (less what the umask takes: callers that need it exact chmod it).
func createPrivate(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}
