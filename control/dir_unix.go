//go:build unix

package control

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkPrivateDir checks that dir (fi, a directory) is this user's and
// that nobody else can open it: its owner and mode 0700.
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to another user (uid %d), who could answer for your sends there: the control socket must be in a directory of yours; set XDG_RUNTIME_DIR to one (or remove it, as root)", dir, st.Uid)
	}
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("%s has mode %04o: others could reach the control socket; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// processGone reports whether no process has the id pid (a signal 0 to
// it finds none); one of another user's is not gone.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
