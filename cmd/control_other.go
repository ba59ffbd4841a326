//go:build !unix

package cmd

import (
	"fmt"
	"io/fs"
)

// checkPrivateDir checks that dir (fi, a directory) is this user's and
// that nobody else can open it. Here its access list, not a mode, says
// that; the ACL check belongs in this function, and until it is written
// the mode is checked as on Unix (which Windows reports as 0777 for any
// writable directory, so the control socket is not used there).
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("%s has mode %04o: others could reach the control socket; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// processGone reports whether no process has the id pid: never known
// here, so no socket is taken for dead.
func processGone(int) bool { return false }

// fileID is a file's identity for fileStamp: none here (its size,
// modification time and mode tell a change).
func fileID(fs.FileInfo) string { return "" }
