//go:build unix

package cmd

import (
	"fmt"
	"io/fs"
	"syscall"
)

// ownerOf is the user id owning a file.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// processGone reports whether no process has the id pid (a signal 0 to
// it finds none); one of another user's is not gone.
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// fileID is a file's device and inode, for fileStamp.
func fileID(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
