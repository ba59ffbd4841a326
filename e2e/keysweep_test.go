//go:build e2e

package e2e

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"
)

// serverKeysyms are keysyms whose XKB action the X server carries out
// itself (Private actions of the xfree86 compat: the next and the previous
// video mode), without delivering the key event to any client, RECORD's
// and grabs included: a key that has one of them on its first level (249
// and 250 on Xvfb's us, KEY_VIDEO_NEXT and KEY_VIDEO_PREV) acts on the
// sender's own server, and no X client can see it pressed there.
var serverKeysyms = []xproto.Keysym{0x1008FE22, 0x1008FE23} // XF86Next_VMode, XF86Prev_VMode

// keycodesWithKeysyms lists the keycodes of display's keymap that have at
// least one keysym (the keys its layout gives a meaning), and apart those
// whose first keysym the server keeps to itself (serverKeysyms).
func keycodesWithKeysyms(t *testing.T, display string) (keycodes, serverOnly []int) {
	t.Helper()
	km := readKeymap(t, display)
	for i := 0; i < len(km.syms); i += int(km.per) {
		row, kc := km.syms[i:i+int(km.per)], 8+i/int(km.per) // Xvfb's keycodes start at 8
		switch {
		case slices.Contains(serverKeysyms, row[0]):
			serverOnly = append(serverOnly, kc)
		case slices.ContainsFunc(row, func(s xproto.Keysym) bool { return s != 0 }):
			keycodes = append(keycodes, kc)
		}
	}
	return keycodes, serverOnly
}

// TestEveryKeycodeRelayedAsItself (PROTOCOL.md §3.1, keys without a HID
// usage travel as 0xE000 + their evdev code; DESIGN.md invariant 8, keys are
// keys): on two US desktops, every keycode to which the sender's layout
// gives a keysym (227 on Xvfb's us, leaving out two that its X server keeps
// to itself: serverKeysyms), pressed and released on the sender's through
// XTEST and captured by send --input x11 (RECORD), is pressed and released
// on the receiver's by recv --inject x11 as the same keycode, in the same
// order (read back as XInput 2 raw events), so with the same layout it is
// the same keysym; nothing else is pressed, send drops no key, and recv
// injects all of them.
func TestEveryKeycodeRelayedAsItself(t *testing.T) {
	t.Parallel()
	needX(t, "xinput", "setxkbmap")
	displayB, displayA := startXvfb(t), startXvfb(t)
	setLayout(t, displayB, "us")
	setLayout(t, displayA, "us")
	if d := readKeymap(t, displayB).diff(readKeymap(t, displayA)); d != "" {
		t.Fatalf("the two desktops' keymaps differ:\n%s", d)
	}
	kcs, serverOnly := keycodesWithKeysyms(t, displayB)
	if len(kcs) < 200 || slices.Contains(kcs, probeKeycode) {
		t.Fatalf("%d keycodes with keysyms on us (the probe key %d among them: %v)", len(kcs), probeKeycode, slices.Contains(kcs, probeKeycode))
	}
	raw := startRawKeys(t, displayA)
	recv := startWithEnv(t, []string{"DISPLAY=" + displayA}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	send := startWithEnv(t, []string{"DISPLAY=" + displayB}, "send", "--to", recv.addr, "--input", "x11")
	if !send.waitStderr("capturing keys", 10*time.Second) {
		t.Fatalf("send did not start capturing:\n%s", send.stderr)
	}
	local := dialXTest(t, displayB)
	var want []string
	for _, kc := range kcs {
		local.tap(t, byte(kc))
		want = append(want, "+"+strconv.Itoa(kc), "-"+strconv.Itoa(kc))
	}
	got := raw.until(t, len(want))

	// What arrived, keycode by keycode: pressed and released, or not.
	seen := map[string]bool{}
	for _, e := range got {
		seen[e] = true
	}
	var missing, extra []string
	relayed := 0
	for _, kc := range kcs {
		s := strconv.Itoa(kc)
		if seen["+"+s] && seen["-"+s] {
			relayed++
		} else {
			missing = append(missing, s)
		}
	}
	for _, e := range got {
		kc, _ := strconv.Atoi(e[1:])
		if !slices.Contains(kcs, kc) && !slices.Contains(extra, e[1:]) {
			extra = append(extra, e[1:])
		}
	}
	t.Logf("%d of %d keycodes with a keysym relayed as themselves (and %v, whose keysym the sender's X server acts on and delivers to no client)", relayed, len(kcs), serverOnly)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%d of %d keycodes relayed; not relayed: %s; pressed on the receiver but not on the sender: %s",
			relayed, len(kcs), strings.Join(missing, " "), strings.Join(extra, " "))
	} else if !slices.Equal(got, want) {
		t.Errorf("every keycode came, but not as pressed:\n%v\nwant\n%v", got, want)
	}
	noKeyHeld(t, displayA)
	// No window has the focus on the receiver's desktop: the keys reached
	// its X server (what this test reads) and no application, which send
	// reports as undelivered (PROTOCOL.md §9, nowhere), exit 3.
	send.cmd.Process.Signal(syscall.SIGINT)
	if code := send.wait(10 * time.Second); code != 3 {
		t.Errorf("send exited %d, want 3 (keys typed into no application)\n%s", code, send.stderr)
	}
	s := send.stderr.String()
	if !strings.Contains(s, "typed into no application") {
		t.Errorf("send did not say the keys reached no application:\n%s", s)
	}
	if strings.Contains(s, "has no key of its own") {
		t.Errorf("send dropped keys:\n%s", s)
	}
	stopRecv(t, recv)
}
