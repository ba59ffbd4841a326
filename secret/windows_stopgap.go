package secret

import "io/fs"

// windowsModeStopgap is CheckMode on Windows until the file's ACL is
// checked there, and it checks nothing: it accepts the file. Go reports
// the mode of every writable file on Windows as 0666 (a read-only one as
// 0444), whatever its ACL grants, so the Unix bits say nothing of who else
// may open it, and the Unix check refused every file keyrelay.exe wrote,
// its own identity included. Who else may read the identity, key and peers
// files is not checked on Windows.
func windowsModeStopgap(name, path string, perm fs.FileMode) error {
	return nil
}
