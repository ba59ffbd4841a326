//go:build !linux

package transport

import "net"

// rawWriter is Linux's (sendto_linux.go); elsewhere WriteTo is used.
type rawWriter struct{}

func newRawWriter(net.PacketConn) *rawWriter { return nil }

func (*rawWriter) writeTo([]byte, *net.UDPAddr, bool) (int, bool, error) { return 0, false, nil }

func isV6(net.PacketConn) bool { return false }
