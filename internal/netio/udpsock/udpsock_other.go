//go:build !windows

package udpsock

import "net"

func listen(network, address string) (net.PacketConn, error) {
	return net.ListenPacket(network, address)
}
