package transport

import (
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawWriter sends datagrams with a raw sendto(2). A net.UDPConn's WriteTo
// goes through the runtime's syscall entry, which wakes the runtime's
// monitor thread (sysmon) whenever the process was idle; sysmon then polls
// for a while before sleeping again. A sender idles between its 100 ms
// resends, so every packet paid for that, and an idle pair's CPU is mostly
// such wake-ups (DESIGN.md, Packages; figures in BENCHMARKS.md, Raw
// sendto). sendto on Go's non-blocking UDP sockets does not block (EAGAIN
// is handed back to the poller through RawConn.Write), which is what makes
// the raw call safe. It also allocates nothing per packet: the
// destinations' socket addresses are built once.
type rawWriter struct {
	rc syscall.RawConn

	mu    sync.Mutex // one write at a time: the fields below are its arguments
	addrs map[*net.UDPAddr]*rawAddr
	// The last destination and its socket address: a sender writes to
	// the same one or few every 100 ms, and a comparison costs less than a
	// map lookup on a cache gone cold since the last resend.
	lastUA *net.UDPAddr
	last   *rawAddr
	b      []byte
	to     *rawAddr
	n      int
	errno  syscall.Errno
	fn     func(fd uintptr) bool // w.write, bound once
}

type rawAddr struct {
	v4  unix.RawSockaddrInet4
	v6  unix.RawSockaddrInet6
	ptr unsafe.Pointer
	len uintptr
}

func newRawWriter(pc net.PacketConn) *rawWriter {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawWriter{rc: rc, addrs: map[*net.UDPAddr]*rawAddr{}}
	w.fn = w.write
	return w
}

func (w *rawWriter) write(fd uintptr) bool {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(w.b))), uintptr(len(w.b)), 0, uintptr(w.to.ptr), w.to.len)
	if e == unix.EAGAIN {
		return false // wait until the socket can take it
	}
	w.n, w.errno = int(n), e
	return true
}

// addr is ua's socket address, built on first use. ok is false for an
// address this writer cannot express (then the caller uses WriteTo).
func (w *rawWriter) addr(ua *net.UDPAddr, v6 bool) (*rawAddr, bool) {
	if ua == w.lastUA {
		return w.last, true
	}
	if a := w.addrs[ua]; a != nil {
		w.lastUA, w.last = ua, a
		return a, true
	}
	if len(w.addrs) >= 64 {
		return nil, false // not one of the sender's few destinations
	}
	a := &rawAddr{}
	port := uint16(ua.Port)
	if ip4 := ua.IP.To4(); ip4 != nil && !v6 {
		a.v4.Family = unix.AF_INET
		a.v4.Port = port<<8 | port>>8 // network byte order
		copy(a.v4.Addr[:], ip4)
		a.ptr, a.len = unsafe.Pointer(&a.v4), unsafe.Sizeof(a.v4)
	} else if ip16 := ua.IP.To16(); ip16 != nil && v6 && ua.Zone == "" {
		a.v6.Family = unix.AF_INET6
		a.v6.Port = port<<8 | port>>8
		copy(a.v6.Addr[:], ip16)
		a.ptr, a.len = unsafe.Pointer(&a.v6), unsafe.Sizeof(a.v6)
	} else {
		return nil, false
	}
	w.addrs[ua] = a
	w.lastUA, w.last = ua, a
	return a, true
}

// writeTo sends b to ua; ok is false if it could not try (the caller
// falls back to WriteTo).
func (w *rawWriter) writeTo(b []byte, ua *net.UDPAddr, v6 bool) (n int, ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	to, ok := w.addr(ua, v6)
	if !ok {
		return 0, false, nil
	}
	w.b, w.to = b, to
	if err := w.rc.Write(w.fn); err != nil {
		return 0, true, &net.OpError{Op: "write", Net: "udp", Addr: ua, Err: err}
	}
	w.b = nil
	if w.errno != 0 {
		return 0, true, &net.OpError{Op: "write", Net: "udp", Addr: ua, Err: os.NewSyscallError("sendto", w.errno)}
	}
	return w.n, true, nil
}

// isV6 says whether pc is an IPv6 socket (a dual-stack one included), as
// the kernel has it.
func isV6(pc net.PacketConn) bool {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return false
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var domain int
	rc.Control(func(fd uintptr) {
		domain, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	})
	return err == nil && domain == unix.AF_INET6
}
