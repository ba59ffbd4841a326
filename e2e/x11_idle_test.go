//go:build e2e

package e2e

import (
	"testing"
)

// TestX11TypesAfterIdle (DESIGN.md invariant 8, keys are keys): recv
// --inject x11 types the next keys exactly after a pause longer than every
// time limit its injector has: the focus check's 250 ms (focusRecheck), the
// 50 ms it gives an application that does not answer pings after mapping a
// spare keycode (remapSettle) and the 1 s it waits for an answer
// (pingTimeout), and the 3 s bound of its start-up checks
// (displayTimeout). Characters the German layout lacks, on spare keycodes
// mapped before the pause and new ones, a character and a physical key of
// the layout, into an xterm.
func TestX11TypesAfterIdle(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap", "xterm")
	display := startXvfb(t)
	setLayout(t, display, "de")
	term := startXterm(t, display)
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	keys := script(t, `type "ñ€ø "
sleep 3500ms
type "ñø æ ü"
tap KeyZ
`)
	if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", keys); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	if got, want := term.text(t, "ñ€ø ñø æ üy"), "ñ€ø ñø æ üy"; got != want {
		t.Errorf("the xterm got %q after the pause, want %q", got, want)
	}
	noKeyHeld(t, display)
	stopRecv(t, recv)
}
