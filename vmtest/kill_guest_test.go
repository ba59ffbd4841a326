//go:build vmtest && linux

package vmtest

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/bendahl/uinput"

	"github.com/keyrelay/keyrelay/internal/linux/evdev"
)

// The times of the checks of a recv killed while it holds a key, and of
// an idle one.
const (
	// watchKilled is how long a reader watches recv's keyboard after recv
	// was killed: eight times the kernel's repeat delay, sixty periods.
	watchKilled = 2 * time.Second
	// idle is how long recv idles before the next key: longer than each
	// timeout it or its injectors have: --timeout (recvTimeout), hidg's
	// write timeout (1 s), the kernel's repeat delay (250 ms). (USB
	// autosuspend's 2 s would be one too, but the guest's USB host, as
	// Linux does for a keyboard unless told otherwise, leaves it off:
	// hidg-idle logs the gadget's power/control.)
	idle = 1500 * time.Millisecond
)

// killedRecv is what a reader of recv's keyboard got of one key after recv
// was killed holding it.
type killedRecv struct {
	before, after int  // presses and repeats (value 1, 2) before its release, after it
	released      bool // a release (value 0) came
	gone          bool // the device went away (ENODEV)
	took          time.Duration
}

// afterKill reads r for watchKilled after recv's kill and returns what
// came of code. Whatever was queued was read just before the kill, so a
// repeat read before the release fell due at most between that read and
// the kill, or after the kill, until the release.
func (r *reader) afterKill(t *testing.T, code uint16, killed time.Time) killedRecv {
	t.Helper()
	var k killedRecv
	r.d.SetReadDeadline(killed.Add(watchKilled))
	for {
		n, err := r.d.Read(r.buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return k
		case errors.Is(err, syscall.ENODEV):
			k.gone = true
			if !k.released {
				k.took = time.Since(killed)
			}
			return k
		case err != nil:
			t.Fatalf("reading %s: %v", r.what, err)
		}
		for _, e := range r.buf[:n] {
			if e.Type != evdev.EvKey || e.Code != code {
				continue
			}
			switch {
			case e.Value == 0 && !k.released:
				k.released, k.took = true, time.Since(killed)
			case e.Value != 0 && k.released:
				k.after++
			case e.Value != 0:
				k.before++
			}
		}
	}
}

// checkKilledRecv holds code through send until the reader has seen it
// repeat, kills recv with SIGKILL and checks that nothing presses or
// repeats the key after its release, which comes (or the device goes
// away) within watchKilled; and that recv's guard ends.
func checkKilledRecv(t *testing.T, src *source, r *reader, recv *proc, code int) {
	t.Helper()
	src.play(t, down(code))
	r.expect(t, "held", down(code))
	if _, _, n := r.repeats(t, code, 2); n < 2 {
		t.Fatalf("%d repeats of the held key, want 2 before the kill", n)
	}
	r.drain(t)
	if err := recv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	k := r.afterKill(t, uint16(code), time.Now())
	t.Logf("after recv's SIGKILL: %d presses or repeats before the release, %d after; released %v, device gone %v, %v after the kill",
		k.before, k.after, k.released, k.gone, k.took.Round(time.Millisecond))
	switch {
	case !k.released && !k.gone:
		t.Errorf("%s: the key was not released within %v of recv's SIGKILL (%d presses or repeats meanwhile)", r.what, watchKilled, k.before)
	case k.after > 0:
		t.Errorf("%s: %d presses or repeats after the release", r.what, k.after)
	}
	src.play(t, up(code))
	select {
	case <-recv.done:
	case <-time.After(arrive):
		t.Errorf("recv (and its guard, which has its standard error) did not end within %v of SIGKILL", arrive)
	}
}

// checkIdle types a key, lets recv idle for idle, and types another: the
// reader gets exactly both, pressed and released, and nothing repeats.
func checkIdle(t *testing.T, src *source, r *reader) {
	t.Helper()
	src.play(t, tap(uinput.KeyA)...)
	r.expect(t, "before idling", tap(uinput.KeyA)...)
	<-time.After(idle) // the idling itself, not a wait for an event
	src.play(t, tap(uinput.KeyB)...)
	r.expect(t, "after idling "+idle.String(), tap(uinput.KeyB)...)
	r.none(t, "after the key typed after idling")
}
