package dgram

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawReader reads datagrams with a raw recvfrom(2), as transport's rawWriter
// sends them: a net.UDPConn's reads go through the runtime's syscall entry,
// which wakes the runtime's monitor thread (sysmon) whenever the process was
// idle, and a receiver is idle between datagrams, so each one would pay for
// sysmon's wake-up and its polling before it slept again (two reads per
// datagram: the one that gets it and the one that finds the socket empty).
// Go's UDP sockets are non-blocking: EAGAIN is handed back to the poller
// through RawConn.Read, which is what makes the raw call safe.
type rawReader struct {
	rc    syscall.RawConn
	b     []byte // read's arguments and results
	n     int
	errno syscall.Errno
	from  unix.RawSockaddrAny
	flen  uint32
	fn    func(fd uintptr) bool // read, bound once
}

func newRawReader(pc net.PacketConn) *rawReader {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawReader{rc: rc}
	r.fn = r.read
	return r
}

func (r *rawReader) read(fd uintptr) bool {
	r.flen = uint32(unsafe.Sizeof(r.from))
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.b))), uintptr(len(r.b)), 0,
		uintptr(unsafe.Pointer(&r.from)), uintptr(unsafe.Pointer(&r.flen)))
	if e == unix.EAGAIN {
		return false // wait until a datagram comes
	}
	r.n, r.errno = int(n), e
	return true
}

// readFrom reads one datagram into b: its length and its source, as a
// key for the address cache (sourceKey) that addr turns into an Addr.
func (r *rawReader) readFrom(b []byte) (int, sourceKey, error) {
	r.b = b
	err := r.rc.Read(r.fn)
	r.b = nil
	if err != nil {
		return 0, sourceKey{}, &net.OpError{Op: "read", Net: "udp", Err: err}
	}
	if r.errno != 0 {
		return 0, sourceKey{}, &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvfrom", r.errno)}
	}
	var k sourceKey
	switch r.from.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&r.from))
		k.family, k.port = unix.AF_INET, port(&sa.Port)
		copy(k.addr[:], sa.Addr[:])
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&r.from))
		k.family, k.port, k.addr, k.scope = unix.AF_INET6, port(&sa.Port), sa.Addr, sa.Scope_id
	}
	return r.n, k, nil
}

// port reads a socket address's port, which is in network byte order.
func port(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// sourceKey is a datagram's source as recvfrom gives it, compared as it
// is: no conversion to a net.Addr per datagram.
type sourceKey struct {
	family uint16
	port   uint16
	addr   [16]byte
	scope  uint32
}

// udpAddr is the address net.UDPConn's reads give for k: an IPv4 socket's
// sources as 4 bytes, an IPv6 socket's as 16 (IPv4-mapped ones included),
// the zone named as the interface is.
func (k sourceKey) udpAddr() *net.UDPAddr {
	if k.family == unix.AF_INET {
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4([4]byte(k.addr[:4])), k.port))
	}
	zone := ""
	if k.scope != 0 {
		zone = strconv.Itoa(int(k.scope))
		if ifi, err := net.InterfaceByIndex(int(k.scope)); err == nil {
			zone = ifi.Name
		}
	}
	return net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(k.addr).WithZone(zone), k.port))
}
