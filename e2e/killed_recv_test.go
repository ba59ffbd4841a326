//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// keyWatcher is a window that has the keyboard focus and keeps, in order,
// the key events it gets and the marks the test puts among them.
type keyWatcher struct {
	c      *xgb.Conn
	win    xproto.Window
	mu     sync.Mutex
	events []keyEvent
	notify chan struct{}
}

// keyEvent is a KeyPress or KeyRelease the window got (press: true), with
// the server's time, or a mark (mark: true) the test set.
type keyEvent struct {
	press, mark bool
	kc          xproto.Keycode
	time        xproto.Timestamp
}

func newKeyWatcher(t *testing.T, display string) *keyWatcher {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	scr := xproto.Setup(c).DefaultScreen(c)
	win, err := xproto.NewWindowId(c)
	if err != nil {
		t.Fatal(err)
	}
	mask := uint32(xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease | xproto.EventMaskPropertyChange)
	if err := xproto.CreateWindowChecked(c, scr.RootDepth, win, scr.Root, 0, 0, scr.WidthInPixels, scr.HeightInPixels, 0,
		xproto.WindowClassInputOutput, scr.RootVisual, xproto.CwEventMask, []uint32{mask}).Check(); err != nil {
		t.Fatal(err)
	}
	if err := xproto.MapWindowChecked(c, win).Check(); err != nil {
		t.Fatal(err)
	}
	// Focused only once viewable: the map is done when its request is.
	if err := xproto.SetInputFocusChecked(c, xproto.InputFocusPointerRoot, win, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatal(err)
	}
	w := &keyWatcher{c: c, win: win, notify: make(chan struct{}, 1)}
	go func() {
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return
			}
			var e keyEvent
			switch ev := ev.(type) {
			case xproto.KeyPressEvent:
				e = keyEvent{press: true, kc: ev.Detail, time: ev.Time}
			case xproto.KeyReleaseEvent:
				e = keyEvent{kc: ev.Detail, time: ev.Time}
			case xproto.PropertyNotifyEvent:
				e = keyEvent{mark: true, time: ev.Time}
			default:
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
			select {
			case w.notify <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

// mark puts a mark among the events: what the server did before it comes
// before it (a property change's PropertyNotify, in the server's order).
func (w *keyWatcher) mark(t *testing.T) {
	t.Helper()
	err := xproto.ChangePropertyChecked(w.c, xproto.PropModeReplace, w.win, xproto.AtomWmName, xproto.AtomString, 8, 4, []byte("mark")).Check()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *keyWatcher) snapshot() []keyEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]keyEvent(nil), w.events...)
}

// waitPresses waits until the window has got n presses of kc.
func (w *keyWatcher) waitPresses(t *testing.T, kc xproto.Keycode, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		got := 0
		for _, e := range w.snapshot() {
			if e.press && e.kc == kc {
				got++
			}
		}
		if got >= n {
			return
		}
		select {
		case <-w.notify:
		case <-deadline:
			t.Fatalf("the window got %d presses of keycode %d within %v, want %d", got, kc, within, n)
		}
	}
}

// TestKilledRecvStopsRepeat: recv --inject x11 holding KeyA, its X
// auto-repeat going, is killed with SIGKILL. The X server keeps a vanished
// XTEST client's key down and repeating; recv's guard releases it: the
// focused window gets no KeyPress after the kill, and KeyA's release.
// The server here repeats every 200 ms, so that the guard's few
// milliseconds (tens on a loaded machine) between the kill and the release
// see no repeat fall due; the test kills recv just after a repeat.
func TestKilledRecvStopsRepeat(t *testing.T) {
	t.Parallel()
	needX(t)
	display := startXvfbArgs(t, "-ardelay", "300", "-arinterval", "200")
	w := newKeyWatcher(t, display)
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyA\nsleep 1h\n"))
	const kcA = 38 // KeyA: evdev 30 + 8
	// The press and a repeat: the server repeats the key.
	w.waitPresses(t, kcA, 2, 15*time.Second)
	if g := guardsOf(t, recv.cmd.Process.Pid); len(g) != 1 {
		t.Errorf("recv has %d guard processes (%v), want 1", len(g), g)
	}
	recv.cmd.Process.Kill()
	w.mark(t)
	recv.wait(10 * time.Second) // recv and its guard (it shares recv's stderr) have ended
	if g := guardsOf(t, recv.cmd.Process.Pid); len(g) != 0 {
		t.Errorf("recv's guard is still running after its release (%v)", g)
	}
	// What the window gets in the 2 s after the kill (ten repeats' time)
	// is the result: a window to watch, not an event to wait for.
	<-time.After(2 * time.Second)
	events := w.snapshot()
	var killed xproto.Timestamp
	var after []keyEvent
	for i, e := range events {
		if e.mark {
			killed, after = e.time, events[i+1:]
			break
		}
	}
	presses := 0
	for _, e := range after {
		if e.press {
			presses++
		}
	}
	if presses > 0 {
		t.Errorf("the focused window got %d KeyPress events in the 2 s after recv was killed holding KeyA", presses)
	}
	last := events[len(events)-1]
	if last.press || last.mark || last.kc != kcA {
		t.Errorf("the last event the window got is %+v, want KeyA's release", last)
	}
	if want := "released 1 key in DISPLAY=" + display; !strings.Contains(recv.stderr.String(), want) {
		t.Errorf("recv's guard did not say %q:\n%s", want, recv.stderr)
	}
	if !last.press && !last.mark {
		t.Logf("after the kill: %d KeyPress events; KeyA released %d ms (server time) after it", presses, int64(last.time)-int64(killed))
	}
}

// TestStoppedRecvEndsItsGuard: recv --inject x11 stopped by SIGTERM while
// it holds a key releases it itself; its guard finds nothing to do, says
// nothing and has ended when recv has.
func TestStoppedRecvEndsItsGuard(t *testing.T) {
	t.Parallel()
	needX(t)
	display := startXvfb(t)
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyA\nsleep 1h\n"))
	if _, ok := untilKeymap(t, display, 15*time.Second, func(h []int) bool { return len(h) == 1 }); !ok {
		t.Fatalf("KeyA never went down; held %v", heldKeycodes(t, display))
	}
	if g := guardsOf(t, recv.cmd.Process.Pid); len(g) != 1 {
		t.Errorf("recv has %d guard processes (%v), want 1", len(g), g)
	}
	recv.stopWith(syscall.SIGTERM)
	if h := heldKeycodes(t, display); len(h) != 0 {
		t.Errorf("keys held after recv's exit: %v", h)
	}
	if g := guardsOf(t, recv.cmd.Process.Pid); len(g) != 0 {
		t.Errorf("recv's guard outlived a clean exit (%v)", g)
	}
	if strings.Contains(recv.stderr.String(), "ended without releasing") {
		t.Errorf("the guard acted after a clean exit:\n%s", recv.stderr)
	}
}

// guardsOf lists the running guard processes of process pid: those whose
// environment names pid as the process they guard (inject/internal/guard). A
// zombie has no environment left: it is not listed.
func guardsOf(t *testing.T, pid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("\x00KEYRELAY_GUARD_OF=" + strconv.Itoa(pid) + "\x00")
	var out []int
	for _, d := range dirs {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err == nil && bytes.Contains(append([]byte{0}, env...), want) {
			out = append(out, n)
		}
	}
	return out
}
