package wake

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerfd is the Linux timer: a non-blocking timerfd, set and read with
// raw system calls (no runtime syscall entry, which would wake sysmon;
// transport's sendto_linux.go says the same of sending).
type timerfd struct {
	f  *os.File
	rc syscall.RawConn
	fd uintptr
	fn func(fd uintptr) bool // read, bound once
	n  uint64                // read's result: expirations
	c  chan time.Time        // the Timer's C
}

// New makes a stopped Timer and starts the goroutine that reads it, which
// ends with Close.
func New() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, errors.Join(ErrUnsupported, err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, errors.Join(ErrUnsupported, err)
	}
	tf := &timerfd{f: f, rc: rc, fd: uintptr(fd), c: make(chan time.Time, 1)}
	tf.fn = tf.read
	t := &Timer{c: tf.c, t: tf}
	go t.run()
	return t, nil
}

// read reads the timerfd and hands a firing to C, dropping it if C is
// full (the loop has yet to take the last one, and will run what is due
// then). It returns false, to wait for the next firing, with no second
// read: a timerfd read empties it until it fires again, and that firing
// is a new edge for the poller, which marks the descriptor ready even if
// it comes before the wait. So one RawRead lasts the timer's life, and a
// firing costs one read, not a read and then one that finds EAGAIN (a
// Read per firing must begin with a read, as RawRead forgets a readiness
// it saw before it was called).
func (tf *timerfd) read(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&tf.n)), 8)
	if e == unix.EAGAIN {
		return false // not fired: a readiness left from before
	}
	select {
	case tf.c <- time.Now():
	default:
	}
	return false
}

// run reads the timer until Close.
func (t *Timer) run() {
	for {
		if err := t.t.rc.Read(t.t.fn); err != nil {
			return // closed
		}
	}
}

// Reset arms the timer to fire once, d from now (at once if d <= 0),
// replacing what it was armed for.
func (t *Timer) Reset(d time.Duration) {
	// A zero it_value disarms a timerfd: the least duration fires at once.
	d = max(d, time.Nanosecond)
	t.t.set(unix.NsecToTimespec(int64(d)))
}

// Stop disarms the timer.
func (t *Timer) Stop() { t.t.set(unix.Timespec{}) }

// set arms the timerfd. timerfd_settime(2) fails only on a bad fd (after
// Close, when nothing reads C any more), bad flags (0 here) or a value out
// of range (NsecToTimespec of a positive duration never is), so its error
// is not looked at: no call that can fail is made.
func (tf *timerfd) set(ts unix.Timespec) {
	spec := unix.ItimerSpec{Value: ts}
	unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, tf.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// Close stops the timer for good and ends its reader.
func (t *Timer) Close() error { return t.t.f.Close() }
