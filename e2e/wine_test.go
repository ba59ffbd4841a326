//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/wintest"
)

// TestWine runs the Windows capture and injector (README "Windows") under
// Wine on Xvfb, through the test programs of internal/testutil/wintest, then
// keyrelay.exe itself over loopback UDP with the Linux keyrelay
// (wineNetwork), all in one Wine prefix. winwatch is the window that has
// the focus and prints the key messages it receives.
func TestWine(t *testing.T) {
	t.Parallel()
	start := time.Now()
	env := wintest.Setup(t)
	t.Logf("wine prefix and programs ready in %v", time.Since(start).Round(time.Millisecond))
	// Before any window: none is in the foreground, and the injector says
	// the keys reached no application (Windows.LastReached; PROTOCOL.md §9,
	// why 3), as recv's acks would.
	if out, err := env.Run(t, "tap KeyA\n", "wininject", "-"); err != nil || !strings.Contains(out, "wininject: 2 of 2 key events reached no application") {
		t.Errorf("wininject with no window: %v, want it to say both key events reached no application:\n%s", err, out)
	}
	watch := env.Start(t, "winwatch")
	if !wintest.Wait(watch.Lines, "ready", 60*time.Second) {
		t.Fatal("winwatch did not show its window within 60s")
	}
	env.Focus(t, "keyrelay winwatch")

	// inject: what SendInput gives the focused window, by scan code with
	// the extended bit, and characters with KEYEVENTF_UNICODE.
	t.Run("inject", func(t *testing.T) {
		script := "tap KeyA\ntap ControlRight\ntap ControlLeft\ntap ArrowUp\ntap NumpadEnter\ntap Pause\ntap PrintScreen\nkey shift+KeyB\ntype \"é@😀\"\n"
		out, err := env.Run(t, script, "wininject", "-")
		if err != nil {
			t.Fatalf("wininject: %v\n%s", err, out)
		}
		// winwatch in the foreground: every key event reached it.
		if !strings.Contains(out, "wininject: 0 of ") {
			t.Errorf("wininject with winwatch in the foreground did not say none of the key events missed it:\n%s", out)
		}
		got := wintest.Collect(watch.Lines, time.Second)
		want := []string{
			"WM_KEYDOWN vk=0x41 scan=0x1e ext=0", "WM_CHAR U+0061", "WM_KEYUP vk=0x41 scan=0x1e ext=0",
			"WM_KEYDOWN vk=0x11 scan=0x1d ext=1", "WM_KEYUP vk=0x11 scan=0x1d ext=1",
			"WM_KEYDOWN vk=0x11 scan=0x1d ext=0", "WM_KEYUP vk=0x11 scan=0x1d ext=0",
			"WM_KEYDOWN vk=0x26 scan=0x48 ext=1", "WM_KEYUP vk=0x26 scan=0x48 ext=1",
			"WM_KEYDOWN vk=0x0d scan=0x1c ext=1", "WM_CHAR U+000D", "WM_KEYUP vk=0x0d scan=0x1c ext=1",
			"WM_KEYDOWN vk=0x13 scan=0x45 ext=0", "WM_KEYUP vk=0x13 scan=0x45 ext=0",
			"WM_KEYDOWN vk=0x2c scan=0x37 ext=1", "WM_KEYUP vk=0x2c scan=0x37 ext=1",
			"WM_KEYDOWN vk=0x10 scan=0x2a ext=0", "WM_KEYDOWN vk=0x42 scan=0x30 ext=0", "WM_CHAR U+0042",
			"WM_KEYUP vk=0x42 scan=0x30 ext=0", "WM_KEYUP vk=0x10 scan=0x2a ext=0",
			"WM_CHAR U+00E9", "WM_CHAR U+0040",
		}
		checkInOrder(t, got, want)
		// An emoji is two UTF-16 units, two WM_CHARs (a surrogate pair).
		checkInOrder(t, got, []string{"WM_CHAR U+00E9", "WM_CHAR U+0040", "WM_CHAR U+D83D", "WM_CHAR U+DE00"})
	})

	// locks: SetLocks taps Caps Lock and Num Lock; with Caps Lock on, KeyA
	// types A. Then the test taps Caps Lock back off. (Under Wine a
	// program without a window reads both as off, so wininject taps each
	// time it is asked for on: README "Windows".)
	t.Run("locks", func(t *testing.T) {
		if out, err := env.Run(t, "tap KeyA\n", "wininject", "-locks", "caps,num", "-"); err != nil {
			t.Fatalf("wininject: %v\n%s", err, out)
		}
		got := wintest.Collect(watch.Lines, time.Second)
		checkInOrder(t, got, []string{
			"WM_KEYDOWN vk=0x14 scan=0x3a ext=0", "WM_KEYUP vk=0x14 scan=0x3a ext=0",
			"WM_KEYDOWN vk=0x90 scan=0x45 ext=1", "WM_KEYUP vk=0x90 scan=0x45 ext=1",
			"WM_CHAR U+0041",
		})
		env.Run(t, "tap CapsLock\ntap NumLock\n", "wininject", "-")
		wintest.Collect(watch.Lines, 500*time.Millisecond)
	})

	// capture: keys typed with xdotool reach the hook with their scan
	// codes, as presses and releases, and the window too (no --grab).
	// Keys the injector types are not relayed.
	t.Run("capture", func(t *testing.T) {
		capt := env.Start(t, "wincapture")
		waitHook(t, capt)
		env.Focus(t, "keyrelay winwatch")
		env.Xdotool(t, "key", "a", "Up", "KP_Enter", "Pause", "Print", "Super_L", "shift+b")
		env.Xdotool(t, "keydown", "Control_R", "keyup", "Control_R")
		env.Run(t, "tap KeyZ\n", "wininject", "-")
		got := wintest.Collect(capt.Lines, time.Second)
		checkInOrder(t, got, []string{
			"down KeyA", "up KeyA", "down ArrowUp", "up ArrowUp", "down NumpadEnter", "up NumpadEnter",
			"down Pause", "up Pause", "down PrintScreen", "up PrintScreen", "down MetaLeft", "up MetaLeft",
			"down ShiftLeft", "down KeyB", "up ShiftLeft", "up KeyB", "down ControlRight", "up ControlRight",
		})
		for _, l := range got {
			if strings.Contains(l, "KeyZ") {
				t.Errorf("the injected KeyZ was captured: %q", l)
			}
		}
		w := wintest.Collect(watch.Lines, 500*time.Millisecond)
		checkInOrder(t, w, []string{"WM_CHAR U+0061", "WM_KEYDOWN vk=0x26 scan=0x48 ext=1", "WM_CHAR U+007A"})
	})

	// grab: while relaying, keys are swallowed (the window gets none); the
	// hotkey (both Controls) switches to local use, where keys act here and
	// are not relayed; again, and keys are relayed again.
	t.Run("grab", func(t *testing.T) {
		capt := env.Start(t, "wincapture", "-grab")
		waitHook(t, capt)
		env.Focus(t, "keyrelay winwatch")
		hotkey := []string{"keydown", "Control_L", "keydown", "Control_R", "keyup", "Control_R", "keyup", "Control_L"}
		env.Xdotool(t, "key", "a")
		env.Xdotool(t, hotkey...)
		env.Xdotool(t, "key", "b")
		env.Xdotool(t, hotkey...)
		env.Xdotool(t, "key", "c")
		got := wintest.Collect(capt.Lines, time.Second)
		want := []string{"down KeyA", "up KeyA", "down ControlLeft", "up ControlLeft", "down KeyC", "up KeyC"}
		if !slices.Equal(trimLocks(got), want) {
			t.Errorf("relayed %q, want %q", got, want)
		}
		w := wintest.Collect(watch.Lines, 500*time.Millisecond)
		if chars := wmChars(w); chars != "b" {
			t.Errorf("the window got %q, want only the b typed in local use; messages:\n%s", chars, strings.Join(w, "\n"))
		}
	})
	// routing: with named destinations under --grab (README "Switching"),
	// a destination's local key (x) reaches the window while relaying and
	// is relayed too (the router keeps it from the destinations that list
	// it), while other keys are swallowed; in local use a destination's
	// hotkey (ControlLeft+Digit2) picks it and takes the keyboard again,
	// its Digit2 reaching no side. (Not ControlRight+Digit2, the README's
	// suggestion: under Wine a right Control or Shift typed through XTEST
	// while no Control or Shift is down reaches the hook as the left one's
	// press and then the right one's, which for Control completes the
	// toggle hotkey, both Controls, first; a right Shift even comes marked
	// extended, which DecodeHook skips as a faked Shift. A Windows
	// keyboard's right Control is one event.)
	t.Run("routing", func(t *testing.T) {
		capt := env.Start(t, "wincapture", "-grab", "-local", "KeyX", "-targets", "ControlLeft+Digit1,ControlLeft+Digit2")
		waitHook(t, capt)
		env.Focus(t, "keyrelay winwatch")
		hotkey := []string{"keydown", "Control_L", "keydown", "Control_R", "keyup", "Control_R", "keyup", "Control_L"}
		env.Xdotool(t, "key", "a", "x", "c")
		env.Xdotool(t, hotkey...)
		env.Xdotool(t, "key", "b")
		env.Xdotool(t, "keydown", "Control_L", "keydown", "2", "keyup", "2", "keyup", "Control_L")
		env.Xdotool(t, "key", "d", "x")
		got := trimLocks(wintest.Collect(capt.Lines, time.Second))
		want := []string{
			"down KeyA", "up KeyA", "down KeyX", "up KeyX", "down KeyC", "up KeyC",
			"down ControlLeft", "up ControlLeft", // the hotkey's first key, released at the switch
			"target 1",
			"down KeyD", "up KeyD", "down KeyX", "up KeyX",
		}
		if !slices.Equal(got, want) {
			t.Errorf("relayed %q, want %q", got, want)
		}
		w := wintest.Collect(watch.Lines, 500*time.Millisecond)
		if chars := wmChars(w); chars != "xbx" {
			t.Errorf("the window got %q, want the local key x while relaying, b in local use (then the destination's hotkey: its Digit2 swallowed), x again; messages:\n%s", chars, strings.Join(w, "\n"))
		}
	})
	// end: a source that ends (here after its first event) with a key
	// relayed down releases it at the receiver.
	t.Run("end", func(t *testing.T) {
		capt := env.Start(t, "wincapture", "-grab", "-n", "1")
		waitHook(t, capt)
		env.Focus(t, "keyrelay winwatch")
		env.Xdotool(t, "keydown", "a")
		select {
		case <-capt.Exited:
		case <-time.After(20 * time.Second):
			t.Fatal("wincapture -n 1 did not end within 20s of its first event")
		}
		env.Xdotool(t, "keyup", "a")
		got := trimLocks(wintest.Collect(capt.Lines, 500*time.Millisecond))
		if want := []string{"down KeyA", "up KeyA"}; !slices.Equal(got, want) {
			t.Errorf("relayed %q, want %q", got, want)
		}
		wintest.Collect(watch.Lines, 500*time.Millisecond)
	})
	// idle: the injector types a key after idling as it typed the one
	// before (it has no timeout of its own; this is the script's pause).
	t.Run("idle", func(t *testing.T) {
		if out, err := env.Run(t, "tap KeyA\nsleep 2s\ntap KeyB\n", "wininject", "-"); err != nil {
			t.Fatalf("wininject: %v\n%s", err, out)
		}
		got := wintest.Collect(watch.Lines, time.Second)
		want := []string{"WM_KEYDOWN vk=0x41", "WM_CHAR U+0061", "WM_KEYUP vk=0x41", "WM_KEYDOWN vk=0x42", "WM_CHAR U+0062", "WM_KEYUP vk=0x42"}
		checkInOrder(t, got, want)
		if chars := wmChars(got); chars != "ab" {
			t.Errorf("the window got %q, want ab; messages:\n%s", chars, strings.Join(got, "\n"))
		}
	})
	// killed: the injector's process killed (SIGKILL) while it holds
	// KeyA: nothing repeats it, held or after the kill (Wine, as Windows,
	// makes no auto-repeat of SendInput's keys). What the window got is
	// logged: under Wine 8 no WM_KEYUP either (README's table of a killed
	// recv).
	t.Run("killed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hold.keys")
		if err := os.WriteFile(path, []byte("down KeyA\nsleep 1h\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		inj := env.Start(t, "wininject", "Z:"+path)
		if !wintest.Wait(watch.Lines, "WM_KEYDOWN vk=0x41", 60*time.Second) {
			t.Fatal("the window did not get KeyA within 60s")
		}
		held := wintest.Collect(watch.Lines, time.Second) // a second held, before the kill
		if err := inj.Kill(); err != nil {
			t.Fatal(err)
		}
		<-inj.Exited
		after := wintest.Collect(watch.Lines, 2*time.Second)
		downs := 0
		for _, l := range slices.Concat(held, after) {
			if strings.HasPrefix(l, "WM_KEYDOWN vk=0x41") {
				downs++
			}
		}
		if downs > 0 {
			t.Errorf("KeyA repeated: %d more WM_KEYDOWN while held 1 s and in the 2 s after the kill:\n%s", downs, strings.Join(slices.Concat(held, after), "\n"))
		}
		t.Logf("held 1 s, then killed: the window got %q, then %q", held, after)
		env.Xdotool(t, "key", "a") // a real key's press and release: nothing held after
		wintest.Collect(watch.Lines, 500*time.Millisecond)
	})
	wineNetwork(t, env, watch)
	t.Logf("the Wine run took %v", time.Since(start).Round(time.Millisecond))
}

// waitHook waits for the capture's first status line: the hook is in.
func waitHook(t *testing.T, p *wintest.Proc) {
	t.Helper()
	if !wintest.Wait(p.ErrLines, "keyrelay send:", 60*time.Second) {
		t.Fatal("wincapture did not install its hook within 60s")
	}
}

// wmChars is the text of the WM_CHAR messages among winwatch's lines.
func wmChars(lines []string) string {
	chars := ""
	for _, l := range lines {
		if r, ok := strings.CutPrefix(l, "WM_CHAR U+"); ok {
			var c rune
			fmt.Sscanf(r, "%X", &c)
			chars += string(c)
		}
	}
	return chars
}

func trimLocks(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.TrimSpace(strings.Split(l, " locks=")[0]))
	}
	return out
}

// checkInOrder checks that want's lines come in got in this order (other
// lines may come between).
func checkInOrder(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, l := range got {
		if i < len(want) && strings.HasPrefix(l, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("missing %q (and after it %d more) in:\n%s", want[i], len(want)-i-1, strings.Join(got, "\n"))
	}
}
