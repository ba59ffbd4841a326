package inject

import (
	"io"
	"net"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawStream writes to a socket with raw write(2) calls: a net.Conn's Write
// goes through the runtime's syscall entry, which wakes the runtime's
// monitor thread (sysmon) whenever the process was idle, and recv is idle
// between keys, so each key pressed would pay for that wake-up and sysmon's
// polling after it. Go's sockets are non-blocking: EAGAIN is handed back to
// the poller through RawConn.Write, which is what makes the raw call safe.
// Write is safe for concurrent use.
type rawStream struct {
	rc syscall.RawConn

	mu    sync.Mutex // one Write at a time: the fields below are its state
	b     []byte     // what is left to write
	errno syscall.Errno
	fn    func(fd uintptr) bool // write, bound once
}

// newRawStream is conn's rawStream, or nil if conn is no socket.
func newRawStream(conn net.Conn) io.Writer {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawStream{rc: rc}
	w.fn = w.write
	return w
}

func (w *rawStream) write(fd uintptr) bool {
	for len(w.b) > 0 {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(w.b))), uintptr(len(w.b)))
		switch e {
		case 0:
			w.b = w.b[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return false // wait until the socket takes more
		default:
			w.errno = e
			return true
		}
	}
	return true
}

func (w *rawStream) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b, w.errno = b, 0
	err := w.rc.Write(w.fn)
	n := len(b) - len(w.b)
	w.b = nil
	if err == nil && w.errno != 0 {
		err = w.errno
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "unix", Err: err}
	}
	return n, nil
}
