package capture

import "golang.org/x/sys/unix"

// eraseIsBS reports whether the terminal's erase character (stty erase) is
// BS (0x08): then the terminal's Backspace key sends BS, which the decoder
// would read as Ctrl+H.
func eraseIsBS(fd int) bool {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil && t.Cc[unix.VERASE] == 0x08
}
