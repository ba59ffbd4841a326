//go:build !linux

package inject

import (
	"io"
	"net"
)

// newRawStream is Linux's (x11_write_linux.go); elsewhere the connection's
// own Write is used.
func newRawStream(net.Conn) io.Writer { return nil }
