//go:build !linux

package dgram

import "net"

// rawReader is Linux's (recvfrom_linux.go); elsewhere the UDPConn's own
// reads are used.
type rawReader struct{}

type sourceKey struct{}

func newRawReader(net.PacketConn) *rawReader { return nil }

func (*rawReader) readFrom([]byte) (int, sourceKey, error) { panic("dgram: no raw reader here") }

func (sourceKey) udpAddr() *net.UDPAddr { panic("dgram: no raw reader here") }
