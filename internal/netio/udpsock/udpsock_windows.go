//go:build windows

package udpsock

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// maxDatagram is the largest UDP payload: the socket's own read buffer is
// this long, so that a datagram is cut only to the caller's buffer.
const maxDatagram = 65536

var startup = sync.OnceValue(func() error {
	var d windows.WSAData
	return windows.WSAStartup(0x202, &d)
})

func listen(network, address string) (net.PacketConn, error) {
	opErr := func(op string, addr net.Addr, err error) error {
		return &net.OpError{Op: "listen", Net: network, Addr: addr, Err: os.NewSyscallError(op, err)}
	}
	ua, err := net.ResolveUDPAddr(network, address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	if err := startup(); err != nil {
		return nil, opErr("wsastartup", ua, err)
	}
	family, v6only := addrFamily(network, ua.IP)
	s, err := socket(family)
	if err != nil && family == windows.AF_INET6 && !v6only && errors.Is(err, windows.WSAEAFNOSUPPORT) {
		// No IPv6 here: a wildcard "udp" address is IPv4's alone, as
		// Go's net has it on such a system.
		family = windows.AF_INET
		s, err = socket(family)
	}
	if err != nil {
		return nil, opErr("socket", ua, err)
	}
	c := &conn{s: s, family: family}
	if err := c.setup(v6only); err != nil {
		windows.Closesocket(s)
		return nil, opErr("setsockopt", ua, err)
	}
	if err := windows.Bind(s, bindAddr(family, ua)); err != nil {
		windows.Closesocket(s)
		return nil, opErr("bind", ua, addrInUse(err))
	}
	if local, err := windows.Getsockname(s); err == nil {
		c.laddr = udpAddr(local)
	}
	if c.ev, err = windows.CreateEvent(nil, 0, 0, nil); err == nil {
		c.wake, err = windows.CreateEvent(nil, 0, 0, nil)
	}
	if err != nil {
		c.closeHandles()
		return nil, opErr("createevent", ua, err)
	}
	c.buf = make([]byte, maxDatagram)
	return c, nil
}

// socket makes an overlapped UDP socket (reads wait on an event, Close and
// deadlines can end them) that child processes do not inherit.
func socket(family int) (windows.Handle, error) {
	return windows.WSASocket(int32(family), windows.SOCK_DGRAM, windows.IPPROTO_UDP, nil, 0,
		windows.WSA_FLAG_OVERLAPPED|windows.WSA_FLAG_NO_HANDLE_INHERIT)
}

// addrFamily is the socket family for listening on ip, as Go's net chooses
// it (favoriteAddrFamily): udp4 IPv4, udp6 IPv6 only, and for "udp" a
// wildcard address (none, 0.0.0.0 or ::) a dual-stack IPv6 socket, which
// receives IPv4 datagrams too, else the address's own family.
func addrFamily(network string, ip net.IP) (family int, v6only bool) {
	switch network[len(network)-1] {
	case '4':
		return windows.AF_INET, false
	case '6':
		return windows.AF_INET6, true
	}
	if ip == nil || ip.IsUnspecified() || ip.To4() == nil {
		return windows.AF_INET6, false
	}
	return windows.AF_INET, false
}

// setup sets the socket options Go's net sets on a UDP socket: IPV6_V6ONLY
// as asked, SO_BROADCAST on IPv4 (send reaches broadcast addresses), and
// no reporting of ICMP port or network unreachable messages as errors of a
// later read (SIO_UDP_CONNRESET, SIO_UDP_NETRESET): a sender keeps reading
// acks while a receiver is down. Wine 8 lacks SIO_UDP_NETRESET
// (WSAEOPNOTSUPP); reads skip WSAENETRESET there instead.
func (c *conn) setup(v6only bool) error {
	if c.family == windows.AF_INET6 {
		v := 0
		if v6only {
			v = 1
		}
		if err := windows.SetsockoptInt(c.s, windows.IPPROTO_IPV6, windows.IPV6_V6ONLY, v); err != nil {
			return err
		}
	} else if err := windows.SetsockoptInt(c.s, windows.SOL_SOCKET, windows.SO_BROADCAST, 1); err != nil {
		return err
	}
	if err := c.ioctlOff(windows.SIO_UDP_CONNRESET); err != nil {
		return fmt.Errorf("SIO_UDP_CONNRESET: %w", err)
	}
	if err := c.ioctlOff(windows.SIO_UDP_NETRESET); err != nil && !errors.Is(err, windows.WSAEOPNOTSUPP) {
		return fmt.Errorf("SIO_UDP_NETRESET: %w", err)
	}
	return nil
}

func (c *conn) ioctlOff(code uint32) error {
	var flag, ret uint32
	return windows.WSAIoctl(c.s, code, (*byte)(unsafe.Pointer(&flag)), uint32(unsafe.Sizeof(flag)), nil, 0, &ret, nil, 0)
}

// conn is a Winsock UDP socket as a net.PacketConn. Reads are overlapped
// and wait on the read's event and on wake, which Close and
// SetReadDeadline set, so that both end a waiting read as they do a
// net.UDPConn's. Its methods are safe for concurrent use, as a
// net.PacketConn's are; reads are served one at a time.
type conn struct {
	s      windows.Handle
	family int
	laddr  *net.UDPAddr

	closing  atomic.Bool
	live     sync.RWMutex // read-held while s is used; Close holds it to close s
	wake     windows.Handle
	deadline atomic.Int64 // the read deadline in Unix nanoseconds; 0: none

	// The read in flight, owned by the reader holding rmu. The system
	// writes into buf, from and flen until the read completes: they live
	// in this heap object, never on a goroutine's stack, which moves.
	rmu     sync.Mutex
	ov      windows.Overlapped
	ev      windows.Handle // ov's event
	wsabuf  windows.WSABuf
	buf     []byte
	from    windows.RawSockaddrAny
	flen    int32
	handles [2]windows.Handle
}

// errWoken ends one overlapped read that wake cancelled: the reader looks
// at why (closed, a deadline) and reads again if neither holds.
var errWoken = errors.New("read cancelled")

// ReadFrom reads one datagram into b; one longer than b is cut to b's
// length, as on Linux.
func (c *conn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, ap, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(ap), nil
}

// ReadFromUDPAddrPort is ReadFrom with the source as a netip.AddrPort
// (IPv4 sources of a dual-stack socket IPv4-mapped, as net.UDPConn gives
// them), which allocates nothing.
func (c *conn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.live.RLock()
	defer c.live.RUnlock()
	for {
		if c.closing.Load() {
			return 0, netip.AddrPort{}, c.opError("read", net.ErrClosed)
		}
		if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			return 0, netip.AddrPort{}, c.opError("read", os.ErrDeadlineExceeded)
		}
		n, err := c.recv()
		switch {
		case err == nil, errors.Is(err, windows.WSAEMSGSIZE):
			// A datagram longer than 64 KiB cannot be; kept as cut,
			// should one come.
			return copy(b, c.buf[:n]), addrPort(&c.from), nil
		case err == errWoken:
		case errors.Is(err, windows.WSAECONNRESET), errors.Is(err, windows.WSAENETRESET):
			// An ICMP unreachable for an earlier datagram we sent,
			// reported only where the ioctls above are missing:
			// nothing to do with this read.
		default:
			return 0, netip.AddrPort{}, c.opError("read", os.NewSyscallError("wsarecvfrom", err))
		}
	}
}

// recv reads one datagram into c.buf, waiting until one comes, or until
// Close or a passed deadline cancels the read (errWoken).
func (c *conn) recv() (int, error) {
	// The event must not still be set by the last read's completion:
	// a wait would then return before this one completes.
	windows.ResetEvent(c.ev)
	c.ov = windows.Overlapped{HEvent: c.ev}
	c.wsabuf = windows.WSABuf{Len: uint32(len(c.buf)), Buf: &c.buf[0]}
	c.flen = int32(unsafe.Sizeof(c.from))
	var n, flags uint32
	err := windows.WSARecvFrom(c.s, &c.wsabuf, 1, &n, &flags, &c.from, &c.flen, &c.ov, nil)
	if err != nil && !errors.Is(err, windows.ERROR_IO_PENDING) {
		return 0, err
	}
	c.handles = [2]windows.Handle{c.ev, c.wake}
	for err != nil { // pending
		wait := uint32(windows.INFINITE)
		if d := c.deadline.Load(); d != 0 {
			left := time.Duration(d - time.Now().UnixNano())
			wait = uint32(min(max((left+time.Millisecond-1)/time.Millisecond, 0), windows.INFINITE-1))
		}
		ev, werr := windows.WaitForMultipleObjects(c.handles[:], false, wait)
		if werr != nil {
			// Not expected with two live events; cancel the read so
			// that the system stops writing into buf.
			windows.CancelIoEx(c.s, &c.ov)
			windows.WSAGetOverlappedResult(c.s, &c.ov, &n, true, &flags)
			return 0, werr
		}
		if ev == windows.WAIT_OBJECT_0 {
			err = windows.WSAGetOverlappedResult(c.s, &c.ov, &n, false, &flags)
			if errors.Is(err, windows.ERROR_IO_INCOMPLETE) {
				continue // not this read's completion
			}
			return int(n), err
		}
		// Woken, or the wait ran out: go on waiting unless the socket
		// is closing or the deadline has passed.
		if d := c.deadline.Load(); !c.closing.Load() && (d == 0 || time.Now().UnixNano() < d) {
			continue
		}
		windows.CancelIoEx(c.s, &c.ov)
		break
	}
	// The read completed at once, or was cancelled: wait for a cancelled
	// one to end (the system writes no more into buf); a datagram that
	// came before the cancel is kept.
	err = windows.WSAGetOverlappedResult(c.s, &c.ov, &n, true, &flags)
	if errors.Is(err, windows.ERROR_OPERATION_ABORTED) {
		return 0, errWoken
	}
	return int(n), err
}

// WriteTo sends b to addr, a *net.UDPAddr; to an IPv4 address from a
// dual-stack socket as an IPv4-mapped one.
func (c *conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, &net.OpError{Op: "write", Net: "udp", Source: c.laddr, Addr: addr, Err: syscall.EINVAL}
	}
	c.live.RLock()
	defer c.live.RUnlock()
	if c.closing.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	sa, salen, err := sockaddr(c.family, ua.AddrPort())
	if err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Source: c.laddr, Addr: addr, Err: err}
	}
	var sent uint32
	wb := windows.WSABuf{Len: uint32(len(b))}
	if len(b) > 0 {
		wb.Buf = &b[0]
	}
	// Not overlapped: the call returns once the datagram is queued.
	if err := windows.WSASendTo(c.s, &wb, 1, &sent, 0, sa, salen, nil, nil); err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Source: c.laddr, Addr: addr, Err: os.NewSyscallError("wsasendto", err)}
	}
	return int(sent), nil
}

// Close closes the socket; a read waiting on it ends with net.ErrClosed.
func (c *conn) Close() error {
	if !c.closing.CompareAndSwap(false, true) {
		return c.opError("close", net.ErrClosed)
	}
	windows.SetEvent(c.wake)
	c.live.Lock()
	defer c.live.Unlock()
	return c.closeHandles()
}

func (c *conn) closeHandles() error {
	err := windows.Closesocket(c.s)
	for _, h := range []windows.Handle{c.ev, c.wake} {
		if h != 0 {
			windows.CloseHandle(h)
		}
	}
	if err != nil {
		return c.opError("close", os.NewSyscallError("closesocket", err))
	}
	return nil
}

// LocalAddr is the address the socket is bound to.
func (c *conn) LocalAddr() net.Addr { return c.laddr }

// SetDeadline sets the read deadline: a write does not wait (WriteTo).
func (c *conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline makes a waiting and every later read fail with an error
// wrapping os.ErrDeadlineExceeded once t has passed; the zero time: none.
func (c *conn) SetReadDeadline(t time.Time) error {
	// Held so that Close cannot close wake under SetEvent.
	c.live.RLock()
	defer c.live.RUnlock()
	if c.closing.Load() {
		return c.opError("set", net.ErrClosed)
	}
	var d int64
	if !t.IsZero() {
		// A time before 1970 has passed already, as any past one.
		d = max(t.UnixNano(), 1)
	}
	c.deadline.Store(d)
	windows.SetEvent(c.wake)
	return nil
}

// SetWriteDeadline is accepted and has nothing to do: WriteTo returns as
// soon as the system has queued the datagram.
func (c *conn) SetWriteDeadline(time.Time) error {
	if c.closing.Load() {
		return c.opError("set", net.ErrClosed)
	}
	return nil
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: nil, Addr: c.laddr, Err: err}
}

// bindAddr is the address to bind a socket of family to for ua: the
// IPv4 wildcard on an IPv6 socket is the IPv6 one, as Go's net has it.
func bindAddr(family int, ua *net.UDPAddr) windows.Sockaddr {
	ip := ua.AddrPort().Addr().Unmap()
	if family == windows.AF_INET {
		sa := &windows.SockaddrInet4{Port: ua.Port}
		if ip.Is4() {
			sa.Addr = ip.As4()
		}
		return sa
	}
	sa := &windows.SockaddrInet6{Port: ua.Port}
	if ip.IsValid() && !ip.IsUnspecified() {
		sa.Addr = ip.As16()
		sa.ZoneId = zoneID(ua.Zone)
	}
	return sa
}

// sockaddr is ap in the socket family's form, for WSASendTo: an IPv4
// address on an IPv6 socket IPv4-mapped, an IPv6 one on an IPv4 socket an
// error.
func sockaddr(family int, ap netip.AddrPort) (*windows.RawSockaddrAny, int32, error) {
	var raw windows.RawSockaddrAny
	ip, port := ap.Addr().Unmap(), ap.Port()
	if family == windows.AF_INET {
		if ip.IsValid() && !ip.Is4() {
			return nil, 0, fmt.Errorf("%v is not an IPv4 address, and this socket is IPv4's", ip)
		}
		sa := (*windows.RawSockaddrInet4)(unsafe.Pointer(&raw))
		sa.Family = windows.AF_INET
		putPort(&sa.Port, port)
		if ip.IsValid() {
			sa.Addr = ip.As4()
		}
		return &raw, int32(unsafe.Sizeof(*sa)), nil
	}
	sa := (*windows.RawSockaddrInet6)(unsafe.Pointer(&raw))
	sa.Family = windows.AF_INET6
	putPort(&sa.Port, port)
	if ip.IsValid() {
		sa.Addr = ip.As16()
		if ip.Zone() != "" {
			sa.Scope_id = zoneID(ip.Zone())
		}
	}
	return &raw, int32(unsafe.Sizeof(*sa)), nil
}

// putPort and getPort store a port in network byte order.
func putPort(p *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(p))
	b[0], b[1] = byte(port>>8), byte(port)
}

func getPort(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// addrPort is a received datagram's source as net.UDPConn gives it: an
// IPv4 socket's as IPv4, an IPv6 socket's as IPv6 (IPv4-mapped for IPv4
// sources), with the interface's name as the zone.
func addrPort(raw *windows.RawSockaddrAny) netip.AddrPort {
	switch raw.Addr.Family {
	case windows.AF_INET:
		sa := (*windows.RawSockaddrInet4)(unsafe.Pointer(raw))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), getPort(&sa.Port))
	case windows.AF_INET6:
		sa := (*windows.RawSockaddrInet6)(unsafe.Pointer(raw))
		ip := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			ip = ip.WithZone(zoneName(sa.Scope_id))
		}
		return netip.AddrPortFrom(ip, getPort(&sa.Port))
	}
	return netip.AddrPort{}
}

// udpAddr is the bound address Getsockname gives, as a *net.UDPAddr.
func udpAddr(sa windows.Sockaddr) *net.UDPAddr {
	switch sa := sa.(type) {
	case *windows.SockaddrInet4:
		return &net.UDPAddr{IP: net.IP(sa.Addr[:]).To4(), Port: sa.Port}
	case *windows.SockaddrInet6:
		a := &net.UDPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		if sa.ZoneId != 0 {
			a.Zone = zoneName(sa.ZoneId)
		}
		return a
	}
	return nil
}

// zoneName names interface index i, or gives its number.
func zoneName(i uint32) string {
	if ifi, err := net.InterfaceByIndex(int(i)); err == nil {
		return ifi.Name
	}
	return strconv.FormatUint(uint64(i), 10)
}

// zoneID is the interface index a zone names (its name or its number).
func zoneID(zone string) uint32 {
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	n, _ := strconv.ParseUint(zone, 10, 32)
	return uint32(n)
}

// addrInUse makes bind's WSAEADDRINUSE also match syscall.EADDRINUSE, which
// callers test to say the port is taken (on Windows syscall's
// EADDRINUSE is a value of Go's own, which Winsock never returns).
func addrInUse(err error) error {
	if errors.Is(err, windows.WSAEADDRINUSE) {
		return inUseError{err}
	}
	return err
}

type inUseError struct{ error }

func (e inUseError) Unwrap() error        { return e.error }
func (e inUseError) Is(target error) bool { return target == syscall.EADDRINUSE }
