package inject

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/internal/testutil/xvfbtest"
	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
	"github.com/keyrelay/keyrelay/keys"
)

// xvfb starts a virtual X server for one test or benchmark and points
// DISPLAY at it.
func xvfb(t testing.TB) string {
	t.Helper()
	d := xvfbtest.Start(t)
	t.Setenv("DISPLAY", d)
	return d
}

// xconn is a second client of the test's X server, to look at what X11 did.
func xconn(t *testing.T) *xgb.Conn {
	t.Helper()
	xquiet.Quiet()
	c, err := xgb.NewConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// pressed lists the keycodes the server holds down.
func pressed(t *testing.T, c *xgb.Conn) []int {
	t.Helper()
	km, err := xproto.QueryKeymap(c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for kc := range 256 {
		if km.Keys[kc/8]&(1<<(kc%8)) != 0 {
			out = append(out, kc)
		}
	}
	return out
}

// keymapOf reads the whole core keymap.
func keymapOf(t *testing.T, c *xgb.Conn) []xproto.Keysym {
	t.Helper()
	s := xproto.Setup(c)
	km, err := xproto.GetKeyboardMapping(c, s.MinKeycode, byte(int(s.MaxKeycode)-int(s.MinKeycode)+1)).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return km.Keysyms
}

// sync makes sure the server has processed what x sent.
func (x *X11) sync() { x.keys.sync() }

func newX11(t *testing.T) *X11 {
	t.Helper()
	x, err := NewX11(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func inj(t *testing.T, x *X11, k keys.Key, down bool) {
	t.Helper()
	if err := x.Inject(Event{Key: k, Down: down}); err != nil {
		t.Fatalf("Inject(%v, %v): %v", k, down, err)
	}
	x.sync()
}

func setxkbmap(t *testing.T, layout string) {
	t.Helper()
	if _, err := exec.LookPath("setxkbmap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("setxkbmap missing in CI: .ci/run must install x11-xkb-utils")
		}
		t.Skip("needs setxkbmap (apt-get install x11-xkb-utils)")
	}
	if out, err := exec.Command("setxkbmap", layout).CombinedOutput(); err != nil {
		t.Fatalf("setxkbmap %s: %v %s", layout, err, out)
	}
}

// TestX11PhysicalKeys: a physical key is pressed as its evdev code + 8
// (DESIGN.md invariant 8, keys are keys): KeyZ is keycode 52, AltRight 108,
// IntlBackslash 94, whatever the layout; held until released.
func TestX11PhysicalKeys(t *testing.T) {
	xvfb(t)
	c := xconn(t)
	x := newX11(t)
	for _, tc := range []struct {
		code keys.Code
		kc   int
	}{{keys.KeyZ, 52}, {keys.KeyY, 29}, {keys.AltRight, 108}, {keys.IntlBackslash, 94}, {keys.ShiftLeft, 50}, {keys.Enter, 36}, {keys.IntlRo, 97}} {
		inj(t, x, keys.Key(tc.code), true)
		if got := pressed(t, c); !slices.Equal(got, []int{tc.kc}) {
			t.Errorf("%v down: keycodes %v held, want [%d]", tc.code, got, tc.kc)
		}
		inj(t, x, keys.Key(tc.code), false)
		if got := pressed(t, c); len(got) != 0 {
			t.Errorf("%v up: keycodes %v still held", tc.code, got)
		}
	}
	// A key without an X keycode is not typed as anything else.
	if err := x.Inject(Event{Key: keys.Key(0x0300), Down: true}); !errors.Is(err, ErrCannotType) {
		t.Errorf("a key with no evdev code: %v, want ErrCannotType", err)
	}
}

// TestX11CharactersFollowTheKeymap: a character is pressed where the
// current layout has it, with the Shift or AltGr its level needs, and the
// lookup follows a layout change made while recv runs (MappingNotify).
func TestX11CharactersFollowTheKeymap(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	held := func(r rune) []int {
		inj(t, x, keys.Char(r), true)
		got := pressed(t, c)
		inj(t, x, keys.Char(r), false)
		if rest := pressed(t, c); len(rest) != 0 {
			t.Errorf("%q up: keycodes %v still held", r, rest)
		}
		return got
	}
	// US: @ is Shift+2 (Shift_L 50, keycode 11); a is keycode 38 alone.
	if got := held('@'); !slices.Equal(got, []int{11, 50}) {
		t.Errorf("us '@': keycodes %v, want [11 50] (2 with Shift)", got)
	}
	if got := held('a'); !slices.Equal(got, []int{38}) {
		t.Errorf("us 'a': keycodes %v, want [38]", got)
	}
	setxkbmap(t, "de")
	awaitStale(t, x, c, "the layout change")
	// German: @ is AltGr+Q: keycode 24 with an ISO_Level3_Shift key.
	got := held('@')
	if len(got) != 2 || got[0] != 24 || x.keymap.level3KC == 0 || got[1] != int(x.keymap.level3KC) {
		t.Errorf("de '@': keycodes %v, want [24 %d] (Q with AltGr)", got, x.keymap.level3KC)
	}
	if got := held('z'); !slices.Equal(got, []int{29}) {
		t.Errorf("de 'z': keycodes %v, want [29] (the key labelled Z)", got)
	}
	if got := held('ü'); !slices.Equal(got, []int{34}) {
		t.Errorf("de 'ü': keycodes %v, want [34]", got)
	}
}

// TestX11ShiftIsTheCharacters: a character is typed as itself whatever
// Shift the sender holds (Shift released around it, then pressed again),
// while Ctrl stays held: Ctrl and 'c' is Ctrl+C.
func TestX11ShiftIsTheCharacters(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	inj(t, x, keys.Key(keys.ShiftLeft), true)
	inj(t, x, keys.Key(keys.ControlLeft), true)
	inj(t, x, keys.Char('c'), true)
	if got := pressed(t, c); !slices.Equal(got, []int{37, 54}) {
		t.Errorf("Shift and Ctrl held, 'c' down: keycodes %v, want [37 54] (Ctrl and C, Shift let go)", got)
	}
	inj(t, x, keys.Char('c'), false)
	if got := pressed(t, c); !slices.Equal(got, []int{37, 50}) {
		t.Errorf("after 'c' up: keycodes %v, want [37 50] (Ctrl and Shift held again)", got)
	}
	inj(t, x, keys.Key(keys.ControlLeft), false)
	inj(t, x, keys.Key(keys.ShiftLeft), false)
	if got := pressed(t, c); len(got) != 0 {
		t.Errorf("keycodes %v still held", got)
	}
}

// TestX11SpareKeycodes: characters the layout lacks are mapped to spare
// keycodes, reused least recently used first but never while held, and the
// keymap is as it was once X11 closes.
func TestX11SpareKeycodes(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	before := keymapOf(t, c)
	x, err := NewX11(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	spares := len(x.keymap.spares)
	if spares < 2 {
		t.Fatalf("only %d spare keycodes on Xvfb", spares)
	}
	// Hold one character the US layout lacks, then type more such
	// characters than there are spares.
	inj(t, x, keys.Char('ß'), true)
	heldKC := x.charKC['ß']
	for i := range spares + 5 {
		r := rune(0x4E00 + i) // CJK ideographs: on no layout here
		inj(t, x, keys.Char(r), true)
		got := pressed(t, c)
		if !slices.Contains(got, int(heldKC)) || len(got) != 2 {
			t.Fatalf("%q down: keycodes %v, want the held ß (%d) and one more", r, got, heldKC)
		}
		inj(t, x, keys.Char(r), false)
	}
	km := keymapOf(t, c)
	per := len(km) / (int(x.maxKC) - int(x.minKC) + 1)
	if ks := km[int(heldKC-x.minKC)*per]; ks != 0xdf {
		t.Errorf("held ß's keycode %d was remapped to %#x", heldKC, ks)
	}
	inj(t, x, keys.Char('ß'), false)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if after := keymapOf(t, c); !slices.Equal(after, before) {
		t.Error("the keymap differs after Close: spare keycodes were not given back")
	}
}

// TestX11CapsLock: Caps Lock on, a letter is still typed in the case sent.
func TestX11CapsLock(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	inj(t, x, keys.Key(keys.CapsLock), true)
	inj(t, x, keys.Key(keys.CapsLock), false)
	inj(t, x, keys.Char('a'), true)
	if got := pressed(t, c); !slices.Equal(got, []int{38, 50}) {
		t.Errorf("Caps Lock on, 'a' down: keycodes %v, want [38 50] (A with Shift: Caps Lock inverts it)", got)
	}
	inj(t, x, keys.Char('a'), false)
	inj(t, x, keys.Char('A'), true)
	if got := pressed(t, c); !slices.Equal(got, []int{38}) {
		t.Errorf("Caps Lock on, 'A' down: keycodes %v, want [38]", got)
	}
	inj(t, x, keys.Char('A'), false)
}

// TestX11RefusesOtherKeycodes: a server whose XKB rules are not evdev (or
// that does not say) is refused with what to do.
func TestX11RefusesOtherKeycodes(t *testing.T) {
	xvfb(t)
	c := xconn(t)
	root := xproto.Setup(c).DefaultScreen(c).Root
	atom, err := xproto.InternAtom(c, false, uint16(len("_XKB_RULES_NAMES")), "_XKB_RULES_NAMES").Reply()
	if err != nil {
		t.Fatal(err)
	}
	names := "base\x00pc105\x00us\x00\x00"
	if err := xproto.ChangePropertyChecked(c, xproto.PropModeReplace, root, atom.Atom, xproto.AtomString, 8, uint32(len(names)), []byte(names)).Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewX11(nil); !errors.Is(err, ErrKeycodes) || !strings.Contains(err.Error(), `"base"`) || !strings.Contains(err.Error(), "--inject robotgo") {
		t.Errorf("rules base: %v, want ErrKeycodes naming the rules and another injector", err)
	}
	if err := xproto.DeletePropertyChecked(c, root, atom.Atom).Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewX11(nil); !errors.Is(err, ErrKeycodes) || !strings.Contains(err.Error(), "does not say") {
		t.Errorf("no rules: %v, want ErrKeycodes", err)
	}
}

// TestX11NoDisplay: no DISPLAY, or one nobody answers, is an error naming
// DISPLAY, not a crash.
func TestX11NoDisplay(t *testing.T) {
	t.Setenv("DISPLAY", "")
	if _, err := NewX11(nil); !errors.Is(err, ErrNoDisplay) || !strings.Contains(err.Error(), "DISPLAY is not set") {
		t.Errorf("no DISPLAY: %v", err)
	}
	t.Setenv("DISPLAY", ":987")
	if _, err := NewX11(nil); !errors.Is(err, ErrNoDisplay) || !strings.Contains(err.Error(), "DISPLAY=:987") {
		t.Errorf("DISPLAY=:987: %v", err)
	}
}

// TestX11ServerGone: once the X server is gone, Inject says so.
func TestX11ServerGone(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("needs Xvfb")
	}
	r, w, _ := os.Pipe()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-noreset", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	t.Setenv("DISPLAY", ":"+strings.TrimSpace(line))
	x, err := NewX11(nil)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-x.Gone():
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the connection went unnoticed")
	}
	if err := x.GoneErr(); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "DISPLAY="+os.Getenv("DISPLAY")+" went away") {
		t.Errorf("GoneErr = %v", err)
	}
	if err := x.Inject(Event{Key: keys.Key(keys.KeyA), Down: true}); !errors.Is(err, ErrGone) {
		t.Errorf("Inject after the server went: %v", err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("Close after the server went: %v", err)
	}
}

// TestX11PhysicalKeyTakesItsKeycodeBack: a relayed physical key whose
// keycode X11 lent to a character (IntlRo's 97 is empty on a US layout) is
// pressed as itself: X11 takes the keycode back first, so the key does not
// type the character.
func TestX11PhysicalKeyTakesItsKeycodeBack(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	x.keymap.spares = []xproto.Keycode{97} // lend only IntlRo's keycode
	inj(t, x, keys.Char('ß'), true)
	inj(t, x, keys.Char('ß'), false)
	km := keymapOf(t, c)
	per := len(km) / (int(x.maxKC) - int(x.minKC) + 1)
	if ks := km[(97-int(x.minKC))*per]; ks != 0xdf {
		t.Fatalf("keycode 97 has %#x, want ß lent to it", ks)
	}
	inj(t, x, keys.Key(keys.IntlRo), true)
	if got := pressed(t, c); !slices.Equal(got, []int{97}) {
		t.Errorf("IntlRo down: keycodes %v, want [97]", got)
	}
	km = keymapOf(t, c)
	if row := km[(97-int(x.minKC))*per : (98-int(x.minKC))*per]; slices.ContainsFunc(row, func(ks xproto.Keysym) bool { return ks != 0 }) {
		t.Errorf("keycode 97 still has %x while IntlRo is pressed on it", row)
	}
	inj(t, x, keys.Key(keys.IntlRo), false)
	// ß still types, on a keycode lent anew.
	inj(t, x, keys.Char('ß'), true)
	got := pressed(t, c)
	km = keymapOf(t, c)
	if len(got) != 1 || km[(got[0]-int(x.minKC))*per] != 0xdf {
		t.Errorf("'ß' down again: keycodes %v, want one keycode mapped to ß", got)
	}
	inj(t, x, keys.Char('ß'), false)
}

// awaitStale waits until x has seen a mapping change (its MappingNotify
// reaches x's event reader asynchronously), each round trip on c giving
// the server and the reader a turn. A person typing after a layout change
// is milliseconds behind it; a test is not (TestX11CharactersFollowTheKeymap
// failed once in CI typing the German '@' with the US keymap).
func awaitStale(t *testing.T, x *X11, c *xgb.Conn, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !x.stale.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("X11 did not notice %s", what)
		}
		xproto.GetInputFocus(c).Reply()
	}
}

// TestX11NoticesOthersRemappingItsSpare: another client remapping a
// keycode X11 lent to a character is noticed (MappingNotify not of X11's
// own making): the character is then typed from a keycode that has it.
func TestX11NoticesOthersRemappingItsSpare(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	inj(t, x, keys.Char('ß'), true)
	inj(t, x, keys.Char('ß'), false)
	kc := x.spareOf['ß']
	per := byte(x.keymap.per)
	syms := make([]xproto.Keysym, per)
	syms[0] = 0x1004e00 // 一, from another client
	if err := xproto.ChangeKeyboardMappingChecked(c, 1, kc, per, syms).Check(); err != nil {
		t.Fatal(err)
	}
	awaitStale(t, x, c, "another client's change of its spare keycode")
	inj(t, x, keys.Char('ß'), true)
	got := pressed(t, c)
	km := keymapOf(t, c)
	if len(got) != 1 || km[(got[0]-int(x.minKC))*int(per)] != 0xdf {
		t.Errorf("'ß' down: keycodes %v, want one keycode mapped to ß", got)
	}
	inj(t, x, keys.Char('ß'), false)
}

// TestX11TellsItsOwnMappingNotices: each of X11's own spare remappings
// comes back as one MappingNotify for that keycode and is not a reason to
// read the keymap again; any other notice is.
func TestX11TellsItsOwnMappingNotices(t *testing.T) {
	x := &X11{}
	own := func(kc xproto.Keycode) {
		n, _ := x.ownChanges.LoadOrStore(kc, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}
	notice := func(req byte, kc xproto.Keycode, count byte) bool {
		x.stale.Store(false)
		x.noteMapping(xproto.MappingNotifyEvent{Request: req, FirstKeycode: kc, Count: count})
		return x.stale.Load()
	}
	own(93)
	own(93)
	for i, tc := range []struct {
		req   byte
		kc    xproto.Keycode
		count byte
		stale bool
	}{
		{xproto.MappingKeyboard, 93, 1, false}, // ours
		{xproto.MappingKeyboard, 97, 1, true},  // another keycode
		{xproto.MappingKeyboard, 93, 1, false}, // ours, the second
		{xproto.MappingKeyboard, 93, 1, true},  // a third: someone else's
		{xproto.MappingKeyboard, 8, 248, true}, // setxkbmap
		{xproto.MappingModifier, 0, 0, true},   // xmodmap -e "add ..."
		{xproto.MappingPointer, 0, 0, false},   // the mouse buttons
	} {
		if got := notice(tc.req, tc.kc, tc.count); got != tc.stale {
			t.Errorf("notice %d (%d, %d, %d): stale %v, want %v", i, tc.req, tc.kc, tc.count, got, tc.stale)
		}
	}
}

// TestX11SetLocks: the receiver's Caps Lock and Num Lock are made what the
// sender says, by tapping those keys only where they differ (PROTOCOL.md
// §3.2).
func TestX11SetLocks(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	x := newX11(t)
	root := xproto.Setup(c).DefaultScreen(c).Root
	state := func() keys.Locks {
		p, err := xproto.QueryPointer(c, root).Reply()
		if err != nil {
			t.Fatal(err)
		}
		l := keys.LocksKnown
		if p.Mask&xproto.ModMaskLock != 0 {
			l |= keys.LockCaps
		}
		if p.Mask&x.keymap.numMask != 0 {
			l |= keys.LockNum
		}
		return l
	}
	if x.keymap.numMask == 0 {
		t.Fatal("no modifier bit found for Num Lock")
	}
	for _, want := range []keys.Locks{
		keys.LocksKnown | keys.LockCaps,
		keys.LocksKnown | keys.LockCaps | keys.LockNum,
		keys.LocksKnown | keys.LockCaps | keys.LockNum, // already: nothing to do
		keys.LocksKnown,
	} {
		if err := x.SetLocks(want|keys.LockEpoch, 0); err != nil {
			t.Fatal(err)
		}
		x.sync()
		if got := state(); got != want {
			t.Errorf("SetLocks(%v): the server has %v", want, got)
		}
		if held := pressed(t, c); len(held) != 0 {
			t.Errorf("keycodes %v left held", held)
		}
	}
}

// TestX11LayoutChangeKeepsRealKeys: after characters were typed through a
// spare keycode (IntlRo's, 97, empty on a US layout), the desktop's layout
// becomes Brazilian, where 97 is ABNT2's "/ ? °" key. A relayed IntlRo
// then presses that key as the layout has it, and the keycode keeps its
// keysyms for the relayed and the local keyboard alike: X11 changes no
// keycode that has a keysym in the current mapping, whether it read the
// layout change's MappingNotify before the key came or not, and gives its
// spares back on Close.
func TestX11LayoutChangeKeepsRealKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		notice bool // X11 has read the MappingNotify when IntlRo comes
	}{
		{"after the notice", true},
		{"before the notice", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xvfb(t)
			setxkbmap(t, "us")
			c := xconn(t)
			if err := xtest.Init(c); err != nil {
				t.Fatal(err)
			}
			root := xproto.Setup(c).DefaultScreen(c).Root
			x, err := NewX11(t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					x.Close()
				}
			})
			x.keymap.spares = []xproto.Keycode{97} // lend only IntlRo's keycode
			for _, r := range "жßж" {
				inj(t, x, keys.Char(r), true)
				inj(t, x, keys.Char(r), false)
			}
			setxkbmap(t, "br")
			if tc.notice {
				awaitStale(t, x, c, "the layout change")
			}
			br := keymapOf(t, c)
			per := len(br) / (int(x.maxKC) - int(x.minKC) + 1)
			row := func(km []xproto.Keysym, kc int) []xproto.Keysym {
				return km[(kc-int(x.minKC))*per : (kc-int(x.minKC)+1)*per]
			}
			if ks := row(br, 97)[0]; ks != 0x2f {
				t.Fatalf("keycode 97 has %#x on the br layout, want slash (0x2f)", ks)
			}
			// unchanged fails the test if a keycode with a keysym on the br
			// layout is no longer as the layout has it.
			unchanged := func(when string) {
				t.Helper()
				now := keymapOf(t, c)
				for kc := int(x.minKC); kc <= int(x.maxKC); kc++ {
					if !isSpareRow(row(br, kc)) && !slices.Equal(row(br, kc), row(now, kc)) {
						t.Errorf("%s: keycode %d has %x, the br layout %x", when, kc, row(now, kc), row(br, kc))
					}
				}
			}
			inj(t, x, keys.Key(keys.IntlRo), true)
			if got := pressed(t, c); !slices.Equal(got, []int{97}) {
				t.Errorf("relayed IntlRo down: keycodes %v, want [97]", got)
			}
			inj(t, x, keys.Key(keys.IntlRo), false)
			unchanged("after a relayed IntlRo")
			// The local keyboard's IntlRo (XTEST from another client).
			xtest.FakeInput(c, xproto.KeyPress, 97, 0, root, 0, 0, 0)
			xtest.FakeInput(c, xproto.KeyRelease, 97, 0, root, 0, 0, 0)
			unchanged("after a local IntlRo")
			// Characters the br layout lacks still type, through spares.
			inj(t, x, keys.Char('ж'), true)
			if got := pressed(t, c); len(got) != 1 || row(keymapOf(t, c), got[0])[0] != 0x6d6 {
				t.Errorf("'ж' down: keycodes %v, want one keycode mapped to ж", got)
			}
			inj(t, x, keys.Char('ж'), false)
			unchanged("after 'ж'")
			x.Close()
			closed = true
			if now := keymapOf(t, c); !slices.Equal(now, br) {
				t.Errorf("after Close the keymap is not the br layout's: spares not given back")
			}
		})
	}
}
