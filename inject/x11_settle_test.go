package inject

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/internal/x11/xrecord"
	"github.com/keyrelay/keyrelay/keys"
)

// serverEvent is a key event or a keymap change on one keycode, as the X
// server stamped it (milliseconds of the server's clock).
type serverEvent struct {
	ms   uint32
	kc   xproto.Keycode
	what string // "press", "release" or "remap"
}

func (e serverEvent) String() string { return fmt.Sprintf("%s %d at %d ms", e.what, e.kc, e.ms) }

// mapNotices records the XKB MapNotify events of one X server (one per
// change of keysyms, stamped with the server's time) on a raw connection of
// its own: xgb has no XKB, and the core MappingNotify carries no time.
type mapNotices struct {
	conn    net.Conn
	notices chan serverEvent
	synced  chan struct{}
}

// XKB's requests, events and masks (XKBproto.h).
const (
	xkbUseExtension = 0
	xkbSelectEvents = 1
	xkbMapNotify    = 1
	xkbMapNotifyBit = 1 << 1 // XkbMapNotifyMask
	xkbKeySymsBit   = 1 << 1 // XkbKeySymsMask
	xkbUseCoreKbd   = 0x100
)

func watchMapNotices(t *testing.T, c *xgb.Conn) *mapNotices {
	t.Helper()
	ext, err := xproto.QueryExtension(c, uint16(len("XKEYBOARD")), "XKEYBOARD").Reply()
	if err != nil || !ext.Present {
		t.Fatalf("no XKEYBOARD extension: %v", err)
	}
	conn, err := xrecord.Dial(os.Getenv("DISPLAY"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	m := &mapNotices{conn: conn, notices: make(chan serverEvent, 1024), synced: make(chan struct{}, 1)}
	op := ext.MajorOpcode
	req := []byte{op, xkbUseExtension, 2, 0, 1, 0, 0, 0} // XKB 1.0
	req = append(req, op, xkbSelectEvents, 4, 0)
	for _, v := range []uint16{xkbUseCoreKbd, xkbMapNotifyBit, 0, xkbMapNotifyBit, xkbKeySymsBit, xkbKeySymsBit} {
		req = binary.LittleEndian.AppendUint16(req, v)
	}
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			p := make([]byte, 32)
			if _, err := io.ReadFull(conn, p); err != nil {
				close(m.notices)
				return
			}
			switch {
			case p[0] == 0:
				m.notices <- serverEvent{what: fmt.Sprintf("X error %d (request %d.%d)", p[1], p[10], binary.LittleEndian.Uint16(p[8:]))}
			case p[0] == 1:
				// A reply (UseExtension's, GetInputFocus's): 32 bytes.
				m.synced <- struct{}{}
			case p[0] == ext.FirstEvent && p[1] == xkbMapNotify:
				// Sent once per keyboard (the core one and its
				// devices): a change is one or more of them.
				first, n := p[16], p[17]
				for kc := int(first); kc < int(first)+int(n); kc++ {
					m.notices <- serverEvent{binary.LittleEndian.Uint32(p[4:]), xproto.Keycode(kc), "remap"}
				}
			}
		}
	}()
	<-m.synced // UseExtension's reply
	m.sync(t)
	return m
}

// sync waits until the watcher has read everything the server sent it
// before now (a GetInputFocus round trip).
func (m *mapNotices) sync(t *testing.T) {
	t.Helper()
	if _, err := m.conn.Write([]byte{43, 0, 1, 0}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the MapNotify watcher got no reply")
	}
}

// switchToXTEST presses a key with XTEST. The server's first XTEST key
// switches the core keyboard to the XTEST device, which announces the whole
// keymap as new: a key of the test's own first, so that X11 does not read
// the keymap again (and lose the spares a test gives it) when its first key
// does that.
func switchToXTEST(t *testing.T, c *xgb.Conn) {
	t.Helper()
	if err := xtest.Init(c); err != nil {
		t.Fatal(err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	xtest.FakeInput(c, xproto.KeyPress, 50, 0, root, 0, 0, 0)
	xtest.FakeInput(c, xproto.KeyRelease, 50, 0, root, 0, 0, 0)
	if _, err := xproto.GetInputFocus(c).Reply(); err != nil {
		t.Fatal(err)
	}
}

// focusWindow maps a window of c's, gives it the keyboard focus and returns
// it; its key events come to c.
func focusWindow(t *testing.T, c *xgb.Conn) xproto.Window {
	t.Helper()
	s := xproto.Setup(c).DefaultScreen(c)
	w, err := xproto.NewWindowId(c)
	if err != nil {
		t.Fatal(err)
	}
	xproto.CreateWindow(c, s.RootDepth, w, s.Root, 0, 0, 200, 200, 0, xproto.WindowClassInputOutput, s.RootVisual,
		xproto.CwEventMask, []uint32{xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease})
	xproto.MapWindow(c, w)
	if err := xproto.SetInputFocusChecked(c, xproto.InputFocusParent, w, xproto.TimeCurrentTime).Check(); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestX11SpareSettles: when the focused window's application answers no
// pings (this one has no _NET_WM_PID), X11 keeps remapSettle between a
// change of a spare keycode's mapping and any key event on that keycode,
// both ways (DESIGN.md, "Characters through spare keycodes": what a client
// with its keymap on another connection than its keys needs to type each
// character as itself, DESIGN.md invariant 8). Checked on the server's own
// timestamps: the XKB MapNotify of each change and the key events the
// focused window gets. Two spares only, so that they are lent again and
// again; a physical key on a lent keycode (IntlRo, 97) takes it back; Close
// empties them.
func TestX11SpareSettles(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	switchToXTEST(t, c)
	notices := watchMapNotices(t, c)
	focusWindow(t, c)
	x, err := NewX11(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	x.keymap.spares = []xproto.Keycode{97, x.keymap.spares[len(x.keymap.spares)-1]}
	tap := func(k keys.Key) {
		for _, down := range []bool{true, false} {
			if err := x.Inject(Event{Key: k, Down: down}); err != nil {
				t.Fatalf("Inject(%v, %v): %v", k, down, err)
			}
		}
	}
	for _, r := range "жßжüñж€" {
		tap(keys.Char(r))
	}
	tap(keys.Key(keys.IntlRo))
	tap(keys.Char('ø'))
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	// Everything the server sent the watchers, in the server's time.
	if _, err := xproto.GetInputFocus(c).Reply(); err != nil {
		t.Fatal(err)
	}
	notices.sync(t)
	var events []serverEvent
	for {
		ev, err := c.PollForEvent()
		if ev == nil && err == nil {
			break
		}
		switch e := ev.(type) {
		case xproto.KeyPressEvent:
			events = append(events, serverEvent{uint32(e.Time), e.Detail, "press"})
		case xproto.KeyReleaseEvent:
			events = append(events, serverEvent{uint32(e.Time), e.Detail, "release"})
		}
	}
	keyEvents := len(events)
	// A change comes once per keyboard device (the core one and those it
	// stands for), within a millisecond or two: those make one change.
	remaps := 0
	last := map[xproto.Keycode]uint32{}
	for len(notices.notices) > 0 {
		n := <-notices.notices
		if n.what != "remap" {
			t.Fatalf("the MapNotify watcher got %s", n.what)
		}
		if ms, ok := last[n.kc]; !ok || n.ms-ms > 5 {
			remaps++
		}
		last[n.kc] = n.ms
		events = append(events, n)
	}
	// 9 taps; 7 of the 8 characters need a change of a spare (the
	// second ж finds it still mapped), IntlRo one, Close two.
	if keyEvents != 18 || remaps != 10 {
		t.Fatalf("the watchers saw %d key events and %d mapping changes, want 18 and 10: %v", keyEvents, remaps, events)
	}
	const tick = time.Millisecond // the server's clock counts milliseconds
	for _, k := range events[:keyEvents] {
		for _, m := range events[keyEvents:] {
			if m.kc != k.kc {
				continue
			}
			gap := time.Duration(int32(k.ms-m.ms)) * time.Millisecond
			if gap < 0 {
				gap = -gap
			}
			if gap < remapSettle-tick {
				t.Errorf("%v and %v: %v apart, want at least %v", k, m, gap, remapSettle)
			}
		}
	}
}

// fakeApp is one X connection of an application: a top-level window with
// the application's _NET_WM_PID that lists _NET_WM_PING in WM_PROTOCOLS,
// mapped and focused (keys come to it) or not (as GDK's leader window). It
// answers each ping after delay, or never; keys has its key presses.
type fakeApp struct {
	win   xproto.Window
	pings chan struct{} // one per ping answered
	keys  chan serverEvent
}

func startFakeApp(t *testing.T, pid uint32, focused bool, delay time.Duration, answers bool) *fakeApp {
	t.Helper()
	c := xconn(t)
	atom := func(name string) xproto.Atom {
		r, err := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
		if err != nil {
			t.Fatal(err)
		}
		return r.Atom
	}
	protocols, ping, pidAtom := atom("WM_PROTOCOLS"), atom("_NET_WM_PING"), atom("_NET_WM_PID")
	s := xproto.Setup(c).DefaultScreen(c)
	a := &fakeApp{pings: make(chan struct{}, 100), keys: make(chan serverEvent, 100)}
	if focused {
		a.win = focusWindow(t, c)
	} else {
		w, err := xproto.NewWindowId(c)
		if err != nil {
			t.Fatal(err)
		}
		xproto.CreateWindow(c, 0, w, s.Root, -1, -1, 1, 1, 0, xproto.WindowClassInputOnly, 0, 0, nil)
		a.win = w
	}
	xproto.ChangeProperty(c, xproto.PropModeReplace, a.win, pidAtom, xproto.AtomCardinal, 32, 1, binary.LittleEndian.AppendUint32(nil, pid))
	if err := xproto.ChangePropertyChecked(c, xproto.PropModeReplace, a.win, protocols, xproto.AtomAtom, 32, 1,
		binary.LittleEndian.AppendUint32(nil, uint32(ping))).Check(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			ev, err := c.WaitForEvent()
			if ev == nil && err == nil {
				return
			}
			switch e := ev.(type) {
			case xproto.KeyPressEvent:
				a.keys <- serverEvent{uint32(e.Time), e.Detail, "press"}
			case xproto.ClientMessageEvent:
				if !answers || e.Type != protocols || xproto.Atom(e.Data.Data32[0]) != ping {
					continue
				}
				time.Sleep(delay)
				e.Window = s.Root
				xproto.SendEvent(c, false, s.Root, xproto.EventMaskSubstructureNotify|xproto.EventMaskSubstructureRedirect, string(e.Bytes()))
				xproto.GetInputFocus(c).Reply()
				a.pings <- struct{}{}
			}
		}
	}()
	return a
}

// TestX11WaitsForTheFocusedApplication: X11 presses a spare keycode it
// has just mapped only once every window of the focused application that
// answers pings (EWMH _NET_WM_PING; the application's windows are those
// with its _NET_WM_PID) has answered one sent after the change (DESIGN.md,
// "Characters through spare keycodes"). The application here has a focused
// window that answers at once and an unmapped one, on a connection of its
// own as GDK's leader window is, that answers 300 ms late: the press comes
// at least 300 ms after the change, by the server's clock. A third window
// never answers: the first character waits pingTimeout for it, the next
// not again.
func TestX11WaitsForTheFocusedApplication(t *testing.T) {
	xvfb(t)
	setxkbmap(t, "us")
	c := xconn(t)
	switchToXTEST(t, c)
	notices := watchMapNotices(t, c)
	const late = 300 * time.Millisecond
	pid := uint32(os.Getpid())
	app := startFakeApp(t, pid, true, 0, true)
	leader := startFakeApp(t, pid, false, late, true)
	startFakeApp(t, pid, false, 0, false)
	x := newX11(t)
	for i, r := range []rune{'ж', 'ß'} {
		start := time.Now()
		for _, down := range []bool{true, false} {
			if err := x.Inject(Event{Key: keys.Char(r), Down: down}); err != nil {
				t.Fatal(err)
			}
		}
		took := time.Since(start)
		var press serverEvent
		select {
		case press = <-app.keys:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: no key press reached the focused window", r)
		}
		notices.sync(t)
		var change serverEvent
		for len(notices.notices) > 0 {
			if n := <-notices.notices; n.kc == press.kc {
				change = n
			}
		}
		if change.what == "" {
			t.Fatalf("%q: pressed on keycode %d, whose mapping did not change", r, press.kc)
		}
		if gap := time.Duration(press.ms-change.ms) * time.Millisecond; gap < late-time.Millisecond {
			t.Errorf("%q: pressed %v after its keycode was mapped, before the late window answered (%v)", r, gap, late)
		}
		if len(leader.pings) == 0 {
			t.Errorf("%q: the late window was not pinged", r)
		}
		for len(leader.pings) > 0 {
			<-leader.pings
		}
		switch {
		case i == 0 && took < pingTimeout:
			t.Errorf("%q took %v: X11 did not wait %v for the window that never answers", r, took, pingTimeout)
		case i == 1 && took >= pingTimeout:
			t.Errorf("%q took %v: X11 waited again for the window that did not answer before", r, took)
		}
	}
}
