// Package udpsock opens keyrelay's UDP sockets: net.ListenPacket's, except
// on Windows, where the socket is made and read through Winsock directly
// (golang.org/x/sys/windows; udpsock_windows.go).
//
// Go's net package sets SIO_UDP_NETRESET on every Windows UDP socket and
// fails when that ioctl does, as it does under Wine 8 ("wsaioctl: winapi
// error #10045"), so a keyrelay.exe could not open a socket there, and its
// network side could not be tested. The sockets made here set the same
// options Go's do (SIO_UDP_CONNRESET and SIO_UDP_NETRESET off, a
// dual-stack IPv6 socket for a wildcard "udp" address, SO_BROADCAST on
// IPv4), and a system that lacks SIO_UDP_NETRESET, Wine, has its reads skip
// the WSAENETRESET it would have turned off. One code path, the one Wine
// runs, on real Windows too.
package udpsock

import (
	"net"
	"net/netip"
)

// Listen is net.ListenPacket for "udp", "udp4" and "udp6" networks: the
// same addresses, the same kind of socket, the same errors (wrapped in a
// *net.OpError); on Windows the socket is this package's.
func Listen(network, address string) (net.PacketConn, error) {
	return listen(network, address)
}

// AddrPortReader is what a socket from Listen reads without an address
// allocated per datagram: *net.UDPConn's method, and Windows' socket's.
type AddrPortReader interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
}
