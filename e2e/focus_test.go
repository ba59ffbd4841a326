//go:build e2e

package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// setFocus sets display's keyboard focus to focus (xproto.InputFocusNone,
// a window...) as a window manager would.
func setFocus(t *testing.T, display string, focus xproto.Window) {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := xproto.SetInputFocusChecked(c, xproto.InputFocusNone, focus, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRecvSaysNoWindowHasFocus: recv --inject x11
// typing on an Xvfb where no window has the keyboard focus says so once,
// naming why, and its summary counts the key presses typed so (4: "abc"
// and a tap); its acks say so too (PROTOCOL.md §9), and send exits 3
// naming the 8 key events typed into no application, why and the fix.
// With a window under the pointer (Xvfb's focus follows the pointer) recv
// says nothing and counts none, and send exits 0. The cases: a bare Xvfb
// (focus PointerRoot, the pointer over the root window alone), the focus
// set to None, the focus set to the root window, and xev under the
// pointer.
func TestRecvSaysNoWindowHasFocus(t *testing.T) {
	t.Parallel()
	needX(t)
	const notice = "while no window has the keyboard focus"
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, display string)
		why    string // in the notice; "" for no notice
		counts string
	}{
		{"bare Xvfb", func(*testing.T, string) {}, "the focus follows the pointer (PointerRoot), and the pointer is over no window", "4"},
		{"focus None", func(t *testing.T, d string) { setFocus(t, d, xproto.InputFocusNone) }, "the focus is None", "4"},
		{"focus on the root window", func(t *testing.T, d string) {
			c, err := xgb.NewConnDisplay(d)
			if err != nil {
				t.Fatal(err)
			}
			root := xproto.Setup(c).DefaultScreen(c).Root
			c.Close()
			setFocus(t, d, root)
		}, "the focus is on the root window", "4"},
		{"a window under the pointer", func(t *testing.T, d string) { startXev(t, d) }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			display := startXvfb(t)
			tc.setup(t, display)
			recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
			code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, "type \"abc\"\ntap KeyA\n"))
			// The summary's line for the receiver, and the error with the fix.
			const summary = "8 of 8 key events were typed into no application (no window had the keyboard focus there)"
			const nowhere = "8 of 8 key events were typed into no application, because no window had the keyboard focus there: focus the window that should get the keys"
			switch {
			case tc.why != "" && (code != 3 || !strings.Contains(stderr, summary) || !strings.Contains(stderr, nowhere)):
				t.Errorf("send exited %d, want 3 saying %q and %q:\n%s", code, summary, nowhere, stderr)
			case tc.why == "" && (code != 0 || strings.Contains(stderr, "no application")):
				t.Errorf("send exited %d, want 0 and nothing typed into no application:\n%s", code, stderr)
			}
			recv.stop()
			log := recv.stderr.String()
			if n := strings.Count(log, notice); (tc.why == "" && n != 0) || (tc.why != "" && n != 1) {
				t.Errorf("recv said %q %d times:\n%s", notice, n, log)
			}
			if tc.why != "" && !strings.Contains(log, "("+tc.why+")") {
				t.Errorf("recv's notice does not say (%s):\n%s", tc.why, log)
			}
			m := regexp.MustCompile(`, (\d+) key presses typed while no window had the keyboard focus`).FindStringSubmatch(log)
			switch {
			case tc.counts == "" && m != nil:
				t.Errorf("recv's summary counts keys typed with no focus, with xev focused:\n%s", log)
			case tc.counts != "" && (m == nil || m[1] != tc.counts):
				t.Errorf("recv's summary does not count %s key presses typed with no focus:\n%s", tc.counts, log)
			}
		})
	}
}
