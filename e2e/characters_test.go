//go:build e2e

package e2e

import (
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCharactersFromGermanDesktop checks characters mode (DESIGN.md, Named
// destinations): a German Xvfb desktop is the sender (send --input x11,
// reading it with RECORD, --keys characters), xdotool types "Zyklop öäü ß @"
// there as the physical keys a German typist presses (Shift, AltGr), then
// the dead acute and e; a US and a French Xvfb receiver (recv --inject x11,
// an xterm as the probe) get exactly that text and é, where their own
// layouts would have typed other characters ("Yzklop ;'[ - q" on us). A
// third receiver logs what it gets (recv --inject log): the text as
// characters, and Ctrl+A as ControlLeft and KeyA, physical, so shortcuts
// keep working. send's line for each destination says it gets characters,
// and from what keymap.
func TestCharactersFromGermanDesktop(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap", "xterm", "xdotool")
	sendDisplay := startXvfb(t)
	setLayout(t, sendDisplay, "de")
	type target struct {
		layout string
		term   *termFile
		recv   *proc
	}
	var targets []target
	var to []string
	for _, layout := range []string{"us", "fr"} {
		display := startXvfb(t)
		setLayout(t, display, layout)
		term := startXterm(t, display)
		recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
		targets = append(targets, target{layout, term, recv})
		to = append(to, layout+"="+recv.addr)
	}
	logRecv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	to = append(to, "log="+logRecv.addr)
	send := startWithEnv(t, []string{"DISPLAY=" + sendDisplay}, "send", "--to", strings.Join(to, ","), "--input", "x11", "--keys", "characters")
	if !send.waitStderr("capturing keys", 10*time.Second) {
		t.Fatalf("send did not start capturing:\n%s", send.stderr)
	}
	// Each destination's line says it gets characters, and from what.
	for _, name := range []string{"us", "fr", "log"} {
		if !send.waitStderr("sending to "+name+" (", 5*time.Second) || !regexp.MustCompile(`sending to `+name+` \([^;]+; characters through this X display's keymap;`).MatchString(send.stderr.String()) {
			t.Errorf("send does not say %s gets characters:\n%s", name, send.stderr)
		}
	}
	const text = "Zyklop öäü ß @"
	xdotool(t, sendDisplay, "type", "--delay", "20", text)
	// de's dead acute (the key right of ß) then e: é, composed on the
	// sender's side as the Compose file says.
	xdotool(t, sendDisplay, "key", "--delay", "20", "dead_acute", "e")
	for _, tg := range targets {
		if got := tg.term.text(t, text+"é"); got != text+"é" {
			t.Errorf("the xterm on %s got %q, want %q", tg.layout, got, text+"é")
		}
	}
	var want []string
	for _, r := range text + "é" {
		q := "'" + string(r) + "'"
		want = append(want, q+" down", q+" up")
	}
	logRecv.expectKeys(t, want...)
	xdotool(t, sendDisplay, "key", "ctrl+a")
	logRecv.expectKeys(t, "ControlLeft down", "KeyA down")
	// xdotool releases the modifier first: the ups come in either order.
	var ups []string
	for range 2 {
		l, ok := logRecv.next(10 * time.Second)
		for ok && l.Key == "" {
			l, ok = logRecv.next(10 * time.Second)
		}
		ups = append(ups, l.String())
	}
	slices.Sort(ups)
	if !slices.Equal(ups, []string{"ControlLeft up", "KeyA up"}) {
		t.Errorf("after Ctrl+A's presses the log receiver got %v, want ControlLeft up and KeyA up", ups)
	}
	send.stopWith(syscall.SIGTERM)
	for _, tg := range targets {
		stopRecv(t, tg.recv)
	}
}

// TestCharactersThroughNamedLayout checks characters mode (DESIGN.md, Named
// destinations) for a source that cannot ask the keyboard's layout (evdev;
// here a script of physical keys, which takes the same path): send --keys
// characters --layout de turns German keys into the characters de gives them
// (Shift+KeyY Z, KeyZ y, AltGr+KeyQ @, dead acute then e é), a chord stays
// physical, and every character is a down and its up.
func TestCharactersThroughNamedLayout(t *testing.T) {
	t.Parallel()
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	keys := script(t, "down ShiftLeft\ntap KeyY\nup ShiftLeft\ntap KeyZ\ndown AltRight\ntap KeyQ\nup AltRight\ntap Equal\ntap KeyE\ndown ControlLeft\ntap KeyA\nup ControlLeft\n")
	if code, _, stderr := run(t, "", "send", "--to", "de="+recv.addr, "--script", keys, "--keys", "characters", "--layout", "de"); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	recv.expectKeys(t, "'Z' down", "'Z' up", "'y' down", "'y' up", "'@' down", "'@' up", "'é' down", "'é' up",
		"ControlLeft down", "KeyA down", "KeyA up", "ControlLeft up")
}

// TestCharactersWithCapsLockOnAtStart is characters mode's lock state
// (PROTOCOL.md §3.2): Caps Lock and Num Lock are on on the German desktop
// before send starts, so its letter keys type capitals there and its
// keypad digits, and send, which reads the lock state from the X server as
// it starts, sends them so: "zyklop" typed as German keys, then the
// keypad's 1 and decimal key, arrive as "ZYKLOP1," (de's decimal key is a
// comma), in a US xterm (whose own Caps Lock send turns on) and at a log
// receiver.
func TestCharactersWithCapsLockOnAtStart(t *testing.T) {
	needX(t, "setxkbmap", "xterm", "xdotool")
	sendDisplay := startXvfb(t)
	setLayout(t, sendDisplay, "de")
	xdotool(t, sendDisplay, "key", "Caps_Lock", "Num_Lock")
	usDisplay := startXvfb(t)
	setLayout(t, usDisplay, "us")
	term := startXterm(t, usDisplay)
	usRecv := startWithEnv(t, []string{"DISPLAY=" + usDisplay}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	logRecv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	send := startWithEnv(t, []string{"DISPLAY=" + sendDisplay}, "send", "--to", "us="+usRecv.addr+",log="+logRecv.addr, "--input", "x11", "--keys", "characters")
	if !send.waitStderr("capturing keys", 10*time.Second) {
		t.Fatalf("send did not start capturing:\n%s", send.stderr)
	}
	// The keysyms of de's level 1: xdotool presses KeyY for z, with no
	// Shift, and the desktop's Caps Lock makes it Z.
	xdotool(t, sendDisplay, "key", "--delay", "20", "z", "y", "k", "l", "o", "p")
	// The keypad's keys by keycode (evdev + 8): xdotool would pick a
	// level by keysym, with Shift, which undoes Num Lock.
	x := dialXTest(t, sendDisplay)
	const kp1, kpDecimal = 79 + 8, 83 + 8
	x.tap(t, kp1)
	x.tap(t, kpDecimal)
	const want = "ZYKLOP1,"
	if got := term.text(t, want); got != want {
		t.Errorf("the US xterm got %q, want %q", got, want)
	}
	var keys []string
	for _, r := range want {
		q := "'" + string(r) + "'"
		keys = append(keys, q+" down", q+" up")
	}
	logRecv.expectKeys(t, keys...)
	send.stopWith(syscall.SIGTERM)
	stopRecv(t, usRecv)
}

// TestCharactersFollowALayoutChange is characters mode's keymap followed
// through the session: the source desktop starts as us, becomes de, then
// fr (setxkbmap, as a user switches layouts) while send runs, and the same
// physical keys (KeyY, KeyQ, Digit1, tapped through XTEST) arrive at the
// log receiver as the characters each layout gives them: y q 1, then
// z q 1, then y a & (DESIGN.md "Named destinations": the layout comes in
// as a charmode.Keymap, the X server's read again as it changes).
func TestCharactersFollowALayoutChange(t *testing.T) {
	needX(t, "setxkbmap")
	display := startXvfb(t)
	setLayout(t, display, "us")
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	send := startWithEnv(t, []string{"DISPLAY=" + display}, "send", "--to", "log="+recv.addr, "--input", "x11", "--keys", "characters")
	if !send.waitStderr("capturing keys", 10*time.Second) {
		t.Fatalf("send did not start capturing:\n%s", send.stderr)
	}
	x := dialXTest(t, display)
	// X keycodes (evdev + 8) of KeyY, KeyQ and Digit1.
	const keyY, keyQ, digit1 = 21 + 8, 16 + 8, 2 + 8
	for i, step := range []struct {
		layout string
		want   string
	}{{"", "yq1"}, {"de", "zq1"}, {"fr", "ya&"}} {
		if step.layout != "" {
			setLayout(t, display, step.layout)
			if !send.waitStderrCount("keymap of DISPLAY="+display+" changed", i, 10*time.Second) {
				t.Fatalf("send did not say the keymap changed after setxkbmap %s:\n%s", step.layout, send.stderr)
			}
		}
		for _, kc := range []byte{keyY, keyQ, digit1} {
			x.tap(t, kc)
		}
		var want []string
		for _, r := range step.want {
			q := "'" + string(r) + "'"
			want = append(want, q+" down", q+" up")
		}
		recv.expectKeys(t, want...)
	}
	send.stopWith(syscall.SIGTERM)
}

// waitStderrCount waits until the process has written want to standard
// error n times, and reports whether it did within timeout.
func (p *proc) waitStderrCount(want string, n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for strings.Count(p.stderr.String(), want) < n {
		select {
		case <-p.stderr.Written():
		case <-p.done:
			return strings.Count(p.stderr.String(), want) >= n
		case <-deadline:
			return false
		}
	}
	return true
}

// TestCharactersTakeCapsLockAsRelayingResumes is characters mode's lock
// state through a switch (PROTOCOL.md §3.2's epoch): send --input x11
// --grab relays a German desktop's keys as characters; in local use
// (ScrollLock) Caps Lock is turned on there, where send sees no keys, and
// once relaying resumes the same key (z) arrives as Z; turned off in local
// use again, as z.
func TestCharactersTakeCapsLockAsRelayingResumes(t *testing.T) {
	needX(t, "setxkbmap", "xdotool")
	display := startXvfb(t)
	setLayout(t, display, "de")
	x := dialXTest(t, display)
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	send := startWithEnv(t, []string{"DISPLAY=" + display}, "send", "--to", "log="+recv.addr, "--input", "x11", "--grab", "--hotkey", "ScrollLock", "--keys", "characters")
	waitMode := func(mode string, n int) {
		t.Helper()
		if !send.waitStderrCount(mode, n, 10*time.Second) {
			t.Fatalf("send did not say %q %d times:\n%s", mode, n, send.stderr)
		}
	}
	waitMode("relaying to", 1)
	for i, caps := range []bool{false, true, false} {
		if i > 0 {
			xdotool(t, display, "key", "Scroll_Lock")
			waitMode("local use", i)
			x.setCapsLock(t, caps)
			xdotool(t, display, "key", "Scroll_Lock")
			waitMode("relaying to", i+1)
		}
		xdotool(t, display, "key", "z")
		want := "'z'"
		if caps {
			want = "'Z'"
		}
		recv.expectKeys(t, want+" down", want+" up")
	}
	send.stopWith(syscall.SIGTERM)
}
