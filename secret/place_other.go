//go:build !unix && !windows

package secret

import (
	"fmt"
	"io/fs"
	"os"
)

// Here (Plan 9, WebAssembly) a file's permission bits are what there is:
// CheckMode reads them; who owns the directories above is not known, so
// CheckPlace checks nothing.

func checkMode(name, path string, perm, mask fs.FileMode) error {
	return modeError(name, path, perm, mask)
}

func checkPlace(name, path string) error { return nil }

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }

func createPrivate(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

// CheckPrivateDir checks that no one but this user can open dir (perm
// its permission bits), the control sockets' directory: mode 0700.
func CheckPrivateDir(dir string, perm fs.FileMode) error {
	if perm != 0o700 {
		return fmt.Errorf("%s has mode %04o: others could reach the control socket; chmod 700 %s", dir, perm, dir)
	}
	return nil
}
