//go:build e2e

package e2e

// The layout tests that need X: recv --inject x11 on German, French and US
// desktops (Xvfb with setxkbmap). They check DESIGN.md invariant 8, keys are
// keys: a physical key arrives as the same physical key on every layout (the
// same X keycode, so the receiver's layout decides the character); a
// character arrives as the same character.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// xtestConn is an X connection with XTEST, for the tests' own probe keys.
type xtestConn struct {
	c    *xgb.Conn
	root xproto.Window
}

func dialXTest(t *testing.T, display string) *xtestConn {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := xtest.Init(c); err != nil {
		t.Fatal(err)
	}
	return &xtestConn{c: c, root: xproto.Setup(c).DefaultScreen(c).Root}
}

// tap presses and releases keycode kc, and returns once the server has
// processed both (a round trip).
func (x *xtestConn) tap(t *testing.T, kc byte) {
	t.Helper()
	xtest.FakeInput(x.c, xproto.KeyPress, kc, 0, x.root, 0, 0, 0)
	xtest.FakeInput(x.c, xproto.KeyRelease, kc, 0, x.root, 0, 0, 0)
	if _, err := xproto.GetInputFocus(x.c).Reply(); err != nil {
		t.Fatal(err)
	}
}

// lockOn reports whether the Lock modifier (Caps Lock) is on.
func (x *xtestConn) lockOn(t *testing.T) bool {
	t.Helper()
	p, err := xproto.QueryPointer(x.c, x.root).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return p.Mask&xproto.ModMaskLock != 0
}

// setCapsLock taps the Caps Lock key (keycode 66, evdev KEY_CAPSLOCK 58 + 8)
// until Caps Lock is as wanted.
func (x *xtestConn) setCapsLock(t *testing.T, on bool) {
	t.Helper()
	if x.lockOn(t) != on {
		x.tap(t, 66)
	}
	if x.lockOn(t) != on {
		t.Fatalf("Caps Lock did not turn %v", on)
	}
}

// setLayout runs setxkbmap on display.
func setLayout(t *testing.T, display string, args ...string) {
	t.Helper()
	cmd := exec.Command("setxkbmap", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setxkbmap %v: %v %s", args, err, out)
	}
}

// probeKeycode is the key the raw key recorder syncs with: keycode 93 (evdev
// KEY_ZENKAKUHANKAKU), which the de, fr and us keymaps leave without keysyms,
// and which no test presses.
const probeKeycode = 93

// rawKeys records the key presses and releases of an X server as XInput 2
// raw events (xinput test-xi2 --root): what reached the server, before any
// layout, as "+52" (keycode 52 pressed) and "-52" (released).
type rawKeys struct {
	x      *xtestConn
	mu     sync.Mutex
	events []string
	from   int // where the events of the current phase start
	notify chan struct{}
}

var eventRE = regexp.MustCompile(`^EVENT type \d+ \((\w+)\)`)
var deviceRE = regexp.MustCompile(`^\s+device: (\d+) \((\d+)\)`)
var detailRE = regexp.MustCompile(`^\s+detail: (\d+)`)

func startRawKeys(t *testing.T, display string) *rawKeys {
	t.Helper()
	r := &rawKeys{x: dialXTest(t, display), notify: make(chan struct{}, 1)}
	cmd := exec.Command("xinput", "test-xi2", "--root")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		sign, master := "", false
		for sc.Scan() {
			l := sc.Text()
			if m := eventRE.FindStringSubmatch(l); m != nil {
				switch m[1] {
				case "RawKeyPress":
					sign = "+"
				case "RawKeyRelease":
					sign = "-"
				default:
					sign = ""
				}
				master = false
				continue
			}
			if m := deviceRE.FindStringSubmatch(l); m != nil {
				// A master device's event names its slave as the
				// source; a slave's own copy, if the server sends
				// one, would count the key twice.
				master = m[1] != m[2]
				continue
			}
			if m := detailRE.FindStringSubmatch(l); m != nil && sign != "" && master {
				r.mu.Lock()
				r.events = append(r.events, sign+m[1])
				r.mu.Unlock()
				sign = ""
				select {
				case r.notify <- struct{}{}:
				default:
				}
			}
		}
	}()
	// xinput selects its events some time after it starts: probe until it
	// reports the probe key.
	deadline := time.Now().Add(15 * time.Second)
	for !r.probe(t, 200*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("xinput test-xi2 reported no key event")
		}
	}
	r.mark()
	return r
}

// probe taps the probe key and reports whether the recorder saw its press
// and release within timeout. Events arrive in order, so then every key the
// server processed before the probe has been recorded too.
func (r *rawKeys) probe(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	// Only events after this call count: the last two events may be an
	// earlier probe's (one that came back after its own wait gave up).
	r.mu.Lock()
	start := len(r.events)
	r.mu.Unlock()
	r.x.tap(t, probeKeycode)
	end := time.After(timeout)
	want := []string{"+" + strconv.Itoa(probeKeycode), "-" + strconv.Itoa(probeKeycode)}
	for {
		r.mu.Lock()
		seen := len(r.events) >= start+2 && slices.Equal(r.events[len(r.events)-2:], want)
		r.mu.Unlock()
		if seen {
			return true
		}
		select {
		case <-r.notify:
		case <-end:
			return false
		}
	}
}

// mark starts a new phase: later calls of until see only later events.
func (r *rawKeys) mark() {
	r.mu.Lock()
	r.from = len(r.events)
	r.mu.Unlock()
}

// until waits for n events of the current phase (or 15 s), then probes, so
// that any event beyond the n is recorded too, and returns the phase's
// events without the probe.
func (r *rawKeys) until(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(15 * time.Second)
wait:
	for {
		r.mu.Lock()
		got := len(r.events) - r.from
		r.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-r.notify:
		case <-deadline:
			break wait
		}
	}
	if !r.probe(t, 10*time.Second) {
		t.Fatal("the probe key never came back from xinput")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Without the probe key's events: a late one of an earlier probe may
	// sit among them. It is a keycode no relayed key uses.
	var out []string
	for _, e := range r.events[r.from:] {
		if e[1:] != strconv.Itoa(probeKeycode) {
			out = append(out, e)
		}
	}
	r.from = len(r.events)
	return out
}

// termFile is an xterm on a display whose terminal, in raw mode, writes
// every byte typed into it to a file: what an application reads from the
// keyboard, after the layout, dead keys and Alt.
type termFile struct {
	x    *xtestConn
	path string
	from int
}

// startXterm starts the xterm at the top left of the screen and moves the
// pointer over it: with no window manager, Xvfb's focus follows the
// pointer. Alt sends ESC (metaSendsEscape), as most terminals do.
func startXterm(t *testing.T, display string) *termFile {
	t.Helper()
	dir := t.TempDir()
	f := &termFile{x: dialXTest(t, display), path: filepath.Join(dir, "typed")}
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command("xterm", "-xrm", "XTerm*metaSendsEscape: true", "-geometry", "80x10+0+0",
		"-e", "sh", "-c", `stty raw -echo && : > "$1" && exec cat > "$2"`, "sh", ready, f.path)
	// C.UTF-8 so the terminal writes UTF-8; xterm's font warnings (without
	// xfonts-base it falls back to the server's built-in font) are noise.
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "LC_ALL=C.UTF-8")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	poll(t, 15*time.Second, "xterm's shell to set the terminal raw", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	xdotool(t, display, "mousemove", "50", "50")
	// The focus: a space (keycode 65 on every layout) reaches the file.
	deadline := time.Now().Add(15 * time.Second)
	for f.read(t) == "" {
		if time.Now().After(deadline) {
			t.Fatal("keys typed on the display do not reach the xterm")
		}
		f.x.tap(t, 65)
		pollFor(200*time.Millisecond, func() bool { return f.read(t) != "" })
	}
	// A probe that took longer than 200 ms may still be on its way: a
	// Return (keycode 36, \r on every layout) typed after them all arrives
	// after them, so the text starts after it.
	f.x.tap(t, 36)
	poll(t, 10*time.Second, "the Return after the focus probe to reach the xterm", func() bool {
		return strings.HasSuffix(f.read(t), "\r")
	})
	f.from = len(f.read(t))
	return f
}

func (f *termFile) read(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// text waits until the terminal got at least len(want) bytes since the last
// call (or 15 s), then types a space and waits for it, so that anything typed
// before is in, and returns the bytes before that space.
func (f *termFile) text(t *testing.T, want string) string {
	t.Helper()
	pollFor(15*time.Second, func() bool { return len(f.read(t))-f.from >= len(want) })
	n := len(f.read(t))
	f.x.tap(t, 65)
	poll(t, 10*time.Second, "the closing space to reach the xterm", func() bool {
		s := f.read(t)
		return len(s) > n && strings.HasSuffix(s, " ")
	})
	s := f.read(t)
	got := s[f.from : len(s)-1]
	f.from = len(s)
	return got
}

// pollFor polls cond every 10 ms until it holds or timeout passes, and
// reports whether it held.
func pollFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// poll is pollFor that fails the test when cond never holds.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !pollFor(timeout, cond) {
		t.Fatalf("waited %v for %s", timeout, what)
	}
}

// keymap is a display's whole keyboard and modifier mapping.
type keymap struct {
	per  byte
	syms []xproto.Keysym
	mods []xproto.Keycode
}

func readKeymap(t *testing.T, display string) keymap {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	setup := xproto.Setup(c)
	km, err := xproto.GetKeyboardMapping(c, setup.MinKeycode, byte(int(setup.MaxKeycode)-int(setup.MinKeycode)+1)).Reply()
	if err != nil {
		t.Fatal(err)
	}
	mm, err := xproto.GetModifierMapping(c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return keymap{per: km.KeysymsPerKeycode, syms: km.Keysyms, mods: mm.Keycodes}
}

// diff lists the keycodes whose keysyms differ between two keymaps of one
// server (whose minimum keycode is 8).
func (k keymap) diff(o keymap) string {
	if k.per != o.per || len(k.syms) != len(o.syms) {
		return fmt.Sprintf("%d keysyms per keycode, %d in all, now %d and %d", k.per, len(k.syms), o.per, len(o.syms))
	}
	var d []string
	for i := 0; i < len(k.syms); i += int(k.per) {
		a, b := k.syms[i:i+int(k.per)], o.syms[i:i+int(k.per)]
		if !slices.Equal(a, b) {
			d = append(d, fmt.Sprintf("keycode %d: %#x, now %#x", 8+i/int(k.per), a, b))
		}
	}
	if !slices.Equal(k.mods, o.mods) {
		d = append(d, fmt.Sprintf("modifier map %v, now %v", k.mods, o.mods))
	}
	return strings.Join(d, "\n")
}

// noKeyHeld fails the test unless display's X server soon holds no key.
func noKeyHeld(t *testing.T, display string) {
	t.Helper()
	if _, ok := untilKeymap(t, display, 2*time.Second, func(h []int) bool { return len(h) == 0 }); !ok {
		t.Errorf("keys still held in the X server: keycodes %v", heldKeycodes(t, display))
	}
}

var summaryRE = regexp.MustCompile(`(\d+) keys injected \((\d+) failed, (\d+) not typable here\)`)

// stopRecv stops recv and checks its summary: every key injected, none
// failed or skipped.
func stopRecv(t *testing.T, recv *proc) {
	t.Helper()
	recv.stop()
	m := summaryRE.FindStringSubmatch(recv.stderr.String())
	if m == nil || m[1] == "0" || m[2] != "0" || m[3] != "0" {
		t.Errorf("recv's summary is not all keys injected:\n%s", recv.stderr)
	}
}

// physicalKeys is a script of physical keys with the X keycodes recv
// --inject x11 must press for each line: evdev code + 8, whatever the
// layout. With a dead key (BracketLeft on fr, Backquote on de) a Space
// follows, so it types its accent alone.
var physicalKeys = []struct {
	line string
	raw  []string
}{
	{"tap KeyZ", []string{"+52", "-52"}},           // KEY_Z 44
	{"tap KeyY", []string{"+29", "-29"}},           // KEY_Y 21
	{"tap Semicolon", []string{"+47", "-47"}},      // KEY_SEMICOLON 39
	{"tap Quote", []string{"+48", "-48"}},          // KEY_APOSTROPHE 40
	{"tap BracketLeft", []string{"+34", "-34"}},    // KEY_LEFTBRACE 26
	{"tap Space", []string{"+65", "-65"}},          // KEY_SPACE 57
	{"tap Minus", []string{"+20", "-20"}},          // KEY_MINUS 12
	{"down ShiftLeft", []string{"+50"}},            // KEY_LEFTSHIFT 42
	{"tap Digit7", []string{"+16", "-16"}},         // KEY_7 8
	{"up ShiftLeft", []string{"-50"}},              //
	{"down AltRight", []string{"+108"}},            // KEY_RIGHTALT 100
	{"tap KeyQ", []string{"+24", "-24"}},           // KEY_Q 16
	{"up AltRight", []string{"-108"}},              //
	{"tap IntlBackslash", []string{"+94", "-94"}},  // KEY_102ND 86
	{"tap Backquote", []string{"+49", "-49"}},      // KEY_GRAVE 41
	{"tap Space", []string{"+65", "-65"}},          //
	{"tap Comma", []string{"+59", "-59"}},          // KEY_COMMA 51
	{"tap Period", []string{"+60", "-60"}},         // KEY_DOT 52
	{"tap Slash", []string{"+61", "-61"}},          // KEY_SLASH 53
	{"tap Digit2", []string{"+11", "-11"}},         // KEY_2 3
	{"tap KeyQ", []string{"+24", "-24"}},           //
	{"tap KeyW", []string{"+25", "-25"}},           // KEY_W 17
	{"tap KeyM", []string{"+58", "-58"}},           // KEY_M 50
	{"tap IntlRo", []string{"+97", "-97"}},         // KEY_RO 89: no keysym on these layouts
	{"tap NumpadAdd", []string{"+86", "-86"}},      // KEY_KPPLUS 78
	{"tap NumpadMultiply", []string{"+63", "-63"}}, // KEY_KPASTERISK 55
	{"tap Enter", []string{"+36", "-36"}},          // KEY_ENTER 28
}

// physicalText is what each layout types for physicalKeys, read from the
// layout's keymap on Xvfb (xmodmap -pke: the keysyms of keycodes 52, 29,
// 47, ...; AltRight is ISO_Level3_Shift on de and fr, Alt_R on us) and the
// Compose rule dead_circumflex + space = ^:
//
//	de: Z→y Y→z ;→ö '→ä [→ü -→ß Shift+7→/ AltGr+Q→@ <→< `→dead ^ ,→, .→. /→- 2→2 Q→q W→w M→m
//	fr: Z→w Y→y ;→m '→ù [→dead ^ -→) Shift+7→7 AltGr+Q→æ <→< `→² ,→; .→: /→! 2→é Q→a W→z M→,
//	us: Z→z Y→y ;→; '→' [→[ -→- Shift+7→& Alt+Q→ESC q <→< `→` ,→, .→. /→/ 2→2 Q→q W→w M→m
//
// IntlRo types nothing, the keypad + and *, Enter \r (raw mode).
var physicalText = map[string]string{
	"de": "yzöäü ß/@<^,.-2qwm+*\r",
	"fr": "wymù^)7æ<² ;:!éaz,+*\r",
	"us": "zy;'[ -&\x1bq<` ,./2qwm+*\r",
}

// TestPhysicalKeysOnLayouts (DESIGN.md invariant 8, keys are keys: a
// physical key arrives as the same physical key on every layout): a script
// of physical keys through recv --inject x11 on a German, a French and a US
// desktop presses exactly the same X keycodes on all three (evdev + 8, read
// back as XInput 2 raw events, every key released), and an xterm on each
// gets what that layout types for those keys.
func TestPhysicalKeysOnLayouts(t *testing.T) {
	t.Parallel()
	needX(t, "xinput", "setxkbmap", "xterm")
	var lines, want []string
	for _, k := range physicalKeys {
		lines = append(lines, k.line)
		want = append(want, k.raw...)
	}
	keys := script(t, strings.Join(lines, "\n")+"\n")
	for _, layout := range []string{"de", "fr", "us"} {
		t.Run(layout, func(t *testing.T) {
			display := startXvfb(t)
			setLayout(t, display, layout)
			raw := startRawKeys(t, display)
			term := startXterm(t, display)
			raw.until(t, 0) // past the xterm's focus probe
			recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
			if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", keys); code != 0 {
				t.Fatalf("send exited %d:\n%s", code, stderr)
			}
			got := raw.until(t, len(want))
			if !slices.Equal(got, want) {
				t.Errorf("raw key events on %s:\n%v\nwant (evdev + 8 on every layout):\n%v", layout, got, want)
			}
			held := map[string]bool{}
			for _, e := range got {
				held[e[1:]] = e[0] == '+'
			}
			for kc, down := range held {
				if down {
					t.Errorf("keycode %s pressed and never released", kc)
				}
			}
			if text := term.text(t, physicalText[layout]); text != physicalText[layout] {
				t.Errorf("the xterm on %s got %q\nwant                %q", layout, text, physicalText[layout])
			}
			noKeyHeld(t, display)
			stopRecv(t, recv)
		})
	}
}

// charText has characters of the layouts' second and third levels, dead-key
// characters, characters no layout here has (spare keycodes: Ω on fr and us,
// 😀 everywhere), letters that move between layouts, and Enter.
const charText = "Grüße é É € @ <>| zy;[ x/y=z? ^`~ Ω😀 AQWZaqwz 1!&\n"

// TestCharactersOnLayouts (DESIGN.md invariant 8, keys are keys: a character
// arrives as the same character): a script's type "…" through recv --inject
// x11 gives exactly that text in an xterm on German, French and US desktops,
// with Caps Lock off and on. A physical KeyX after the text (x on all three
// layouts) types x, then X: Caps Lock is on again after the characters.
// After each recv nothing is held and the keymap is as before recv started
// (the spare keycodes recv mapped characters to are empty again).
func TestCharactersOnLayouts(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap", "xterm")
	keys := script(t, fmt.Sprintf("type %q\ntap KeyX\n", charText))
	for _, layout := range []string{"de", "fr", "us"} {
		t.Run(layout, func(t *testing.T) {
			display := startXvfb(t)
			setLayout(t, display, layout)
			term := startXterm(t, display)
			before := readKeymap(t, display)
			for _, caps := range []bool{false, true} {
				term.x.setCapsLock(t, caps)
				recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
				if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", keys); code != 0 {
					t.Fatalf("send exited %d:\n%s", code, stderr)
				}
				want := strings.ReplaceAll(charText, "\n", "\r") + "x"
				if caps {
					want = want[:len(want)-1] + "X"
				}
				if got := term.text(t, want); got != want {
					t.Errorf("Caps Lock %v: the xterm on %s got %q\nwant                              %q", caps, layout, got, want)
				}
				noKeyHeld(t, display)
				if term.x.lockOn(t) != caps {
					t.Errorf("Caps Lock %v before the text, %v after", caps, !caps)
				}
				// No layout here has 😀: recv typed it through a spare
				// keycode it mapped, which it must give back.
				if before.diff(readKeymap(t, display)) == "" {
					t.Errorf("Caps Lock %v: recv mapped no spare keycode", caps)
				}
				stopRecv(t, recv)
				if d := before.diff(readKeymap(t, display)); d != "" {
					t.Errorf("Caps Lock %v: the keymap after recv exited differs from before it started:\n%s", caps, d)
				}
			}
			term.x.setCapsLock(t, false)
		})
	}
}

// TestHookBetweenGermanDesktops (DESIGN.md invariant 8, keys are keys): two
// German desktops, B the sender's (send --input hook) and A the receiver's
// (recv --inject x11). xdotool types on B the characters of B's German
// layout, so B's X server sees the keys a German typist presses, AltGr
// included; A's xterm gets exactly the text, where robotgo, which presses
// keys by their US characters, types "Yzklop ;' - q "
// (TestRobotgoPhysicalKeysOnGerman). A key held 1.5 s on B is held on A all
// along, and released after.
func TestHookBetweenGermanDesktops(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap", "xterm")
	displayB, displayA := startXvfb(t), startXvfb(t)
	setLayout(t, displayB, "de")
	setLayout(t, displayA, "de")
	term := startXterm(t, displayA)
	recv := startWithEnv(t, []string{"DISPLAY=" + displayA}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	send := startHook(t, displayB, recv.addr)
	const text = "Zyklop öäü ß @ € | <> Grüße"
	xdotool(t, displayB, "type", "--delay", "20", text)
	if got := term.text(t, text); got != text {
		t.Errorf("display A got %q, want %q", got, text)
	}

	holdAcross(t, displayB, displayA, 1500*time.Millisecond)
	noKeyHeld(t, displayA)
	noKeyHeld(t, displayB)
	// xdotool presses AltGr as keycode 92 (<LVL3>, which Xvfb's German
	// keymap lists first for ISO_Level3_Shift); the X11 source relays it as
	// itself (evdev 84, PROTOCOL.md §3.1), ISO_Level3_Shift on A too, so
	// nothing is dropped and @ € | come out.
	if strings.Contains(send.stderr.String(), "has no key of its own") {
		t.Errorf("the hook dropped keys:\n%s", send.stderr)
	}
	send.stopWith(syscall.SIGTERM)
	stopRecv(t, recv)
}

// TestRobotgoPhysicalKeysOnGerman (why --inject x11 is the default): robotgo
// presses a physical key as the character the US layout puts on it, looked
// up in the receiver's layout, so on a German desktop KeyZ presses the
// German Z key (keycode 29) and KeyY the Y key (52): not the keys the sender
// pressed (52, then 29), as DESIGN.md invariant 8 wants.
func TestRobotgoPhysicalKeysOnGerman(t *testing.T) {
	t.Parallel()
	needX(t, "xinput", "setxkbmap")
	display := startXvfb(t)
	setLayout(t, display, "de")
	raw := startRawKeys(t, display)
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "robotgo", "--listen", "127.0.0.1:0")
	if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, "tap KeyZ\ntap KeyY\n")); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, stderr)
	}
	got := raw.until(t, 4)
	if want := []string{"+29", "-29", "+52", "-52"}; !slices.Equal(got, want) {
		t.Errorf("robotgo pressed %v, want %v (KeyZ as the US z, KeyY as the US y)", got, want)
	}
	recv.stop()
}

// TestLayoutChangeKeepsRealKeys (inject.X11's doc: recv follows the
// desktop's keyboard mapping before it touches a keycode, and a layout
// change while recv runs breaks no key, relayed or local): recv --inject x11
// on a US desktop types more characters the layout lacks than it has spare
// keycodes, so that every spare, IntlRo's keycode 97 among them, carries
// one; the desktop then becomes Brazilian (setxkbmap br), where 97 is
// ABNT2's "/ ? °" key. A relayed IntlRo and the desktop's own (XTEST on the
// receiver's display) both type "/", keycode 97 keeps the br layout's
// keysyms, a character br lacks still types through a spare, and recv gives
// its spares back on exit: the keymap is br's again.
func TestLayoutChangeKeepsRealKeys(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap", "xterm")
	display := startXvfb(t)
	setLayout(t, display, "us")
	term := startXterm(t, display)
	us := readKeymap(t, display)
	const intlRo = 97 // KEY_RO 89 + 8: no keysym on us
	spares := 0
	for i := 0; i < len(us.syms); i += int(us.per) {
		kc := 8 + i/int(us.per)
		if kc > 8 && !slices.ContainsFunc(us.syms[i:i+int(us.per)], func(s xproto.Keysym) bool { return s != 0 }) && !slices.Contains(us.mods, xproto.Keycode(kc)) {
			spares++
		}
	}
	// Cyrillic and Greek letters, none on us nor br: one more than the
	// spares, so that every spare is lent once.
	var text []rune
	for _, r := range "абвгдежзийклмнопрстуфхцчшщъыьэюяαβγδεζηθικλμνξοπρστυφχψω" {
		if len(text) > spares {
			break
		}
		text = append(text, r)
	}
	if len(text) <= spares {
		t.Fatalf("%d letters for %d spares", len(text), spares)
	}
	recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
	send := func(line string) {
		t.Helper()
		if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, line+"\n")); code != 0 {
			t.Fatalf("send exited %d:\n%s", code, stderr)
		}
	}
	send(fmt.Sprintf("type %q", string(text)))
	if got := term.text(t, string(text)); got != string(text) {
		t.Fatalf("the xterm on us got %q, want %q", got, string(text))
	}
	lent := readKeymap(t, display)
	if row := lent.syms[(intlRo-8)*int(lent.per):]; row[0] == 0 {
		t.Fatalf("keycode %d carries no character after %d characters through %d spares: the test needs it lent", intlRo, len(text), spares)
	}

	setLayout(t, display, "br")
	br := readKeymap(t, display)
	row := func(k keymap, kc int) []xproto.Keysym { return k.syms[(kc-8)*int(k.per) : (kc-7)*int(k.per)] }
	if ks := row(br, intlRo)[0]; ks != '/' {
		t.Fatalf("keycode %d has %#x on br, want slash", intlRo, ks)
	}
	send("tap IntlRo")
	if got := term.text(t, "/"); got != "/" {
		t.Errorf("a relayed IntlRo typed %q on br, want \"/\"", got)
	}
	term.x.tap(t, intlRo) // the desktop's own keyboard
	if got := term.text(t, "/"); got != "/" {
		t.Errorf("the desktop's own IntlRo typed %q on br after a relayed one, want \"/\"", got)
	}
	if now := readKeymap(t, display); !slices.Equal(row(now, intlRo), row(br, intlRo)) {
		t.Errorf("keycode %d has %#x, the br layout %#x", intlRo, row(now, intlRo), row(br, intlRo))
	}
	send(`type "ж"`)
	if got := term.text(t, "ж"); got != "ж" {
		t.Errorf("'ж' after the layout change typed %q", got)
	}
	noKeyHeld(t, display)
	stopRecv(t, recv)
	if d := br.diff(readKeymap(t, display)); d != "" {
		t.Errorf("the keymap after recv exited is not the br layout's:\n%s", d)
	}
}
