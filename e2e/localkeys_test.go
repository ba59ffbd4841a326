//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// keyProbe is a tiny X client of the local desktop: a passive grab of one
// key (as a desktop's media-key daemon grabs XF86AudioRaiseVolume) and a
// window with the focus, which gets other keys. It records the press and
// release events of the keycodes it is asked about, as "+123" and "-123".
type keyProbe struct {
	mu   sync.Mutex
	seen []string
}

func startKeyProbe(t *testing.T, display string, grab xproto.Keycode, watch ...xproto.Keycode) *keyProbe {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	root := xproto.Setup(c).DefaultScreen(c).Root
	if err := xproto.GrabKeyChecked(c, true, root, xproto.ModMaskAny, grab, xproto.GrabModeAsync, xproto.GrabModeAsync).Check(); err != nil {
		t.Fatal(err)
	}
	win, err := xproto.NewWindowId(c)
	if err != nil {
		t.Fatal(err)
	}
	xproto.CreateWindow(c, 0, win, root, 0, 0, 100, 100, 0, xproto.WindowClassInputOutput, 0,
		xproto.CwEventMask, []uint32{xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease | xproto.EventMaskStructureNotify})
	xproto.MapWindow(c, win)
	p := &keyProbe{}
	mapped := make(chan struct{})
	go func() {
		for {
			e, err := c.WaitForEvent()
			if e == nil && err == nil {
				return
			}
			var kc xproto.Keycode
			var sign string
			switch e := e.(type) {
			case xproto.MapNotifyEvent:
				close(mapped)
				continue
			case xproto.KeyPressEvent:
				kc, sign = e.Detail, "+"
			case xproto.KeyReleaseEvent:
				kc, sign = e.Detail, "-"
			default:
				continue
			}
			if kc == grab || slices.Contains(watch, kc) {
				p.mu.Lock()
				p.seen = append(p.seen, fmt.Sprintf("%s%d", sign, kc))
				p.mu.Unlock()
			}
		}
	}()
	select {
	case <-mapped:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe window was not mapped")
	}
	if err := xproto.SetInputFocusChecked(c, xproto.InputFocusPointerRoot, win, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor waits until the probe has recorded event ("-123").
func (p *keyProbe) waitFor(t *testing.T, event string) {
	t.Helper()
	poll(t, 10*time.Second, "the local desktop to get "+event, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Contains(p.seen, event)
	})
}

// take returns what the probe recorded so far, and forgets it.
func (p *keyProbe) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.seen, " ")
	p.seen = nil
	return s
}

// TestGrabLocalKeysAndDestinationHotkeys checks local keys and destination
// hotkeys (DESIGN.md, Named destinations) end to end, on Xvfb with send
// --input x11 --grab and three log receivers: a destination's local keys act
// on this machine while relaying to it (one taken by a passive grab, as a
// desktop's media-key daemon does, one by the window with the focus) and
// reach no receiver, while other keys go to the receiver; to a destination
// without them the same key is relayed. From local use (the toggle hotkey or
// 'keyrelay switch local') each destination's hotkey takes the keyboard
// again for that destination, and neither the hotkey's keys nor their
// releases reach any receiver.
func TestGrabLocalKeysAndDestinationHotkeys(t *testing.T) {
	needX(t, "xdotool")
	display := startXvfb(t)
	const volUp, volDown = 123, 122 // XF86AudioRaiseVolume, XF86AudioLowerVolume (evdev 115, 114)
	probe := startKeyProbe(t, display, volUp, volDown)
	recvs := logReceivers(t, 3)
	a, b, c := recvs[0], recvs[1], recvs[2]
	var text strings.Builder
	for i, r := range recvs {
		fmt.Fprintf(&text, "[[send.to]]\nname = %q\naddr = %q\nhotkey = \"ControlRight+Digit%d\"\n", string(rune('a'+i)), r.addr, i+1)
		if i == 0 {
			text.WriteString("local-keys = [\"AudioVolumeUp\", \"AudioVolumeDown\"]\n")
		}
		text.WriteString("\n")
	}
	cfg, env := sendConfig(t, text.String())
	send := startWithEnv(t, append(env, "DISPLAY="+display), "send", "--config", cfg, "--input", "x11", "--grab", "--hotkey", "ScrollLock")
	poll(t, 10*time.Second, "send to grab", func() bool { return strings.Contains(send.stderr.String(), "relaying to") })
	x := dialXTest(t, display)

	// Relaying to a: its local keys act here, other keys go to a. Each
	// is waited for: a key pressed in the moment send lets the keyboard
	// go to pass one on acts here, not at the receiver.
	x.tap(t, volUp)
	probe.waitFor(t, "-123")
	x.tap(t, volDown)
	probe.waitFor(t, "-122")
	xdotool(t, display, "key", "q")
	a.expectKeys(t, "KeyQ down", "KeyQ up")
	if got := probe.take(); got != "+123 -123 +122 -122" {
		t.Errorf("the local desktop got %q of the local keys, want +123 -123 +122 -122 (each pressed and released)", got)
	}

	// From local use (the toggle hotkey), b's hotkey targets b.
	toLocal := func(n int) {
		t.Helper()
		xdotool(t, display, "key", "Scroll_Lock")
		poll(t, 10*time.Second, "send to say local use", func() bool { return strings.Count(send.stderr.String(), "local use") >= n })
	}
	grabs := 1
	hotkey := func(digit byte) {
		t.Helper()
		// ControlRight (X keycode 105) and the digit by keycode: xdotool
		// types Control_R with the first keycode that has it.
		x.press(t, 105, true)
		x.tap(t, digit)
		x.press(t, 105, false)
		// Keys typed before send has the keyboard again act here.
		grabs++
		poll(t, 10*time.Second, "send to grab again", func() bool { return strings.Count(send.stderr.String(), "relaying to") >= grabs })
	}
	toLocal(1)
	xdotool(t, display, "key", "z") // acts here
	hotkey(11)
	xdotool(t, display, "key", "w")
	b.expectKeys(t, "KeyW down", "KeyW up")
	// To b, which keeps no key here, AudioVolumeUp is relayed.
	x.tap(t, volUp)
	b.expectKeys(t, "AudioVolumeUp down", "AudioVolumeUp up")

	// From 'keyrelay switch local', c's hotkey targets c.
	if code, out, stderr := runWithEnv(t, env, "switch", "local"); code != 0 || out != "target: local\n" {
		t.Fatalf("keyrelay switch local exited %d:\n%s%s", code, out, stderr)
	}
	poll(t, 10*time.Second, "send to say local use again", func() bool { return strings.Count(send.stderr.String(), "local use") >= 2 })
	hotkey(12)
	xdotool(t, display, "key", "e")
	c.expectKeys(t, "KeyE down", "KeyE up")
	if code, out, stderr := runWithEnv(t, env, "status"); code != 0 || !strings.Contains(out, "target: c") {
		t.Fatalf("keyrelay status exited %d:\n%s%s", code, out, stderr)
	}

	// And a's hotkey back to a, where the local keys act here again.
	toLocal(3)
	hotkey(10)
	xdotool(t, display, "key", "r")
	a.expectKeys(t, "KeyR down", "KeyR up")
	probe.take() // what acted here in local use
	x.tap(t, volUp)
	probe.waitFor(t, "-123")
	if got := probe.take(); got != "+123 -123" {
		t.Errorf("the local desktop got %q, want +123 -123", got)
	}
	send.stopWith(syscall.SIGTERM)
	for _, r := range []struct {
		name string
		p    *proc
	}{{"a", a}, {"b", b}, {"c", c}} {
		if got := keysOnly(r.p.stop()); got != "" {
			t.Errorf("receiver %s logged more (a hotkey's keys, or a local key):\n%s", r.name, got)
		}
	}
}
