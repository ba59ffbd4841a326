//go:build !unix

package control

import (
	"io/fs"

	"github.com/keyrelay/keyrelay/secret"
)

// checkPrivateDir checks that dir (fi, a directory) is this user's and
// that nobody else can open it (secret.CheckPrivateDir): on Windows by
// its owner and ACL, which a mode does not show (Go reports 0777 for any
// directory there).
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	return secret.CheckPrivateDir(dir, fi.Mode().Perm())
}

// processGone reports whether no process has the id pid: never known
// here, so no socket is taken for dead.
func processGone(int) bool { return false }
