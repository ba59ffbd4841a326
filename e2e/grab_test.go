//go:build e2e

package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGrabSwitchesBetweenDesktops (send --grab and its hotkey,
// capture.Switch): desktop B relays to desktop A with send --input x11
// --grab --hotkey ScrollLock; an xterm on each side reads its keyboard into
// a file. Keys typed on B reach A and not B's own window; after the hotkey
// they reach B and not A; after it again, A again. Caps Lock turned on
// locally on B in between is on at A when relaying resumes, so the keys
// typed then come out in capitals on A. The hotkey reaches neither side.
func TestGrabSwitchesBetweenDesktops(t *testing.T) {
	t.Parallel()
	needX(t, "xterm")
	displayB, displayA := startXvfb(t), startXvfb(t)
	termA, termB := startXterm(t, displayA), startXterm(t, displayB)
	recv := startWithEnv(t, []string{"DISPLAY=" + displayA}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	send := startWithEnv(t, []string{"DISPLAY=" + displayB}, "send", "--to", recv.addr, "--input", "x11", "--grab", "--hotkey", "ScrollLock")
	// waitMode waits for send's n-th status line saying mode.
	waitMode := func(mode string, n int) {
		t.Helper()
		poll(t, 10*time.Second, "send to say "+mode, func() bool {
			return strings.Count(send.stderr.String(), mode) >= n
		})
	}
	waitMode("relaying to", 1)

	xdotool(t, displayB, "key", "o", "n", "e")
	if got := termA.text(t, "one"); got != "one" {
		t.Errorf("relaying: A's xterm got %q, want \"one\"", got)
	}

	xdotool(t, displayB, "key", "Scroll_Lock")
	waitMode("local use", 1)
	xdotool(t, displayB, "key", "t", "w", "o")
	// B's xterm has had nothing but this: not "one", not the hotkey.
	if got := termB.text(t, "two"); got != "two" {
		t.Errorf("local use: B's xterm got %q, want \"two\" (and nothing relayed before)", got)
	}
	termB.x.setCapsLock(t, true)

	xdotool(t, displayB, "key", "Scroll_Lock")
	waitMode("relaying to", 2)
	xdotool(t, displayB, "key", "t", "h", "r", "e", "e")
	// A got nothing of "two"; its Caps Lock followed B's.
	if got := termA.text(t, "THREE"); got != "THREE" {
		t.Errorf("relaying again: A's xterm got %q, want \"THREE\" (Caps Lock on, as on B; nothing typed locally)", got)
	}
	if !termA.x.lockOn(t) {
		t.Error("A's Caps Lock is off, B's is on")
	}

	xdotool(t, displayB, "key", "Scroll_Lock")
	waitMode("local use", 2)
	xdotool(t, displayB, "key", "z")
	if got := termB.text(t, "Z"); got != "Z" {
		t.Errorf("local use again: B's xterm got %q, want \"Z\" (nothing of \"three\")", got)
	}
	noKeyHeld(t, displayA)
	send.stopWith(syscall.SIGTERM)
	stopRecv(t, recv)
}
