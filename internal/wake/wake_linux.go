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
	tf := &timerfd{f: f, rc: rc, fd: uintptr(fd)}
	tf.fn = tf.read
	t := &Timer{c: make(chan time.Time, 1), t: tf}
	go t.run()
	return t, nil
}

func (tf *timerfd) read(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&tf.n)), 8)
	return e != unix.EAGAIN // else wait until it fires
}

// run hands each firing to C, dropping it if C is full (the loop has yet
// to take the last one, and will run what is due then).
func (t *Timer) run() {
	for {
		if err := t.t.rc.Read(t.t.fn); err != nil {
			return // closed
		}
		select {
		case t.c <- time.Now():
		default:
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
