package inject

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/inject/internal/guard"
	"github.com/keyrelay/keyrelay/internal/x11/keysym"
	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
	"github.com/keyrelay/keyrelay/internal/x11/xrecord"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

// ErrKeycodes is wrapped by NewX11's error when the X server does not number
// its keys as Linux evdev does, so a physical key cannot be found by code.
var ErrKeycodes = errors.New("X server keycodes are not evdev")

// X11 presses keys in the X server of $DISPLAY with XTEST, as a keyboard
// plugged into that machine would.
//
// A physical key is pressed as its X keycode: the key's Linux evdev code
// plus 8, which is how the evdev XKB rules (Xorg with libinput or evdev,
// Xwayland, Xvfb) number keys; NewX11 checks the server's rules. So the
// receiver's own layout decides the character, AltGr is the AltGr of that
// layout, and the ISO and JIS keys work. One XTEST request per key event,
// with no round trip, written to a connection of X11's own straight from
// Inject (keyConn).
//
// A character is typed as that character whatever the layout: X11 looks it
// up in the server's keymap and presses its key with the Shift and AltGr
// (ISO_Level3_Shift) that level needs, releasing or adding only those two
// around the key (Ctrl, Alt and Super stay as the sender holds them, so Ctrl
// and a character is a shortcut). The modifier change lasts until the next
// key event, so an X auto-repeat of a held character repeats that character.
// A character the layout lacks is typed through a spare keycode (one with no
// keysyms) mapped to it, as xdotool does; the mapping stays until the spare
// is needed for another character (the least recently used is taken), or
// until Close restores it. A client may read a key event with a keymap that
// is not yet, or no longer, the one the server had when it sent the event
// (Chromium: DESIGN.md, "Characters through spare keycodes"), so X11
// presses a spare only once the application with the focus has read the
// change, and changes a spare only once it has read the spare's last key
// events (x11_settle.go: it asks with pings). Looking a character up
// needs the keymap, read at start and again, before the next key, after the
// server announces a change (MappingNotify: setxkbmap, xmodmap). A layout
// may give a spare a key of its own before that notice is read, so X11
// changes a keycode only under a server grab, after reading that it still
// has what X11 put there (remapIf): it never changes a keycode that carries
// a keysym of the desktop's layout. A character with a case also
// asks the server whether Caps Lock is on (one round trip): a letter on a
// letter key is then typed with Shift inverted; any other (é on a French
// key, ß on a German one, a character on a spare keycode), whose case or
// level Caps Lock would change in ways the core keymap does not tell, is
// typed with Caps Lock turned off around it, by a tap of the Caps Lock key
// before and after.
//
// Inject and Close must be called from one goroutine at a time.
type X11 struct {
	conn    *xgb.Conn // reads the keymap and its changes
	keys    *keyConn  // presses keys, remaps spares, reads the lock state
	xtestOp byte
	root    xproto.Window
	display string
	layout  string // XKB layout names, from _XKB_RULES_NAMES
	minKC   xproto.Keycode
	maxKC   xproto.Keycode
	logf    func(format string, args ...any)
	skipped skipped

	// closed is closed when an X connection is gone; eventsDone when
	// readEvents has returned.
	closed     chan struct{}
	closeOnce  sync.Once
	eventsDone chan struct{}
	// stale is set when the server announces a keymap change not our own.
	stale atomic.Bool
	// ownChanges counts, per keycode, the mapping changes X11 made whose
	// MappingNotify has not come back yet, for the event reader to tell
	// its own from another client's.
	ownChanges sync.Map // xproto.Keycode → *atomic.Int32

	keymap keymap

	// spareOf maps the characters mapped to spare keycodes; lastUse says
	// when each spare was last pressed, to reuse the least recently used.
	spareOf map[rune]xproto.Keycode
	lastUse map[xproto.Keycode]uint64
	useTick uint64
	// usedAt is when X11 last pressed or released each keycode it lends
	// or may lend; seenAt is when it last sent a request the focused
	// application is known to have read all the events of (awaitSeen).
	// pings asks the application, from a connection made when first
	// needed (pingsFailed: it could not be made).
	usedAt      map[xproto.Keycode]time.Time
	seenAt      time.Time
	pings       *pinger
	pingsFailed bool

	// down holds the keycodes this injector holds pressed, and for which
	// key; charKC the keycode each held character was typed with.
	down   map[xproto.Keycode]keys.Key
	charKC map[rune]xproto.Keycode
	// undo is the modifier change made for the last character, to be
	// reverted before the next key event.
	undo override

	// focus is what X11 last learnt of the keyboard focus, for the
	// notice that keys go to no window.
	focus focusState

	// guard releases the keycodes held, a bit each in held (its page),
	// when recv ends holding any (x11_guard.go).
	guard *guard.Guard
	held  []byte
}

// focusState is the keyboard focus as last asked, and what was typed
// without one.
type focusState struct {
	asked   time.Time
	none    string // why no window has the focus; "" when one has
	noted   bool   // the notice was logged
	unfocus atomic.Int64
}

// focusRecheck is how long the focus X11 last asked about is taken as
// still holding: one round trip per key-down would halve the rate of a
// pipelined burst, while a person or a CI script changes the focus far
// less often.
const focusRecheck = 250 * time.Millisecond

// keymap is what X11 knows of the server's keyboard mapping.
type keymap struct {
	per  int             // keysyms per keycode
	syms []xproto.Keysym // per keysyms for each keycode from minKC
	// place is where each character is, best first (lowest level).
	place map[rune]place
	// spares are keycodes with no keysyms and no modifier: free to map a
	// character to.
	spares []xproto.Keycode
	// shiftKC and level3KC are keys that set Shift and ISO_Level3_Shift;
	// capsKC the Caps Lock key.
	shiftKC, level3KC, capsKC xproto.Keycode
	// numMask is the modifier bit Num Lock sets (Mod2 on most servers).
	numMask uint16
}

// place is a character's key and the column of the core keymap it is in.
type place struct {
	kc  xproto.Keycode
	col int
}

// override is a temporary change of the Shift and AltGr keys held, and of
// Caps Lock.
type override struct {
	pressed  []xproto.Keycode // pressed for the character, to release
	released []xproto.Keycode // held keys released for it, to press again
	capsOff  xproto.Keycode   // Caps Lock key tapped to turn it off, to tap again
}

// displayTimeout bounds the start-up checks: a TCP display that does not
// answer must not hang recv.
const displayTimeout = 3 * time.Second

// Keysyms of the modifier keys X11 adjusts for characters.
const (
	ksShiftL         = 0xffe1
	ksShiftR         = 0xffe2
	ksISOLevel3Shift = 0xfe03
	ksCapsLock       = 0xffe5
)

// levelColumns are the core keymap columns X11 types from, in the order it
// prefers them, with the Shift and AltGr each needs. With one XKB group the
// core keymap holds levels 1 and 2 in columns 0 and 1, group 2 (a copy of
// group 1 when there is one group) in 2 and 3, and levels 3 and 4 in 4 and
// 5. Group 2 of a two-group layout would need a group switch: not used.
var levelColumns = []struct {
	col           int
	shift, level3 bool
}{{0, false, false}, {1, true, false}, {4, false, true}, {5, true, true}}

// CheckX11 checks what --inject x11 needs: a reachable X display with XTEST
// whose keycodes are evdev's (keyrelay doctor uses it too). It returns the
// server's XKB layout ("de", "us,ru") for the user to see.
func CheckX11() (layout string, err error) {
	x, err := openX11(nil, false)
	if err != nil {
		return "", err
	}
	return x.layout, x.Close()
}

// NewX11 connects to $DISPLAY and checks, before any key is pressed, that it
// has XTEST and evdev keycodes; it starts X11's guard.
func NewX11(logf func(format string, args ...any)) (*X11, error) {
	return openX11(logf, true)
}

// openX11 is NewX11, with a guard or without (a check that presses nothing).
func openX11(logf func(format string, args ...any), guarded bool) (*X11, error) {
	// xgb logs to stderr when it connects without an Xauthority file, which
	// is normal (Xvfb, xhost); our errors say what matters.
	xquiet.Quiet()
	display := os.Getenv("DISPLAY")
	if display == "" {
		return nil, fmt.Errorf("%w: DISPLAY is not set (run recv inside a graphical session, or set DISPLAY=:0; without X use --inject uinput or --inject log)", ErrNoDisplay)
	}
	type result struct {
		x   *X11
		err error
	}
	done := make(chan result, 1)
	go func() {
		x, err := dialX11(display, logf, guarded)
		done <- result{x, err}
	}()
	select {
	case r := <-done:
		return r.x, r.err
	case <-time.After(displayTimeout):
		go func() {
			if r := <-done; r.x != nil {
				r.x.closeConns()
				stopGuard(r.x.guard, nil)
			}
		}()
		return nil, fmt.Errorf("%w: DISPLAY=%s did not answer within %v", ErrNoDisplay, display, displayTimeout)
	}
}

func dialX11(display string, logf func(string, ...any), guarded bool) (*X11, error) {
	c, err := xgb.NewConn()
	if err != nil {
		return nil, fmt.Errorf("%w: cannot connect to DISPLAY=%s: %v (is the X server running, and may this user use it? see xhost/XAUTHORITY; without X use --inject uinput or --inject log)", ErrNoDisplay, display, err)
	}
	fail := func(err error) (*X11, error) { c.Close(); return nil, err }
	if err := xtest.Init(c); err != nil {
		return fail(fmt.Errorf("the X server of DISPLAY=%s lacks the XTEST extension --inject x11 needs: %v", display, err))
	}
	raw, err := xrecord.Dial(display)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoDisplay, err))
	}
	setup := xproto.Setup(c)
	x := &X11{
		conn: c, keys: newKeyConn(raw), xtestOp: c.Extensions["XTEST"],
		root: setup.DefaultScreen(c).Root, display: display,
		minKC: setup.MinKeycode, maxKC: setup.MaxKeycode, logf: logf,
		closed: make(chan struct{}), eventsDone: make(chan struct{}),
		spareOf: map[rune]xproto.Keycode{}, lastUse: map[xproto.Keycode]uint64{},
		down: map[xproto.Keycode]keys.Key{}, charKC: map[rune]xproto.Keycode{},
	}
	go x.keys.read(x.keyError)
	go func() { <-x.keys.done; x.gone() }()
	err = x.checkRules()
	if err == nil {
		err = x.loadKeymap()
	}
	if err != nil {
		close(x.eventsDone) // readEvents never ran
		x.closeConns()
		return nil, err
	}
	if guarded {
		x.guard, x.held = startGuard("x11", x11HeldSize, logf, display)
	} else {
		x.held = make([]byte, x11HeldSize)
	}
	go x.readEvents()
	return x, nil
}

// gone notes that an X connection ended: closed is closed.
func (x *X11) gone() { x.closeOnce.Do(func() { close(x.closed) }) }

// closeConns closes both connections and waits for their readers.
func (x *X11) closeConns() {
	x.keys.conn.Close()
	x.conn.Close()
	<-x.keys.done
	<-x.eventsDone
}

// keyError logs an X error of a request sent without waiting (FakeInput,
// ChangeKeyboardMapping).
func (x *X11) keyError(code, major byte, minor uint16) {
	if x.logf != nil {
		x.logf("X server of DISPLAY=%s reported an error: X error %d (request %d.%d)", x.display, code, major, minor)
	}
}

// checkRules reads the XKB rules the server's keymap was made with: only
// the evdev rules number keys as evdev code + 8.
func (x *X11) checkRules() error {
	atom, err := xproto.InternAtom(x.conn, true, uint16(len("_XKB_RULES_NAMES")), "_XKB_RULES_NAMES").Reply()
	if err != nil {
		return fmt.Errorf("%w: unable to read the XKB rules of DISPLAY=%s: %v", ErrNoDisplay, x.display, err)
	}
	rules := ""
	if atom.Atom != xproto.AtomNone {
		p, err := xproto.GetProperty(x.conn, false, x.root, atom.Atom, xproto.AtomString, 0, 256).Reply()
		if err != nil {
			return fmt.Errorf("%w: unable to read the XKB rules of DISPLAY=%s: %v", ErrNoDisplay, x.display, err)
		}
		names := strings.Split(string(p.Value), "\x00")
		rules = names[0]
		if len(names) > 2 {
			x.layout = names[2]
		}
	}
	switch rules {
	case "evdev":
		return nil
	case "":
		return fmt.Errorf("%w: DISPLAY=%s does not say which keycodes it uses (no _XKB_RULES_NAMES on its root window), so --inject x11 cannot find physical keys; use --inject robotgo (keys as US characters) or set the keymap with setxkbmap -rules evdev", ErrKeycodes, x.display)
	default:
		return fmt.Errorf("%w: DISPLAY=%s uses the XKB rules %q, whose keycodes are not evdev code + 8, so --inject x11 cannot find physical keys; use --inject robotgo (keys as US characters) or setxkbmap -rules evdev", ErrKeycodes, x.display, rules)
	}
}

// loadKeymap reads the keyboard and modifier mappings (three round trips) and
// indexes them. Spare keycodes X11 mapped keep their characters when the
// server still has them as X11 left them.
func (x *X11) loadKeymap() error {
	// The keymap is read on the xgb connection, our remappings go on the
	// other: first wait until the server has done those.
	if err := x.keys.sync(); err != nil {
		return fmt.Errorf("unable to read the keymap of DISPLAY=%s: %w", x.display, err)
	}
	count := int(x.maxKC) - int(x.minKC) + 1
	km, err := xproto.GetKeyboardMapping(x.conn, x.minKC, byte(count)).Reply()
	if err != nil {
		return fmt.Errorf("unable to read the keymap of DISPLAY=%s: %w", x.display, err)
	}
	mm, err := xproto.GetModifierMapping(x.conn).Reply()
	if err != nil {
		return fmt.Errorf("unable to read the modifier map of DISPLAY=%s: %w", x.display, err)
	}
	modifier := map[xproto.Keycode]bool{}
	var numMask uint16
	numKC, _ := x.Keycode(keys.NumLock)
	for i, kc := range mm.Keycodes {
		modifier[kc] = true
		if kc == numKC && kc != 0 && mm.KeycodesPerModifier > 0 {
			numMask = 1 << (i / int(mm.KeycodesPerModifier))
		}
	}
	k := keymap{per: int(km.KeysymsPerKeycode), syms: km.Keysyms, place: map[rune]place{}, numMask: numMask}
	if k.per == 0 || len(k.syms) < count*k.per {
		return fmt.Errorf("unable to read the keymap of DISPLAY=%s: %d keysyms for %d keycodes", x.display, len(k.syms), count)
	}
	// Characters still on the spare keycodes X11 mapped.
	kept := map[rune]xproto.Keycode{}
	for r, kc := range x.spareOf {
		if k.onlySym(x.minKC, kc) == keysym.FromRune(r) {
			kept[r] = kc
		} else {
			delete(x.lastUse, kc)
		}
	}
	shiftR := false // the Shift key found is Shift_R: Shift_L is preferred
	for i := range count {
		kc := x.minKC + xproto.Keycode(i)
		row := k.syms[i*k.per : (i+1)*k.per]
		// Keycode 8 is the lowest an XKB server has, and Xvfb maps a
		// character to it but does not take the mapping back: not a spare.
		if isSpareRow(row) && !modifier[kc] && kc > 8 {
			k.spares = append(k.spares, kc)
			continue
		}
		switch {
		case row[0] == ksShiftL && (k.shiftKC == 0 || shiftR):
			k.shiftKC, shiftR = kc, false
		case row[0] == ksShiftR && k.shiftKC == 0:
			k.shiftKC, shiftR = kc, true
		case row[0] == ksISOLevel3Shift && k.level3KC == 0:
			k.level3KC = kc
		case row[0] == ksCapsLock && k.capsKC == 0:
			k.capsKC = kc
		}
		for _, lc := range levelColumns {
			if lc.col >= k.per {
				continue
			}
			r, ok := keysym.ToRune(uint32(row[lc.col]))
			if !ok {
				continue
			}
			if old, ok := k.place[r]; ok && levelRank(old.col) <= levelRank(lc.col) {
				continue
			}
			k.place[r] = place{kc, lc.col}
		}
	}
	// Our mapped spares count as spares, and their characters are found
	// through spareOf, not the keymap.
	for r, kc := range kept {
		if p, ok := k.place[r]; ok && p.kc == kc {
			delete(k.place, r)
		}
		k.spares = append(k.spares, kc)
	}
	// Lend the keycodes least likely to be relayed first: a relayed key on
	// a lent keycode takes it back (unspare), which costs a remapping.
	slices.SortStableFunc(k.spares, func(a, b xproto.Keycode) int {
		return cmp.Compare(spareRank(a), spareRank(b))
	})
	x.spareOf = kept
	x.keymap = k
	return nil
}

// spareRank orders the spare keycodes to lend, lowest first: 0 for a
// keycode whose evdev code the kernel names no key (keycodemapdb lists it
// without a KEY_ name: 84, 195–199, 247–255), 1 for a key without a USB HID
// usage (PROTOCOL.md §3.1: media, launch and other rare keys, relayed as
// keys.EvdevBase + the evdev code), 2 for a key of the keyboard page.
func spareRank(kc xproto.Keycode) int {
	c, ok := keys.FromEvdev(uint16(kc) - 8)
	info, _ := keys.Lookup(c)
	switch {
	case kc < 8 || !ok || info.EvdevName == "":
		return 0
	case c.IsEvdev():
		return 1
	}
	return 2
}

// isSpareRow reports whether a keycode has no keysym at all.
func isSpareRow(row []xproto.Keysym) bool {
	for _, ks := range row {
		if ks != 0 {
			return false
		}
	}
	return true
}

// onlySym is the one keysym a keycode has in all its columns that are not
// NoSymbol, or 0. (X11 maps a spare to one keysym in every column; an XKB
// server keeps it in the columns of the groups and levels it made.)
func (k *keymap) onlySym(min, kc xproto.Keycode) uint32 {
	i := int(kc-min) * k.per
	if i < 0 || i+k.per > len(k.syms) {
		return 0
	}
	return onlySym(k.syms[i : i+k.per])
}

// onlySym is the one keysym of row in all its columns that are not
// NoSymbol, or 0.
func onlySym(row []xproto.Keysym) uint32 {
	var ks xproto.Keysym
	for _, s := range row {
		switch {
		case s == 0:
		case ks == 0:
			ks = s
		case s != ks:
			return 0
		}
	}
	return uint32(ks)
}

func levelRank(col int) int {
	for i, lc := range levelColumns {
		if lc.col == col {
			return i
		}
	}
	return len(levelColumns)
}

// readEvents watches the xgb connection: keymap changes make the keymap
// stale; X errors are logged; the end of the connection closes x.closed.
func (x *X11) readEvents() {
	defer close(x.eventsDone)
	defer x.gone()
	for {
		ev, err := x.conn.WaitForEvent()
		switch {
		case ev == nil && err == nil:
			return
		case err != nil:
			if x.logf != nil {
				x.logf("X server of DISPLAY=%s reported an error: %v", x.display, err)
			}
		default:
			if m, ok := ev.(xproto.MappingNotifyEvent); ok {
				x.noteMapping(m)
			}
		}
	}
}

// noteMapping makes the keymap stale on a keyboard or modifier mapping
// change, unless it is the notice of one of X11's own spare remappings.
func (x *X11) noteMapping(m xproto.MappingNotifyEvent) {
	if m.Request == xproto.MappingPointer {
		return
	}
	if m.Request == xproto.MappingKeyboard && m.Count == 1 {
		if n, ok := x.ownChanges.Load(m.FirstKeycode); ok {
			if n.(*atomic.Int32).Add(-1) >= 0 {
				return
			}
			n.(*atomic.Int32).Add(1) // none of ours was pending
		}
	}
	x.stale.Store(true)
}

// alive reports the X connection's end as an error.
func (x *X11) alive() error {
	select {
	case <-x.closed:
		return x.GoneErr()
	default:
		return nil
	}
}

// Gone is closed when the X connection ends (receiver.Watched).
func (x *X11) Gone() <-chan struct{} { return x.closed }

// GoneErr says that the X server went away.
func (x *X11) GoneErr() error {
	return fmt.Errorf("the X server of DISPLAY=%s went away (it stopped, or the session ended): keys can no longer be typed there; %w", x.display, ErrGone)
}

// Keycode returns the X keycode that presses code under the evdev rules:
// its evdev code + 8, within the server's keycode range.
func (x *X11) Keycode(code keys.Code) (xproto.Keycode, bool) {
	info, ok := keys.Lookup(code)
	if !ok || info.Evdev == 0 {
		return 0, false
	}
	kc := int(info.Evdev) + 8
	if kc < int(x.minKC) || kc > int(x.maxKC) {
		return 0, false
	}
	return xproto.Keycode(kc), true
}

// Inject presses or releases one physical key or character.
func (x *X11) Inject(ev Event) error {
	if err := x.alive(); err != nil {
		return err
	}
	x.revert()
	// The keymap as the server has it now: another client may have
	// changed it (setxkbmap), and a stale one would have X11 take back a
	// "spare" that is a real key by now.
	if err := x.fresh(); err != nil {
		return err
	}
	if ev.Down {
		x.noteFocus(time.Now())
	}
	if r, ok := ev.Key.Char(); ok {
		if ev.Down {
			return x.charDown(r)
		}
		if kc, ok := x.charKC[r]; ok {
			delete(x.charKC, r)
			x.press(kc, ev.Key, false)
			if skc, lent := x.spareOf[r]; lent && skc == kc {
				x.used(kc)
			}
		}
		return nil
	}
	code, _ := ev.Key.Code()
	kc, ok := x.Keycode(code)
	if !ok {
		return x.skipped.report(x.logf, "x11", ev.Key, "it has no X keycode (no evdev code, or one beyond the server's keycodes)")
	}
	if ev.Down {
		x.unspare(kc)
	}
	x.press(kc, ev.Key, ev.Down)
	if slices.Contains(x.keymap.spares, kc) {
		x.used(kc) // a keycode X11 may lend next
	}
	return nil
}

// noteFocus counts a key-down typed while no window has the keyboard
// focus, and says so the first time. X then hands the key to no
// application: under Xvfb with no window focused, send says delivered,
// recv injects every key, and the application gets nothing. The focus is
// asked again after focusRecheck (a round trip).
func (x *X11) noteFocus(now time.Time) {
	f := &x.focus
	if f.asked.IsZero() || now.Sub(f.asked) >= focusRecheck {
		f.asked = now
		f.none = x.noFocus()
	}
	if f.none == "" {
		return
	}
	f.unfocus.Add(1)
	if !f.noted && x.logf != nil {
		f.noted = true
		x.logf("typing into DISPLAY=%s while no window has the keyboard focus (%s): the X server hands these keys to no application; focus the window that should get them (click it, xdotool windowfocus), or run a window manager. Said once; recv's summary counts the keys typed so", x.display, f.none)
	}
}

// noFocus says why no window has the keyboard focus, or "" when one has
// it (or the server could not be asked: no notice then). GetInputFocus
// answers None (keys are discarded), the root window (no application
// reads it; a desktop may focus the root when nothing is focused), or
// PointerRoot: keys go to the window under the pointer, which X servers
// start with and Xvfb without a window manager keeps; then the pointer
// over no window of the root (QueryPointer's child is None) means none.
func (x *X11) noFocus() string {
	f, err := xproto.GetInputFocus(x.conn).Reply()
	if err != nil {
		return ""
	}
	switch f.Focus {
	case xproto.InputFocusNone:
		return "the focus is None"
	case x.root:
		return "the focus is on the root window"
	case xproto.InputFocusPointerRoot:
		p, err := xproto.QueryPointer(x.conn, x.root).Reply()
		if err != nil || p.Child != xproto.WindowNone {
			return ""
		}
		return "the focus follows the pointer (PointerRoot), and the pointer is over no window"
	}
	return ""
}

// LastReached says whether the key event X11 typed last went to an
// application (receiver.Aimed): sink.NoFocus when no window had the
// keyboard focus as last asked (noteFocus, at key-downs).
func (x *X11) LastReached() sink.Unreached {
	if x.focus.none != "" {
		return sink.NoFocus
	}
	return sink.Reached
}

// Unfocused is how many key-downs X11 typed while no window had the
// keyboard focus, for recv's summary. Safe to call from any goroutine.
func (x *X11) Unfocused() int { return int(x.focus.unfocus.Load()) }

// press sends one XTEST key event for key on kc. A key position already
// held for another key is released first, so the new press registers; a
// release of a position another key has taken since is dropped.
func (x *X11) press(kc xproto.Keycode, key keys.Key, down bool) {
	owner, held := x.down[kc]
	if !down {
		if !held || owner != key {
			return
		}
		delete(x.down, kc)
		x.fake(kc, false)
		return
	}
	if held {
		x.fake(kc, false)
		if r, ok := owner.Char(); ok {
			delete(x.charKC, r)
		}
	}
	x.down[kc] = key
	x.fake(kc, true)
}

// fake sends one XTEST key event, without waiting for a reply: errors are
// logged (keyError). A failed write is the connection's end, which Inject
// reports next.
func (x *X11) fake(kc xproto.Keycode, down bool) {
	t := byte(xproto.KeyRelease)
	if down {
		t = xproto.KeyPress
		x.holding(kc, true) // before it is sent: no press goes out unrecorded
	}
	if x.keys.fakeInput(x.xtestOp, t, kc, x.root) == nil && !down {
		x.holding(kc, false) // once sent: a release not sent is the guard's to make
	}
}

// charDown presses the key that types r on the server's layout, with the
// Shift and AltGr its level needs, or a spare keycode mapped to r.
func (x *X11) charDown(r rune) error {
	return x.charDownTries(r, 2)
}

// charDownTries is charDown, reading the keymap again and retrying when the
// spare it picked turns out to be taken (tries times in all).
func (x *X11) charDownTries(r rune, tries int) error {
	p, ok := x.keymap.place[r]
	if ok && levelColumns[levelRank(p.col)].level3 && x.keymap.level3KC == 0 {
		ok = false // no AltGr key to reach level 3 with
	}
	// Caps Lock changes only characters with a case.
	caps := unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r)
	caps = caps && x.capsLock()
	if !ok {
		kc, ok, taken := x.spare(r)
		if taken && tries > 1 {
			if err := x.fresh(); err != nil {
				return err
			}
			return x.charDownTries(r, tries-1)
		}
		if !ok {
			return x.skipped.report(x.logf, "x11", keys.Char(r), "the layout lacks it and no spare keycode is free")
		}
		if caps {
			// A spare keycode has r alone: a client would make it
			// upper case.
			x.turnCapsOff()
		}
		x.press(kc, keys.Char(r), true)
		x.used(kc)
		x.charKC[r] = kc
		return nil
	}
	lc := levelColumns[levelRank(p.col)]
	shift := lc.shift
	switch {
	case caps && lc.col < 2 && x.alphabetic(p.kc):
		shift = !shift // Caps Lock inverts the case of a letter key
	case caps:
		// Elsewhere Caps Lock does what the key's XKB type says (ß on a
		// German keyboard gives ẞ, level 5), or clients change the
		// case (é gives É on a French keyboard).
		x.turnCapsOff()
	}
	x.setLevel(shift, lc.level3)
	x.press(p.kc, keys.Char(r), true)
	x.charKC[r] = p.kc
	return nil
}

// alphabetic reports whether kc's first two columns are the lower and upper
// case of one letter: the keys Caps Lock affects.
func (x *X11) alphabetic(kc xproto.Keycode) bool {
	i := int(kc-x.minKC) * x.keymap.per
	if x.keymap.per < 2 {
		return false
	}
	lo, ok1 := keysym.ToRune(uint32(x.keymap.syms[i]))
	up, ok2 := keysym.ToRune(uint32(x.keymap.syms[i+1]))
	return ok1 && ok2 && lo != up && unicode.ToUpper(lo) == up
}

// turnCapsOff taps the Caps Lock key, which turns Caps Lock off (the Lock
// modifier is on), and remembers to tap it again. Without a Caps Lock key,
// or with the sender holding it, Caps Lock stays on.
func (x *X11) turnCapsOff() {
	kc := x.keymap.capsKC
	if _, held := x.down[kc]; kc == 0 || held {
		return
	}
	x.fake(kc, true)
	x.fake(kc, false)
	x.undo.capsOff = kc
}

// capsLock asks the server whether Caps Lock is on (the Lock modifier).
func (x *X11) capsLock() bool {
	mask, err := x.keys.queryPointer(x.root)
	return err == nil && mask&xproto.ModMaskLock != 0
}

// setLevel makes Shift and AltGr as a character needs them, pressing or
// releasing only those keys, and remembers the change to revert it.
func (x *X11) setLevel(shift, level3 bool) {
	for _, m := range []struct {
		want bool
		kc   xproto.Keycode
		is   func(xproto.Keysym) bool
	}{
		{shift, x.keymap.shiftKC, func(ks xproto.Keysym) bool { return ks == ksShiftL || ks == ksShiftR }},
		{level3, x.keymap.level3KC, func(ks xproto.Keysym) bool { return ks == ksISOLevel3Shift }},
	} {
		var held []xproto.Keycode
		for kc := range x.down {
			if m.is(x.keymap.syms[int(kc-x.minKC)*x.keymap.per]) {
				held = append(held, kc)
			}
		}
		switch {
		case m.want && len(held) == 0 && m.kc != 0:
			x.fake(m.kc, true)
			x.undo.pressed = append(x.undo.pressed, m.kc)
		case !m.want:
			for _, kc := range held {
				x.fake(kc, false)
				x.undo.released = append(x.undo.released, kc)
			}
		}
	}
}

// revert undoes the last character's Shift and AltGr change, then turns
// Caps Lock on again if it turned it off.
func (x *X11) revert() {
	for i := len(x.undo.pressed) - 1; i >= 0; i-- {
		x.fake(x.undo.pressed[i], false)
	}
	for _, kc := range x.undo.released {
		if _, held := x.down[kc]; held {
			x.fake(kc, true)
		}
	}
	if kc := x.undo.capsOff; kc != 0 {
		x.fake(kc, true)
		x.fake(kc, false)
	}
	x.undo = override{pressed: x.undo.pressed[:0], released: x.undo.released[:0]}
}

// fresh reads the keymap again if the server announced a change not our
// own (MappingNotify, from any client).
func (x *X11) fresh() error {
	if x.stale.Swap(false) {
		return x.loadKeymap()
	}
	return nil
}

// spare returns a spare keycode mapped to r: the one it already has, else a
// free one, else the least recently used that is not held, remapped. taken
// says that the keycode picked is no longer what X11's keymap says (another
// client changed it, and its MappingNotify is still on its way): the keymap
// is then stale, and nothing was changed.
func (x *X11) spare(r rune) (kc xproto.Keycode, ok, taken bool) {
	x.useTick++
	if kc, ok := x.spareOf[r]; ok {
		x.lastUse[kc] = x.useTick
		return kc, true, false
	}
	mapped := map[xproto.Keycode]rune{}
	for c, kc := range x.spareOf {
		mapped[kc] = c
	}
	var pick xproto.Keycode
	for _, kc := range x.keymap.spares {
		if _, held := x.down[kc]; held {
			continue
		}
		if _, used := mapped[kc]; !used {
			pick = kc
			break
		}
		if pick == 0 || x.lastUse[kc] < x.lastUse[pick] {
			pick = kc
		}
	}
	if pick == 0 {
		return 0, false, false
	}
	old, used := mapped[pick]
	was := uint32(0) // what pick has as far as X11 knows
	if used {
		was = keysym.FromRune(old)
	}
	syms := make([]xproto.Keysym, x.keymap.per)
	for i := range syms {
		syms[i] = xproto.Keysym(keysym.FromRune(r))
	}
	// The old character's last events are read under its mapping, and
	// the new one is pressed once the application has seen the change.
	x.seenSince(x.usedAt[pick])
	if !x.remapIf(pick, was, syms) {
		return 0, false, true
	}
	x.awaitSeen()
	if used {
		delete(x.spareOf, old)
	}
	x.spareOf[r] = pick
	x.lastUse[pick] = x.useTick
	return pick, true, false
}

// remapIf maps kc to syms if the server's mapping of kc is still was (one
// keysym in every column it has, as X11 maps a spare; 0: no keysym at
// all), and reports whether it did. Reading and changing happen under a
// server grab, so no other client's change (setxkbmap) comes in between:
// X11 never changes a keycode that has a keysym it did not put there. One
// round trip. A mapping that is not was makes the keymap stale.
func (x *X11) remapIf(kc xproto.Keycode, was uint32, syms []xproto.Keysym) bool {
	x.keys.grabServer()
	defer x.keys.ungrabServer()
	row, err := x.keys.keyboardMapping(kc)
	if err != nil {
		return false // the connection's end, which Inject reports next
	}
	if (was == 0 && !isSpareRow(row)) || (was != 0 && onlySym(row) != was) {
		x.stale.Store(true)
		return false
	}
	x.remap(kc, syms)
	return true
}

// remap maps kc to syms, keeping X11's copy of the keymap in step and
// counting the change as its own for the event reader.
func (x *X11) remap(kc xproto.Keycode, syms []xproto.Keysym) {
	n, _ := x.ownChanges.LoadOrStore(kc, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	x.keys.changeKeyboardMapping(kc, syms)
	copy(x.keymap.syms[int(kc-x.minKC)*x.keymap.per:], syms)
}

// unspare gives a spare keycode back its empty mapping, when a physical key
// is to be pressed on it: a relayed IntlRo must not type the character X11
// lent its keycode to.
// The keycode is given back only while it still has X11's character: one
// the desktop's layout has given a key to since is left as it is.
func (x *X11) unspare(kc xproto.Keycode) {
	for r, skc := range x.spareOf {
		if skc == kc {
			delete(x.spareOf, r)
			x.seenSince(x.usedAt[kc])
			if x.remapIf(kc, keysym.FromRune(r), make([]xproto.Keysym, x.keymap.per)) {
				x.awaitSeen()
			}
			return
		}
	}
}

// SetLocks makes the server's Caps Lock and Num Lock what l says, by
// tapping those keys (their X keycodes, evdev + 8) where they differ: one
// round trip to read the state.
func (x *X11) SetLocks(l keys.Locks, _ uint64) error {
	if err := x.alive(); err != nil {
		return err
	}
	x.revert()
	mask, err := x.keys.queryPointer(x.root)
	if err != nil {
		return fmt.Errorf("unable to read the lock state of DISPLAY=%s: %w", x.display, err)
	}
	for _, lk := range []struct {
		want bool
		mask uint16
		code keys.Code
	}{
		{l&keys.LockCaps != 0, xproto.ModMaskLock, keys.CapsLock},
		{l&keys.LockNum != 0, x.keymap.numMask, keys.NumLock},
	} {
		kc, ok := x.Keycode(lk.code)
		if !ok || lk.mask == 0 || (mask&lk.mask != 0) == lk.want {
			continue
		}
		if _, held := x.down[kc]; held {
			continue // the sender holds the lock key: it decides
		}
		x.fake(kc, true)
		x.fake(kc, false)
	}
	return nil
}

// Close releases what X11 still holds, gives the spare keycodes back their
// empty mapping, closes the connection (the X server keeps a gone XTEST
// client's keys down, repeating) and ends the guard.
func (x *X11) Close() error {
	// The guard ends last: it releases what this failed to.
	defer stopGuard(x.guard, x.logf)
	defer x.closePings()
	if x.alive() != nil {
		// The server is gone, or it closed this client (xkill): the
		// guard releases what is held if it is still there.
		x.closeConns()
		return nil
	}
	x.revert()
	for kc := range x.down {
		x.fake(kc, false)
	}
	clear(x.down)
	// Spares the layout has taken since (a MappingNotify not yet read)
	// are not ours to empty: remapIf leaves them. The last characters
	// typed on them are read under their mappings first.
	x.fresh()
	var last time.Time
	for _, kc := range x.spareOf {
		if t := x.usedAt[kc]; t.After(last) {
			last = t
		}
	}
	x.seenSince(last)
	for r, kc := range x.spareOf {
		x.remapIf(kc, keysym.FromRune(r), make([]xproto.Keysym, x.keymap.per))
	}
	clear(x.spareOf)
	// A round trip, so everything above reached the server before the
	// connection goes.
	x.keys.sync()
	x.closeConns()
	return nil
}
