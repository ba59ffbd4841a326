//go:build unix

package peers

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID is a file's device and inode, for fileStamp.
func fileID(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
