// Package transport is keyrelay's UDP plumbing below the protocol: a
// receiver's address (HOST[:PORT], resolved), whether an address reaches
// many receivers (broadcast, multicast), and the sockets a sender sends
// from and reads acks on, one IPv4 and one IPv6. It knows nothing of
// packets; cmd wires it to the sender and words its errors for people.
package transport

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
)

// ErrPortZero is Resolve's error for an address with port 0, which no
// receiver listens on.
var ErrPortZero = errors.New("port 0 is not a receiver's port")

// WithDefaultPort adds port to an address without one, a bare IPv6
// address included (::1 and [::1] are both [::1]:port).
func WithDefaultPort(addr, port string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	return net.JoinHostPort(host, port)
}

// Resolve resolves a receiver's address HOST[:PORT] (a host name, an IPv4
// address or an IPv6 one, bracketed or bare), with defaultPort where it
// gives none.
func Resolve(addr, defaultPort string) (*net.UDPAddr, error) {
	ua, err := net.ResolveUDPAddr("udp", WithDefaultPort(addr, defaultPort))
	if err != nil {
		return nil, err
	}
	if ua.Port == 0 {
		return nil, ErrPortZero
	}
	return ua, nil
}

// IsBroadcast reports whether ip reaches many receivers: the limited
// broadcast, a multicast group, or the directed broadcast of one of this
// machine's IPv4 networks. It lists the interfaces each time: call it
// once per destination, not per packet.
func IsBroadcast(ip net.IP) bool {
	if ip.Equal(net.IPv4bcast) || ip.IsMulticast() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	return isDirectedBroadcast(ip, addrs)
}

// isDirectedBroadcast reports whether ip is the broadcast address of one of
// the IPv4 networks in addrs. /31 and /32 networks have none (RFC 3021): the
// all-ones address there is a host.
func isDirectedBroadcast(ip net.IP, addrs []net.Addr) bool {
	ip4 := ip.To4()
	if ip4 == nil {
		return false
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil || len(n.Mask) != net.IPv4len {
			continue
		}
		bc := make(net.IP, net.IPv4len)
		for i := range bc {
			bc[i] = n.IP.To4()[i] | ^n.Mask[i]
		}
		if ones, _ := n.Mask.Size(); ones < 31 && bc.Equal(ip4) {
			return true
		}
	}
	return false
}

// Conn sends IPv4 destinations from an IPv4 socket and IPv6 ones from an
// IPv6 socket: IPv4 broadcast does not work through an IPv6 socket's mapped
// addresses. Go sets SO_BROADCAST on UDP sockets, so broadcast addresses
// work. Its sockets also receive the receivers' acks (Sockets). WriteTo is
// safe for concurrent use, as a net.PacketConn's is.
type Conn struct {
	v4, v6     net.PacketConn
	raw4, raw6 *rawWriter // nil: plain WriteTo (sendto_linux.go says why)
}

// Open opens the sockets that dests (*net.UDPAddr, as Resolve gives) need:
// one IPv4 socket if any is IPv4, one IPv6 socket if any is IPv6, each on
// an ephemeral port of every address.
func Open(dests []net.Addr) (*Conn, error) {
	c := &Conn{}
	for _, d := range dests {
		ip := d.(*net.UDPAddr).IP
		var err error
		switch {
		case ip.To4() != nil && c.v4 == nil:
			c.v4, err = udpsock.Listen("udp4", ":0")
		case ip.To4() == nil && c.v6 == nil:
			c.v6, err = udpsock.Listen("udp6", "[::]:0")
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("unable to open a UDP socket for %v: %w", d, err)
		}
	}
	if c.v4 != nil {
		c.raw4 = newRawWriter(c.v4)
	}
	if c.v6 != nil {
		c.raw6 = newRawWriter(c.v6)
	}
	return c, nil
}

// WriteTo sends b to addr from the socket of addr's family.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, _ := addr.(*net.UDPAddr)
	pc, raw, v6 := c.v4, c.raw4, false
	if ua != nil && ua.IP.To4() == nil {
		pc, raw, v6 = c.v6, c.raw6, true
	}
	if raw != nil && ua != nil {
		if n, ok, err := raw.writeTo(b, ua, v6); ok {
			return n, err
		}
	}
	return pc.WriteTo(b, addr)
}

// Sockets are the open sockets, which also receive the receivers' acks.
func (c *Conn) Sockets() []net.PacketConn {
	var out []net.PacketConn
	for _, pc := range []net.PacketConn{c.v4, c.v6} {
		if pc != nil {
			out = append(out, pc)
		}
	}
	return out
}

// Close closes the sockets.
func (c *Conn) Close() error {
	var errs []error
	for _, pc := range c.Sockets() {
		errs = append(errs, pc.Close())
	}
	return errors.Join(errs...)
}

// Writer sends datagrams from one socket, a receiver's (its acks and
// handshake answers): with a raw sendto(2) where it can, for the reason
// sendto_linux.go gives, else with the socket's WriteTo. It is safe for
// concurrent use, as a net.PacketConn is.
type Writer struct {
	pc  net.PacketConn
	raw *rawWriter // nil: plain WriteTo
	v6  bool       // pc is an IPv6 socket: IPv4 sources are IPv4-mapped
}

// NewWriter makes a Writer of pc.
func NewWriter(pc net.PacketConn) *Writer {
	return &Writer{pc: pc, raw: newRawWriter(pc), v6: isV6(pc)}
}

// WriteTo sends b to addr.
func (w *Writer) WriteTo(b []byte, addr net.Addr) (int, error) {
	if ua, ok := addr.(*net.UDPAddr); ok && w.raw != nil {
		if n, ok, err := w.raw.writeTo(b, ua, w.v6); ok {
			return n, err
		}
	}
	return w.pc.WriteTo(b, addr)
}
