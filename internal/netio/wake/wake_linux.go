package wake

import (
	"errors"
	"os"
	"sync/atomic"
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
	// fire, once set (OnFire), takes each firing instead of c.
	fire atomic.Pointer[func()]
	// waited: the poller has woken read at least once, so each call
	// since answers a firing (see read).
	waited bool
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

// read hands a firing to C, dropping it if C is full (the loop has yet to
// take the last one, and will run what is due then). It returns false, to
// wait for the next firing, so one RawRead lasts the timer's life.
//
// Only its first call reads the timerfd: it comes before any wait, and a
// firing before it may have been seen by the poller and forgotten
// (RawRead forgets a readiness from before it was called). Each later call
// follows the poller's wake-up, and the poller wakes a timerfd's reader
// only when it fires: its descriptor is edge-triggered, and the kernel
// signals a timerfd at each expiry and at nothing else (a timerfd_settime
// signals nothing; it sets the expirations back to none). So the firing
// is taken as it is, unread: the expirations it leaves are set back to
// none by the loop's next Reset or Stop, and a later expiry is a new edge
// all the same. A firing the poller saw before a Reset is handed as well,
// as one from before a Reset always could be (Timer's doc): the loops run
// only what is due. An idle send's resend is one system call shorter for
// it.
func (tf *timerfd) read(fd uintptr) bool {
	if !tf.waited {
		tf.waited = true
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&tf.n)), 8)
		if e == unix.EAGAIN {
			return false // not fired yet
		}
	}
	if f := tf.fire.Load(); f != nil {
		(*f)()
		return false
	}
	select {
	case tf.c <- time.Now():
	default:
	}
	return false
}

// OnFire makes each later firing a call of f, on the timer's own
// goroutine (the one that reads the timerfd), instead of a value on C:
// a loop that does a firing's work in f wakes one goroutine per firing,
// not two. The calls of f come one at a time; f may call Reset and Stop,
// not Close. Close waits for a call under way to return (the descriptor
// is closed once its reader lets go of it), so none comes after Close
// returns, and f must not wait for anything Close's caller holds. Call
// OnFire before the timer is armed.
func (t *Timer) OnFire(f func()) { t.t.fire.Store(&f) }

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
