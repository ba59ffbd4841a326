//go:build vmtest && linux

package vmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bendahl/uinput"

	"github.com/keyrelay/keyrelay/internal/linux/evdev"
	"github.com/keyrelay/keyrelay/internal/usb/gadget"
)

// hostKeyboardName is the name the guest's USB host gives the gadget's
// keyboard: its manufacturer and product strings.
const hostKeyboardName = gadget.Manufacturer + " " + gadget.Product

// hidgChecks are TestGuest's checks of recv --inject hidg, in order.
var hidgChecks = []string{"hidg-setup", "hidg-events", "hidg-rollover", "hidg-locks", "hidg-unconfigured", "hidg-idle", "hidg-sigterm", "hidg-sigkill", "hidg-recv-exit", "hidg-recv-sigkill", "hidg-layout", "hidg-remove"}

// waitDevice waits for an event device named name to appear (the USB host
// enumerates the gadget on its own time) and returns its path.
func waitDevice(t *testing.T, name string) string {
	t.Helper()
	w, err := evdev.Watch(evdev.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	find := func() string {
		paths, _ := evdev.List(evdev.Dir)
		for _, p := range paths {
			d, err := evdev.Open(p)
			if err != nil {
				continue
			}
			n, _ := d.Name()
			d.Close()
			if n == name {
				return p
			}
		}
		return ""
	}
	found := make(chan string, 1)
	go func() {
		for {
			if p := find(); p != "" {
				found <- p
				return
			}
			if _, err := w.Next(); err != nil {
				return
			}
		}
	}()
	select {
	case p := <-found:
		return p
	case <-time.After(arrive):
		t.Fatalf("no input device named %q within %v", name, arrive)
		return ""
	}
}

// hostUSBDevice is the gadget's directory under /sys/bus/usb/devices, as
// the guest's USB host sees it.
func hostUSBDevice(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob("/sys/bus/usb/devices/*")
	for _, d := range dirs {
		v, _ := os.ReadFile(filepath.Join(d, "idVendor"))
		p, _ := os.ReadFile(filepath.Join(d, "idProduct"))
		if strings.TrimSpace(string(v)) == "1d6b" && strings.TrimSpace(string(p)) == "0104" {
			return d
		}
	}
	t.Fatalf("the USB host has no device 1d6b:0104 among %v", dirs)
	return ""
}

// runHidg runs the hidg checks: the gadget made on dummy_hcd's controller,
// whose host side is this same kernel; send relays the source keyboard to
// recv --inject hidg, and the checks read the keyboard the USB host made of
// the gadget, as any program on the computer typed into would.
func runHidg(t *testing.T, src *source) {
	var host *reader
	var recv *proc
	var addr string
	startSend := func(t *testing.T) *proc {
		t.Helper()
		send := start(t, "send", "--insecure", "--to", addr, "--input", "evdev", "--device", src.path, "--grab", "--hotkey", "ScrollLock")
		send.waitFor(t, grabbed, 1)
		return send
	}
	var send *proc

	// Made here, not in a check: what the checks share must outlive each
	// of them (a subtest's cleanups run when it ends).
	out, err := exec.Command("/bin/keyrelay", "gadget", "setup", "--udc", "dummy_udc.0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/dev/hidg0") {
		t.Fatalf("keyrelay gadget setup: %v\n%s", err, out)
	}
	host = newReader(t, "the USB host's keyboard", waitDevice(t, hostKeyboardName))
	recv = start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "hidg", "--device", "/dev/hidg0", "--timeout", recvTimeout.String())
	recv.waitFor(t, "listening on", 1)
	addr = listenRE.FindStringSubmatch(recv.output())[1]
	send = startSend(t)
	parent := t

	t.Run("hidg-setup", func(t *testing.T) {
		// keyrelay gadget setup made a keyboard the USB host took: its
		// input device is there, named by the gadget's strings.
		t.Logf("%s; the host's keyboard: %s", strings.TrimSpace(string(out)), host.d.Path())
	})

	t.Run("hidg-events", func(t *testing.T) {
		// Each key event is one report with the whole state; the host
		// makes the same events of them, in order (DESIGN.md invariants
		// 3 and 8): modifiers, AltGr and overlapping presses included.
		seq := slices.Concat(
			tap(uinput.KeyA),
			[]key{down(uinput.KeyLeftshift)}, tap(uinput.KeyB), []key{up(uinput.KeyLeftshift)},
			[]key{down(uinput.KeyA), down(uinput.KeyC), up(uinput.KeyA), up(uinput.KeyC)},
			tap(uinput.Key1, uinput.KeyEnter, uinput.KeyUp, uinput.KeySpace, uinput.KeyBackspace),
			[]key{down(uinput.KeyLeftctrl)}, tap(uinput.KeyF5), []key{up(uinput.KeyLeftctrl)},
			[]key{down(uinput.KeyRightalt)}, tap(uinput.KeyQ), []key{up(uinput.KeyRightalt)},
		)
		src.play(t, seq...)
		host.expect(t, "typed through the gadget", seq...)
	})

	t.Run("hidg-rollover", func(t *testing.T) {
		// Eight keys held: the host sees the first six; the seventh and
		// eighth make reports of ErrorRollOver, which change nothing at
		// the host (HID 1.11 appendix C). Releasing the first two brings
		// the count back to six: the host sees them go and the last two
		// come, and nothing still held is released.
		eight := []int{uinput.KeyA, uinput.KeyB, uinput.KeyC, uinput.KeyD, uinput.KeyE, uinput.KeyF, uinput.KeyG, uinput.KeyH}
		var downs []key
		for _, c := range eight {
			downs = append(downs, down(c))
		}
		src.play(t, downs...)
		host.expect(t, "eight keys pressed", downs[:6]...)
		src.play(t, up(uinput.KeyA), up(uinput.KeyB))
		host.expect(t, "back to six keys", up(uinput.KeyA), up(uinput.KeyB), down(uinput.KeyG), down(uinput.KeyH))
		var ups []key
		for _, c := range eight[2:] {
			ups = append(ups, up(c))
		}
		src.play(t, ups...)
		host.expect(t, "the rest released", ups...)
	})

	t.Run("hidg-locks", func(t *testing.T) {
		// PROTOCOL.md §3.2 through the gadget: the sender's Caps Lock on,
		// the host's off: recv taps it, the host lights its LED and
		// tells the gadget (an LED output report); the next session recv
		// knows it is on and taps nothing.
		send.stop(t, syscall.SIGTERM)
		checkLockSync(t, src, host, startSend)
		send = startSend(parent)
	})

	t.Run("hidg-unconfigured", func(t *testing.T) {
		// The host takes the gadget's configuration away (as when it
		// sleeps or the cable is pulled): recv says so, once, and keeps
		// running; configured again, the next key is typed. The tap
		// typed meanwhile reached no USB host, and recv's acks say so
		// (PROTOCOL.md §9, why 2): send names it at once, and exits 3
		// at the end counting it typed into no application.
		dev := hostUSBDevice(t)
		cfg := filepath.Join(dev, "bConfigurationValue")
		if err := os.WriteFile(cfg, []byte("0"), 0); err != nil {
			t.Fatal(err)
		}
		src.play(t, tap(uinput.KeyX)...)
		recv.waitFor(t, "the USB host has not configured the keyboard gadget /dev/hidg0", 1)
		recv.waitFor(t, "unable to inject a key event (2 failed so far", 1)
		send.waitFor(t, "types into no application: the USB host took none of the keyboard gadget's reports there", 1)
		if err := os.WriteFile(cfg, []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
		host = newReader(parent, "the USB host's keyboard, configured again", waitDevice(t, hostKeyboardName))
		src.play(t, tap(uinput.KeyY)...)
		host.expect(t, "typed once configured again", tap(uinput.KeyY)...)
		recv.waitFor(t, "reads the keyboard gadget /dev/hidg0 again", 1)
		st := send.stop(t, syscall.SIGTERM)
		const want = "2 of 4 key events were typed into no application, because the USB host took none of the keyboard gadget's reports there"
		if st.ExitCode() != 3 || !strings.Contains(send.output(), want) {
			t.Errorf("send exited %v, want 3 saying %q:\n%s", st, want, send.output())
		}
		send = startSend(parent)
	})

	t.Run("hidg-idle", func(t *testing.T) {
		// recv --inject hidg idle past each timeout there is (its
		// --timeout, the report write's) types the next key as the
		// first: the host's keyboard reports it pressed, released, not
		// repeated.
		dev := hostUSBDevice(t)
		control, _ := os.ReadFile(filepath.Join(dev, "power", "control"))
		delay, _ := os.ReadFile(filepath.Join(dev, "power", "autosuspend_delay_ms"))
		t.Logf("the host's USB power control of the gadget: %s, autosuspend delay %s ms", strings.TrimSpace(string(control)), strings.TrimSpace(string(delay)))
		checkIdle(t, src, host)
	})

	t.Run("hidg-sigterm", func(t *testing.T) {
		// DESIGN.md invariant 6 through the gadget: send's all-up state
		// is a report with nothing held.
		src.play(t, down(uinput.KeyH))
		host.expect(t, "held", down(uinput.KeyH))
		if st := send.stop(t, syscall.SIGTERM); st.ExitCode() != 0 {
			t.Errorf("send exited %v on SIGTERM, want 0:\n%s", st, send.output())
		}
		host.expect(t, "send stopped by SIGTERM", up(uinput.KeyH))
		src.play(t, up(uinput.KeyH))
	})

	t.Run("hidg-sigkill", func(t *testing.T) {
		// DESIGN.md invariant 5 through the gadget: recv's stuck-key
		// timeout releases the key of a killed sender.
		send = startSend(t)
		checkKilledSendReleases(t, src, host, send)
	})

	t.Run("hidg-recv-exit", func(t *testing.T) {
		// recv stopped with a key held releases it at the host: a clean
		// exit leaves nothing down (the receiver's release, then Close's
		// all-up report).
		send = startSend(t)
		src.play(t, down(uinput.KeyZ))
		host.expect(t, "held", down(uinput.KeyZ))
		if st := recv.stop(t, syscall.SIGTERM); st.ExitCode() != 0 {
			t.Errorf("recv exited %v on SIGTERM, want 0:\n%s", st, recv.output())
		}
		host.expect(t, "recv stopped by SIGTERM", up(uinput.KeyZ))
		send.stop(t, syscall.SIGTERM)
		src.play(t, up(uinput.KeyZ))
	})

	t.Run("hidg-recv-sigkill", func(t *testing.T) {
		// recv --inject hidg killed by SIGKILL while it holds a key the
		// host repeats: the host keeps the gadget's last report until
		// the next, and recv's guard sends the empty one. The host's
		// keyboard reports the release, and nothing after it.
		recv := start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "hidg", "--device", "/dev/hidg0", "--timeout", recvTimeout.String())
		recv.waitFor(t, "listening on", 1)
		addr = listenRE.FindStringSubmatch(recv.output())[1]
		send = startSend(t)
		checkKilledRecv(t, src, host, recv, uinput.KeyK)
		send.stop(t, syscall.SIGKILL) // its receiver is gone: nothing to linger for
		t.Logf("recv said: %s", lastLine(recv.output()))
	})

	t.Run("hidg-layout", func(t *testing.T) {
		// recv --inject hidg --layout de (DESIGN.md, Data flow): the host's
		// keyboard reports the keys the German layout types "Grüße €" with,
		// Shift and AltGr in their own reports before the key; a character
		// de lacks is reported, nothing typed.
		recv := start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "hidg", "--device", "/dev/hidg0", "--layout", "de", "--timeout", recvTimeout.String())
		recv.waitFor(t, "listening on", 1)
		addr := listenRE.FindStringSubmatch(recv.output())[1]
		typeScript(t, addr, grusseScript)
		host.expect(t, `type "Grüße €" on de through the gadget`, grusseDE...)
		host.none(t, "a character de lacks")
		recv.waitFor(t, "hidg cannot type some characters (the layout de has no key for it", 1)
		recv.stop(t, syscall.SIGTERM)
	})

	t.Run("hidg-remove", func(t *testing.T) {
		out, err := exec.Command("/bin/keyrelay", "gadget", "remove").CombinedOutput()
		if err != nil {
			t.Fatalf("keyrelay gadget remove: %v\n%s", err, out)
		}
		if _, err := os.Stat("/sys/kernel/config/usb_gadget/keyrelay"); !os.IsNotExist(err) {
			t.Errorf("the gadget is still in configfs after remove (%v)", err)
		}
		if _, err := os.Stat("/dev/hidg0"); !os.IsNotExist(err) {
			t.Errorf("/dev/hidg0 is still there after remove (%v)", err)
		}
	})
}

// lastLine is the last line of text.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return lines[len(lines)-1]
}
