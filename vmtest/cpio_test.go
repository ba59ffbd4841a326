//go:build vmtest

package vmtest

import (
	"fmt"
	"io"
	"io/fs"
)

// cpioWriter writes the "newc" cpio format, the one the kernel unpacks as
// an initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
// Written here rather than by the cpio tool so that the image holds exactly
// the files listed, with no staging directory and one tool fewer to
// install.
type cpioWriter struct {
	w   io.Writer
	n   int64 // bytes written, for the 4-byte alignment
	ino int
	err error
}

// cpio mode bits (the kernel's S_IF*).
const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioChar = 0o020000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// entry writes one member; rdev is major, minor for a device node.
func (c *cpioWriter) entry(name string, mode fs.FileMode, kind int, data []byte, rdev ...int) {
	c.ino++
	major, minor := 0, 0
	if len(rdev) == 2 {
		major, minor = rdev[0], rdev[1]
	}
	nlink := 1
	if kind == cpioDir {
		nlink = 2
	}
	c.write(fmt.Appendf(nil, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, kind|int(mode.Perm()), 0, 0, nlink, 0, len(data), 0, 0, major, minor, len(name)+1, 0))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}

func (c *cpioWriter) dir(name string) { c.entry(name, 0o755, cpioDir, nil) }

func (c *cpioWriter) file(name string, mode fs.FileMode, data []byte) {
	c.entry(name, mode, cpioFile, data)
}

// close writes the trailer.
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, 0, nil)
	return c.err
}
