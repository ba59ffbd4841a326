package wake

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTimerFires: a Reset fires once the duration has passed (at once for
// none or a negative one), and a later Reset replaces an earlier one; a
// stopped timer is disarmed. Real time: a timerfd is the kernel's clock,
// not testing/synctest's.
func TestTimerFires(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first time.Duration // a Reset replaced by the second; 0: none
		d     time.Duration
	}{
		{"at once", 0, 0},
		{"a negative duration, at once", 0, -time.Second},
		{"after the duration", 0, 20 * time.Millisecond},
		{"a Reset replaces the one before", time.Hour, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			if tc.first != 0 {
				tm.Reset(tc.first)
			}
			start := time.Now()
			tm.Reset(tc.d)
			select {
			case at := <-tm.C():
				if early := at.Sub(start); early < tc.d {
					t.Errorf("fired %v after the Reset, want at least %v", early, tc.d)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Reset(%v) never fired", tc.d)
			}
		})
	}
}

// TestStopDisarms: Stop leaves the timerfd disarmed, as the kernel has it.
func TestStopDisarms(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(time.Hour)
	var spec unix.ItimerSpec
	if err := unix.TimerfdGettime(int(tm.t.fd), &spec); err != nil || spec.Value.Nano() == 0 {
		t.Fatalf("after Reset(1h): %+v, %v; want armed", spec, err)
	}
	tm.Stop()
	if err := unix.TimerfdGettime(int(tm.t.fd), &spec); err != nil || spec.Value.Nano() != 0 {
		t.Errorf("after Stop: %+v, %v; want disarmed", spec, err)
	}
}

// TestTimerFiresAfterEachReset: one reader serves the timer's life, so
// each Reset after a firing fires again, the value taken or not (C holds
// one: a firing while it is full is dropped, not queued).
func TestTimerFiresAfterEachReset(t *testing.T) {
	for _, tc := range []struct {
		name string
		take bool // take each firing before the next Reset
	}{
		{"each firing taken", true},
		{"firings left in C", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			for i := range 5 {
				if !tc.take {
					// Drain what an earlier round left, then fire.
					select {
					case <-tm.C():
					default:
					}
				}
				tm.Reset(time.Millisecond)
				select {
				case <-tm.C():
				case <-time.After(5 * time.Second):
					t.Fatalf("firing %d never came", i+1)
				}
				if !tc.take {
					tm.Reset(0) // fires with C empty or not: none may block the reader
				}
			}
		})
	}
}

// TestNoFiringBeforeDue: the reader hands a firing only when the timer
// expired, though it reads the timerfd only before its first wait: a timer
// armed far ahead gives nothing, before and after a firing taken, and a
// Reset after a firing arms it afresh rather than repeating the old one.
// Real time, as in TestTimerFires.
func TestNoFiringBeforeDue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fireFirst bool // a firing taken before the far Reset
	}{
		{"armed far ahead from the start", false},
		{"armed far ahead after a firing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			if tc.fireFirst {
				tm.Reset(time.Millisecond)
				select {
				case <-tm.C():
				case <-time.After(5 * time.Second):
					t.Fatal("Reset(1ms) never fired")
				}
			}
			tm.Reset(time.Hour)
			select {
			case at := <-tm.C():
				t.Fatalf("fired at %v with an hour to go", at)
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}

// TestOnFireCallsInsteadOfC: after OnFire each firing is a call of f on
// the reader's goroutine and nothing goes to C; f re-arming the timer
// from within gets the next firing, and no call comes after Close
// returns. Real time, as in TestTimerFires.
func TestOnFireCallsInsteadOfC(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan int, 10)
	var n atomic.Int32
	tm.OnFire(func() {
		i := int(n.Add(1))
		calls <- i
		if i < 3 {
			tm.Reset(time.Millisecond) // from f itself, as send's loop does
		}
	})
	tm.Reset(time.Millisecond)
	for want := 1; want <= 3; want++ {
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("call %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d never came", want)
		}
	}
	select {
	case at := <-tm.C():
		t.Fatalf("C gave %v after OnFire", at)
	default:
	}
	tm.Reset(time.Millisecond)
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	after := n.Load()
	<-time.After(20 * time.Millisecond) // real time, as in TestNoFiringBeforeDue: a late call would come in it
	if got := n.Load(); got != after {
		t.Errorf("%d calls after Close returned", got-after)
	}
}
