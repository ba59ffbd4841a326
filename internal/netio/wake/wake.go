// Package wake is a one-shot timer that fires through the network poller
// rather than the runtime's timers: on Linux a timerfd(2), read as a
// socket is. The runtime's monitor thread (sysmon) sleeps until the next
// runtime timer whenever the process is idle, so each runtime timer wakes
// two threads, the one that runs it and sysmon; send's loop, idle but for
// its resend every 100 ms (PROTOCOL.md §7), paid for both at every resend.
// Where there is no timerfd, New says so and the caller keeps a
// time.Timer.
package wake

import (
	"errors"
	"time"
)

// ErrUnsupported is New's error where there is no timerfd.
var ErrUnsupported = errors.New("no timerfd on this system")

// Timer is a one-shot timer. C, Reset and Close may be called from one
// goroutine at a time; the value C gives is the time it fired, read when
// the poller woke its reader.
//
// Like a time.Timer before Go 1.23, C holds at most one value, which a
// Reset does not take back: a loop that reads C must take an early value
// for what it is (a deadline not yet due).
type Timer struct {
	c chan time.Time
	t *timerfd
}

// C is the channel the timer fires on, until OnFire.
func (t *Timer) C() <-chan time.Time { return t.c }
