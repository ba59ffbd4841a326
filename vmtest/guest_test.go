//go:build vmtest && linux

package vmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bendahl/uinput"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/linux/evdev"
	"github.com/keyrelay/keyrelay/internal/testutil/notebuf"
)

// The guest's timings. Waits are on events, with these as upper bounds;
// software emulation is slow, so they are generous.
const (
	// recvTimeout is recv's --timeout: a silent session's keys are
	// released after it (DESIGN.md invariant 5). recv's default: a
	// shorter one could fire while software emulation stalls send.
	recvTimeout = time.Second
	// arrive bounds how long relayed events may take to reach recv's
	// device, and a process to say something.
	arrive = 10 * time.Second
	// quiet is how long a read waits to see that nothing came. It only
	// makes the read non-blocking in effect: the kernel hands an input
	// event to every reader's buffer inside the write that makes it (the
	// uinput write), so once the source's writes have returned, whatever
	// another reader would ever get of them is already queued.
	quiet = 200 * time.Millisecond
)

// sourceName is the virtual keyboard the guest types on; not
// inject.UinputName, which send --input evdev never reads.
const sourceName = "vmtest source keyboard"

// key is one key event as a device reports it: an evdev code, down or up.
type key struct {
	code uint16
	down bool
}

// keyNames are the keys the checks type, for readable failures.
var keyNames = map[uint16]string{
	uinput.KeyA: "A", uinput.KeyB: "B", uinput.KeyC: "C", uinput.KeyG: "G", uinput.KeyH: "H",
	uinput.KeyK: "K", uinput.KeyX: "X", uinput.KeyY: "Y", uinput.KeyZ: "Z", uinput.Key1: "1",
	uinput.KeyLeftshift: "ShiftLeft", uinput.KeyLeftctrl: "ControlLeft", uinput.KeyRightalt: "AltRight",
	uinput.KeyEnter: "Enter", uinput.KeyUp: "ArrowUp", uinput.KeyF5: "F5", uinput.KeySpace: "Space",
	uinput.KeyBackspace: "Backspace", uinput.KeyScrolllock: "ScrollLock",
	uinput.KeyCapslock: "CapsLock", uinput.KeyQ: "Q", uinput.KeyD: "D", uinput.KeyE: "E", uinput.KeyF: "F",
	uinput.KeyR: "R", uinput.KeyLeftbrace: "BracketLeft", uinput.KeyMinus: "Minus",
}

// grusseScript types "Grüße €" and a character the de layout lacks.
const grusseScript = "type \"Grüße €\u0679\"\n"

// grusseDE is what typing "Grüße €" on the de layout presses: Shift+G,
// r, ü on the key right of P, ß right of 0, e, Space, AltGr+E for €.
var grusseDE = slices.Concat(
	[]key{down(uinput.KeyLeftshift)}, tap(uinput.KeyG), []key{up(uinput.KeyLeftshift)},
	tap(uinput.KeyR, uinput.KeyLeftbrace, uinput.KeyMinus, uinput.KeyE, uinput.KeySpace),
	[]key{down(uinput.KeyRightalt)}, tap(uinput.KeyE), []key{up(uinput.KeyRightalt)},
)

// typeScript runs send --script with script against addr, to its end.
func typeScript(t *testing.T, addr, script string) {
	t.Helper()
	path := "/tmp/script.ks"
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	send := start(t, "send", "--insecure", "--to", addr, "--script", path)
	select {
	case <-send.done:
	case <-time.After(arrive):
		t.Fatalf("send --script did not end within %v:\n%s", arrive, send.output())
	}
}

func (k key) String() string {
	name, ok := keyNames[k.code]
	if !ok {
		name = fmt.Sprintf("evdev %d", k.code)
	}
	if k.down {
		return name + "↓"
	}
	return name + "↑"
}

func down(c int) key { return key{uint16(c), true} }
func up(c int) key   { return key{uint16(c), false} }

// tap is a press and release of each key in turn.
func tap(cs ...int) []key {
	var out []key
	for _, c := range cs {
		out = append(out, down(c), up(c))
	}
	return out
}

// source is the keyboard the guest types on: a uinput device, made as
// recv's is (evdev.CreateKeyboard: with LEDs, which send reads for the lock
// state), read by send like any keyboard.
type source struct {
	kb   *evdev.Virtual
	path string
}

func newSource(t *testing.T) *source {
	t.Helper()
	kb, err := evdev.CreateKeyboard("/dev/uinput", sourceName, inject.MaxUinputKey)
	if err != nil {
		t.Fatalf("creating the source keyboard: %v", err)
	}
	t.Cleanup(func() { kb.Close() })
	// devtmpfs has made the node by the time UI_DEV_CREATE returns.
	return &source{kb: kb, path: findDevice(t, sourceName)}
}

// play types evs, one event and one SYN_REPORT at a time.
func (s *source) play(t *testing.T, evs ...key) {
	t.Helper()
	for _, e := range evs {
		value := int32(0)
		if e.down {
			value = 1
		}
		if err := s.kb.Write(evdev.Event{Type: evdev.EvKey, Code: e.code, Value: value}); err != nil {
			t.Fatalf("typing %v on the source: %v", e, err)
		}
	}
}

// setCapsLED lights or puts out the source's Caps Lock LED, as the desktop
// of the machine send runs on would: send reads it as the lock state.
func (s *source) setCapsLED(t *testing.T, on bool) {
	t.Helper()
	value := int32(0)
	if on {
		value = 1
	}
	if err := s.kb.Write(evdev.Event{Type: evdev.EvLED, Code: evdev.LEDCapsLock, Value: value}); err != nil {
		t.Fatalf("setting the source's Caps Lock LED: %v", err)
	}
}

// findDevice opens each event device to find the one named name.
func findDevice(t *testing.T, name string) string {
	t.Helper()
	paths, err := evdev.List(evdev.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, p := range paths {
		d, err := evdev.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := d.Name()
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n == name {
			return p
		}
		seen = append(seen, fmt.Sprintf("%s (%s)", p, n))
	}
	t.Fatalf("no input device named %q among %v", name, seen)
	return ""
}

// reader reads one event device, as any program may, beside send.
type reader struct {
	what string
	d    *evdev.Device
	buf  []evdev.Event
}

func newReader(t *testing.T, what, path string) *reader {
	t.Helper()
	d, err := evdev.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &reader{what: what, d: d, buf: make([]evdev.Event, 64)}
}

// read returns the key events that come within d, stopping early once it
// has n (and whatever else came with them). Autorepeat (value 2) is not
// an event that was typed or relayed; neither device has it on anyway.
func (r *reader) read(t *testing.T, n int, d time.Duration) []key {
	t.Helper()
	var got []key
	r.d.SetReadDeadline(time.Now().Add(d))
	for len(got) < n {
		m, err := r.d.Read(r.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", r.what, err)
		}
		for _, e := range r.buf[:m] {
			if e.Type == evdev.EvKey && (e.Value == 0 || e.Value == 1) {
				got = append(got, key{e.Code, e.Value == 1})
			}
		}
	}
	return got
}

// repeats reads until n auto-repeats (value 2) of code came, or arrive
// passed, and returns when the first and the last were read.
func (r *reader) repeats(t *testing.T, code int, n int) (first, last time.Time, got int) {
	t.Helper()
	r.d.SetReadDeadline(time.Now().Add(arrive))
	for got < n {
		m, err := r.d.Read(r.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return first, last, got
		}
		if err != nil {
			t.Fatalf("reading %s: %v", r.what, err)
		}
		for _, e := range r.buf[:m] {
			if e.Type == evdev.EvKey && e.Code == uint16(code) && e.Value == 2 {
				if got == 0 {
					first = time.Now()
				}
				last = time.Now()
				got++
			}
		}
	}
	return first, last, got
}

// expectLED waits until the LED is lit (or put out), within arrive: the
// device's LED state, read again after each event that comes (an earlier
// read may have taken the EV_LED event with the keys).
func (r *reader) expectLED(t *testing.T, led uint16, on bool) {
	t.Helper()
	r.d.SetReadDeadline(time.Now().Add(arrive))
	for {
		state, err := r.d.LEDState()
		if err != nil {
			t.Fatal(err)
		}
		if state.Has(int(led)) == on {
			return
		}
		if _, err := r.d.Read(r.buf); err != nil {
			t.Fatalf("%s: LED %d not %v within %v (%v)", r.what, led, on, arrive, err)
		}
	}
}

// checkLockSync checks that Caps Lock follows the sender's through recv's
// keyboard, read by r, and that recv reads the keyboard's LEDs back: it
// taps Caps Lock only where they differ. It leaves the lock off.
// checkKilledSendReleases (DESIGN.md invariant 5): with KeyK held through
// send, send is killed by SIGKILL; r, the keyboard recv types into, sees
// KeyK released by recv's stuck-key timeout, not sooner.
func checkKilledSendReleases(t *testing.T, src *source, r *reader, send *proc) {
	t.Helper()
	src.play(t, down(uinput.KeyK))
	r.expect(t, "held", down(uinput.KeyK))
	send.stop(t, syscall.SIGKILL)
	killed := time.Now()
	// The session's last packet came at most send's resend interval
	// (100ms) before the kill: a release much sooner than recv's --timeout
	// would not be the timeout's; one much later (the bound leaves room
	// for software emulation) would not be either.
	if r.expectWithin(t, recvTimeout+2*time.Second, "send killed by SIGKILL", up(uinput.KeyK)) {
		elapsed := time.Since(killed)
		if elapsed < recvTimeout/2 {
			t.Errorf("released %v after the kill, before recv's --timeout %v", elapsed, recvTimeout)
		}
		t.Logf("released %v after the kill (recv --timeout %v)", elapsed.Round(time.Millisecond), recvTimeout)
	}
	src.play(t, up(uinput.KeyK))
}

func checkLockSync(t *testing.T, src *source, r *reader, startSend func(*testing.T) *proc) {
	t.Helper()
	src.setCapsLED(t, true)
	send := startSend(t)
	r.expect(t, "a session starting with Caps Lock on, the receiver's off", tap(uinput.KeyCapslock)...)
	send.stop(t, syscall.SIGTERM)
	send = startSend(t)
	src.play(t, tap(uinput.KeyX)...)
	r.expect(t, "a session starting with Caps Lock on, the receiver's LED on", tap(uinput.KeyX)...)
	send.stop(t, syscall.SIGTERM)
	src.setCapsLED(t, false)
	send = startSend(t)
	r.expect(t, "a session starting with Caps Lock off, the receiver's on", tap(uinput.KeyCapslock)...)
	send.stop(t, syscall.SIGTERM)
}

// expect checks that exactly want comes next, within arrive.
func (r *reader) expect(t *testing.T, why string, want ...key) {
	t.Helper()
	r.expectWithin(t, arrive, why, want...)
}

// expectWithin checks that exactly want comes next, within d.
func (r *reader) expectWithin(t *testing.T, d time.Duration, why string, want ...key) bool {
	t.Helper()
	if got := r.read(t, len(want), d); !slices.Equal(got, want) {
		t.Errorf("%s: %s reported %v within %v, want exactly %v", why, r.what, got, d, want)
		return false
	}
	return true
}

// none checks that nothing is queued (see quiet).
func (r *reader) none(t *testing.T, why string) {
	t.Helper()
	if got := r.read(t, 1, quiet); len(got) > 0 {
		t.Errorf("%s: %s reported %v, want nothing", why, r.what, got)
	}
}

// drain discards what is queued.
func (r *reader) drain(t *testing.T) { r.read(t, 1<<30, quiet) }

// proc is a keyrelay process the guest started.
type proc struct {
	cmd    *exec.Cmd
	stderr *notebuf.Buffer
	done   chan struct{}
}

func (p *proc) output() string { return p.stderr.String() }

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command("/bin/keyrelay", args...), stderr: notebuf.New(), done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFor waits until the process has said text n times.
func (p *proc) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	deadline := time.After(arrive)
	for strings.Count(p.output(), text) < n {
		select {
		case <-p.stderr.Written():
		case <-p.done:
			if strings.Count(p.output(), text) >= n {
				return
			}
			t.Fatalf("%v exited (%v) before saying %q (%d times):\n%s", p.cmd.Args, p.cmd.ProcessState, text, n, p.output())
		case <-deadline:
			t.Fatalf("%v did not say %q (%d times) within %v:\n%s", p.cmd.Args, text, n, arrive, p.output())
		}
	}
}

// stop sends sig and waits for the process to exit.
func (p *proc) stop(t *testing.T, sig syscall.Signal) *os.ProcessState {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(arrive):
		t.Fatalf("%v did not exit within %v of %v:\n%s", p.cmd.Args, arrive, sig, p.output())
	}
	return p.cmd.ProcessState
}

var listenRE = regexp.MustCompile(`listening on ([^\s,]+)`)

// grabbed is send's status line once it owns the source keyboard.
const grabbed = "relaying (grabbed"

// TestGuest runs in the VM TestVM boots: the built keyrelay on a real kernel
// (DESIGN.md, Packages: vmtest). A virtual source keyboard feeds send
// --input evdev --grab --hotkey ScrollLock, which relays over loopback UDP
// to recv --inject uinput; the checks read recv's uinput keyboard and,
// beside send, the source keyboard itself. They run in order, on one recv
// and its keyboard, each starting with no key down anywhere.
func TestGuest(t *testing.T) {
	if os.Getenv(guestEnv) == "" {
		t.Skip("runs in the VM that TestVM boots")
	}
	src := newSource(t)
	// Opened before send grabs the source: a grab takes the events from
	// every other reader, this one included (EVIOCGRAB).
	local := newReader(t, "the source keyboard's other reader", src.path)

	recv := start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "uinput", "--timeout", recvTimeout.String())
	recv.waitFor(t, "listening on", 1)
	addr := listenRE.FindStringSubmatch(recv.output())[1]
	// recv makes its keyboard before it listens.
	relayed := newReader(t, "recv's uinput keyboard", findDevice(t, inject.UinputName))

	startSend := func(t *testing.T) *proc {
		t.Helper()
		send := start(t, "send", "--insecure", "--to", addr, "--input", "evdev", "--device", src.path, "--grab", "--hotkey", "ScrollLock")
		send.waitFor(t, grabbed, 1)
		return send
	}
	send := startSend(t)
	local.drain(t)

	t.Run("events", func(t *testing.T) {
		// A sequence typed on the source arrives at recv's keyboard
		// exactly: the same keys, downs and ups, in the same order
		// (DESIGN.md invariants 3 and 8), modifiers and overlapping
		// presses included.
		seq := slices.Concat(
			tap(uinput.KeyA),
			[]key{down(uinput.KeyLeftshift)}, tap(uinput.KeyB), []key{up(uinput.KeyLeftshift)},
			[]key{down(uinput.KeyA), down(uinput.KeyC), up(uinput.KeyA), up(uinput.KeyC)},
			tap(uinput.Key1, uinput.KeyEnter, uinput.KeyUp, uinput.KeySpace, uinput.KeyBackspace),
			[]key{down(uinput.KeyLeftctrl)}, tap(uinput.KeyF5), []key{up(uinput.KeyLeftctrl)},
			tap(uinput.KeyRightalt),
		)
		src.play(t, seq...)
		relayed.expect(t, "typed while relaying", seq...)
	})

	t.Run("grab", func(t *testing.T) {
		// While send relays with --grab the keys reach the receiver only:
		// another reader of the source saw nothing of the events check's
		// keys, nor of these.
		src.play(t, tap(uinput.KeyG)...)
		relayed.expect(t, "typed while relaying", tap(uinput.KeyG)...)
		local.none(t, "everything typed while grabbed")
	})

	t.Run("keys", func(t *testing.T) {
		// PROTOCOL.md §3.1: every key code the source keyboard can press (1
		// to 248, all of them keys of keycodemapdb; the hotkey ScrollLock
		// aside), those without a USB HID usage too (84, KEY_REDO,
		// KEY_PRINT, the media keys), comes out of recv's keyboard as the
		// same code, in order. Eight keys at a time: the kernel keeps a few
		// dozen events for a reader (evdev's client buffer) and drops them
		// all when it overflows.
		var codes []int
		for c := 1; c <= 248; c++ {
			if c != uinput.KeyScrolllock {
				codes = append(codes, c)
			}
		}
		for chunk := range slices.Chunk(codes, 8) {
			seq := tap(chunk...)
			src.play(t, seq...)
			if !relayed.expectWithin(t, arrive, "every key typed while relaying", seq...) {
				return
			}
		}
		// The sweep tapped Caps Lock and Num Lock once each, and the
		// console's keyboard handler toggled its lock state (and recv's
		// keyboard's LEDs): tapped again, the checks after this one start
		// from the state they had before it.
		restore := tap(uinput.KeyCapslock, uinput.KeyNumlock)
		src.play(t, restore...)
		relayed.expect(t, "Caps Lock and Num Lock tapped back", restore...)
		local.none(t, "every key typed while grabbed")
	})

	t.Run("hotkey", func(t *testing.T) {
		// ScrollLock switches to local use: send drops its grab at the
		// press, so the release is the first thing the source's other
		// reader sees; the keys typed then act locally and are not
		// relayed. ScrollLock again relays again; the hotkey reaches
		// neither side.
		src.play(t, down(uinput.KeyScrolllock))
		send.waitFor(t, "local use (ScrollLock to relay)", 1)
		local.none(t, "the hotkey's press, still grabbed")
		src.play(t, up(uinput.KeyScrolllock))
		typed := tap(uinput.KeyX, uinput.KeyY)
		src.play(t, typed...)
		local.expect(t, "local use", slices.Concat([]key{up(uinput.KeyScrolllock)}, typed)...)

		// The grab is taken again once no key is down: after the
		// hotkey's release, which the local reader sees too.
		src.play(t, tap(uinput.KeyScrolllock)...)
		send.waitFor(t, grabbed, 2)
		local.expect(t, "the hotkey in local use", tap(uinput.KeyScrolllock)...)
		src.play(t, tap(uinput.KeyZ)...)
		// Z is the next thing recv's keyboard reports: nothing of the
		// local keys, nor the hotkey, came before it.
		relayed.expect(t, "relaying again", tap(uinput.KeyZ)...)
		local.none(t, "typed after relaying resumed")

		// Back and forth again, the hotkey tapped at full speed in local
		// use: the kernel clears a key's state before it hands the
		// release to readers, so a grab taken on the state alone could
		// take ScrollLock's release from the local system (a CI run saw
		// it once). Repeated to give that window its chances.
		for i := range 20 {
			src.play(t, down(uinput.KeyScrolllock))
			send.waitFor(t, "local use (ScrollLock to relay)", 2+i)
			src.play(t, up(uinput.KeyScrolllock))
			src.play(t, tap(uinput.KeyScrolllock)...)
			send.waitFor(t, grabbed, 3+i)
			if !local.expectWithin(t, arrive, fmt.Sprintf("round %d of the hotkey to local use and back", i+1),
				up(uinput.KeyScrolllock), down(uinput.KeyScrolllock), up(uinput.KeyScrolllock)) {
				break
			}
		}
		relayed.none(t, "the hotkey, switching back and forth")
	})

	t.Run("sigterm", func(t *testing.T) {
		// DESIGN.md invariant 6: send ending on SIGTERM with a key held
		// sends the all-up state first; recv's keyboard reports the
		// release (no key stuck at the receiver).
		src.play(t, down(uinput.KeyH))
		relayed.expect(t, "held", down(uinput.KeyH))
		if st := send.stop(t, syscall.SIGTERM); st.ExitCode() != 0 {
			t.Errorf("send exited %v on SIGTERM, want 0:\n%s", st, send.output())
		}
		relayed.expect(t, "send stopped by SIGTERM", up(uinput.KeyH))
		src.play(t, up(uinput.KeyH))
		local.drain(t) // H's release: send no longer grabs the source
	})

	t.Run("sigkill", func(t *testing.T) {
		// DESIGN.md invariant 5: a send killed with a key held says
		// nothing more; recv releases the key once the session has been
		// silent for its --timeout.
		send := startSend(t)
		checkKilledSendReleases(t, src, relayed, send)
	})

	t.Run("repeat", func(t *testing.T) {
		// recv's keyboard auto-repeats as a real one does (EV_REP): a
		// held key repeats at the kernel's rate, 250 ms, then every
		// 33 ms, for every reader (the console, X, a compositor).
		send := startSend(t)
		src.play(t, down(uinput.KeyA))
		relayed.expect(t, "held", down(uinput.KeyA))
		held := time.Now()
		first, last, n := relayed.repeats(t, uinput.KeyA, 10)
		if n < 10 {
			t.Fatalf("%d repeats of the held key within %v, want 10", n, arrive)
		}
		delay, period := first.Sub(held), last.Sub(first)/time.Duration(n-1)
		t.Logf("first repeat %v after the press, then every %v (%d read)", delay.Round(time.Millisecond), period.Round(time.Millisecond), n)
		// Loose bounds: software emulation is slow, but a repeat of
		// the receiver's own making (none) or none at all is caught.
		if delay < 150*time.Millisecond || delay > 2*time.Second || period < 15*time.Millisecond || period > 200*time.Millisecond {
			t.Errorf("repeat delay %v, period %v: want about 250ms and 33ms", delay, period)
		}
		src.play(t, up(uinput.KeyA))
		relayed.expect(t, "released", up(uinput.KeyA))
		send.stop(t, syscall.SIGTERM)
	})

	t.Run("leds", func(t *testing.T) {
		// recv's keyboard has LEDs: Caps Lock typed through it lights
		// LED_CAPSL (here the console's keyboard handler does, as X or a
		// compositor would), which recv reads back for lock sync.
		send := startSend(t)
		// What a failure needs to be understood: the LEDs, the sessions.
		t.Cleanup(func() {
			if t.Failed() {
				st, _ := relayed.d.LEDState()
				sst, _ := local.d.LEDState()
				// The LEDs last: CI shows the end of a failing run's output.
				t.Logf("recv:\n%s\nsend:\n%s\nLEDs lit: recv's keyboard %v, the source %v", recv.output(), send.output(), st.Set(), sst.Set())
			}
		})
		for _, on := range []bool{true, false} {
			src.play(t, tap(uinput.KeyCapslock)...)
			relayed.expect(t, "Caps Lock typed", tap(uinput.KeyCapslock)...)
			relayed.expectLED(t, evdev.LEDCapsLock, on)
		}
		send.stop(t, syscall.SIGTERM)
	})

	t.Run("locks", func(t *testing.T) {
		// PROTOCOL.md §3.2 on uinput: a sender whose Caps Lock is on
		// starts a session; recv's keyboard's LED is off, so recv taps
		// Caps Lock, and the console lights the LED. The next session,
		// the LED read back says on already: no tap, only the key typed.
		checkLockSync(t, src, relayed, startSend)
	})

	t.Run("local-keys", func(t *testing.T) {
		// DESIGN.md's Named destinations on a real kernel: send --input
		// evdev --grab to a destination whose local-keys has AudioVolumeUp
		// passes it to this machine through a uinput keyboard of its own,
		// down while held (push-to-talk), while the keys typed meanwhile go
		// to recv and neither reaches the other side. From local use, the
		// destination's hotkey takes the keyboard again for it; its keys act
		// here only.
		cfg := filepath.Join(t.TempDir(), "config.toml")
		text := fmt.Sprintf("[[send.to]]\nname = \"r\"\naddr = %q\nhotkey = \"ControlRight+Digit1\"\nlocal-keys = [\"AudioVolumeUp\"]\n", addr)
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		local.drain(t) // what the checks before typed while no send grabbed the source
		send := start(t, "send", "--insecure", "--config", cfg, "--input", "evdev", "--device", src.path, "--grab", "--hotkey", "ScrollLock")
		send.waitFor(t, grabbed, 1)
		send.waitFor(t, "local keys act here through the virtual keyboard", 1)
		here := newReader(t, "send's keyboard of local keys", findDevice(t, capture.LocalKeysName))

		src.play(t, down(uinput.KeyVolumeup))
		here.expect(t, "the local key pressed", down(uinput.KeyVolumeup))
		src.play(t, tap(uinput.KeyA)...)
		relayed.expect(t, "typed while the local key is held", tap(uinput.KeyA)...)
		here.none(t, "typed while the local key is held")
		src.play(t, up(uinput.KeyVolumeup))
		here.expect(t, "the local key released", up(uinput.KeyVolumeup))
		relayed.none(t, "the local key")
		local.none(t, "everything typed while grabbed")

		src.play(t, down(uinput.KeyScrolllock))
		send.waitFor(t, "local use (ScrollLock to relay)", 1)
		src.play(t, up(uinput.KeyScrolllock))
		local.expect(t, "the hotkey's release in local use", up(uinput.KeyScrolllock))
		hotkey := []key{down(uinput.KeyRightctrl), down(uinput.Key1), up(uinput.Key1), up(uinput.KeyRightctrl)}
		src.play(t, hotkey...)
		send.waitFor(t, grabbed, 2)
		local.expect(t, "the destination's hotkey in local use", hotkey...)
		src.play(t, tap(uinput.KeyB)...)
		// B is the next thing recv's keyboard reports: nothing of the
		// destination's hotkey came before it.
		relayed.expect(t, "relaying again after the destination's hotkey", tap(uinput.KeyB)...)
		local.none(t, "typed after relaying resumed")
		here.none(t, "the hotkey and B")
		send.stop(t, syscall.SIGTERM)
	})

	t.Run("idle", func(t *testing.T) {
		// recv --inject uinput idle past each timeout there is (its
		// --timeout, the kernel's repeat delay) types the next key as
		// the first: pressed, released, not repeated.
		send := startSend(t)
		checkIdle(t, src, relayed)
		send.stop(t, syscall.SIGTERM)
	})

	if st := recv.stop(t, syscall.SIGTERM); st.ExitCode() != 0 {
		t.Errorf("recv exited %v on SIGTERM, want 0:\n%s", st, recv.output())
	}

	t.Run("layout", func(t *testing.T) {
		// recv --inject uinput --layout de (DESIGN.md, Data flow;
		// PROTOCOL.md §3.1): a script's characters come out of recv's
		// keyboard as the keys the German layout types them with, Shift and
		// AltGr included; a character de lacks is reported and nothing
		// typed.
		recv := start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "uinput", "--layout", "de", "--timeout", recvTimeout.String())
		recv.waitFor(t, "listening on", 1)
		recv.waitFor(t, "characters are typed through the layout de (German): the target must use it", 1)
		addr := listenRE.FindStringSubmatch(recv.output())[1]
		relayed := newReader(t, "recv's uinput keyboard with --layout de", findDevice(t, inject.UinputName))
		typeScript(t, addr, grusseScript)
		relayed.expect(t, `type "Grüße €" on de`, grusseDE...)
		relayed.none(t, "a character de lacks")
		recv.waitFor(t, "uinput cannot type some characters (the layout de has no key for it", 1)
		recv.stop(t, syscall.SIGTERM)
	})

	t.Run("recv-sigkill", func(t *testing.T) {
		// recv --inject uinput killed by SIGKILL while it holds a key
		// the kernel repeats: the uinput device goes with recv's file,
		// and the kernel releases its keys (input_unregister_device) and
		// stops its repeat. Nothing repeats the key after.
		recv := start(t, "recv", "--insecure", "--listen", "127.0.0.1:0", "--inject", "uinput", "--timeout", recvTimeout.String())
		recv.waitFor(t, "listening on", 1)
		addr := listenRE.FindStringSubmatch(recv.output())[1]
		relayed := newReader(t, "recv's uinput keyboard", findDevice(t, inject.UinputName))
		send := start(t, "send", "--insecure", "--to", addr, "--input", "evdev", "--device", src.path, "--grab", "--hotkey", "ScrollLock")
		send.waitFor(t, grabbed, 1)
		checkKilledRecv(t, src, relayed, recv, uinput.KeyK)
		send.stop(t, syscall.SIGKILL) // its receiver is gone: nothing to linger for
	})

	runHidg(t, src)
}
