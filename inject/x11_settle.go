package inject

import (
	"encoding/binary"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// How X11 knows that the application typed into has seen a change of a spare
// keycode's mapping before it presses that keycode, and has read the key
// events of a spare before it changes its mapping (DESIGN.md, "Characters
// through spare keycodes"). The server sends every client its events in
// order, but a client may read its keys and the keymap it types them with on
// two connections (Chromium: its own for the keys, GDK's for the keymap), so
// the application has read that far only once each of its connections has. A
// window of each answers EWMH's ping (_NET_WM_PING: Chromium's top-level
// window, and the leader window GDK makes for its own connection), in order
// with the events the server sent that connection before the ping: X11 pings
// every window of the focused application that says it answers pings, and
// waits for all the answers.

// remapSettle is how long X11 gives the application when none of its
// windows answers pings (no _NET_WM_PID, or none that lists _NET_WM_PING),
// or one did not answer within pingTimeout.
const remapSettle = 50 * time.Millisecond

// pingTimeout bounds the wait for an answer to a ping: a window that takes
// longer (a hung application) is not pinged again.
const pingTimeout = time.Second

// used notes that X11 pressed or released kc, a keycode it lends or may
// lend.
func (x *X11) used(kc xproto.Keycode) {
	if x.usedAt == nil {
		x.usedAt = map[xproto.Keycode]time.Time{}
	}
	x.usedAt[kc] = time.Now()
}

// seenSince waits, before a change of a keycode's mapping, until the
// application has read the key event X11 sent on it at t (if it is not
// known to have read it already).
func (x *X11) seenSince(t time.Time) {
	if !t.IsZero() && !t.Before(x.seenAt) {
		x.awaitSeen()
	}
}

// awaitSeen waits until the application with the keyboard focus has read
// what the server sent it for every request X11 made so far. Once a round
// trip is back, the server has done those requests and written every
// notice and key event they caused; a ping sent after that comes back
// after the application read them.
func (x *X11) awaitSeen() {
	start := time.Now()
	x.keys.sync()
	if !x.pingFocused() {
		time.Sleep(remapSettle)
	}
	x.seenAt = start
}

// pingFocused pings every window of the focused application that answers
// pings and reports whether all answered; false when there is none, or no
// connection to ping them from.
func (x *X11) pingFocused() bool {
	if x.pings == nil && !x.pingsFailed {
		p, err := dialPinger(x.display)
		if err != nil {
			x.pingsFailed = true
			if x.logf != nil {
				x.logf("unable to ask applications on DISPLAY=%s whether they have read a keymap change (%v): characters the layout lacks are typed %v after their key is mapped", x.display, err, remapSettle)
			}
			return false
		}
		x.pings = p
	}
	return x.pings != nil && x.pings.ping()
}

// pinger pings the windows of the application with the keyboard focus, on
// an X connection of its own, which gets the answers: a ping comes back as
// a ClientMessage to the root window, which it selects structure events on.
type pinger struct {
	conn                             *xgb.Conn
	root                             xproto.Window
	protocolsAtom, pingAtom, pidAtom xproto.Atom
	answers                          chan []uint32 // the data of ClientMessages to the root window
	done                             chan struct{} // closed when the reader has returned
	serial                           uint32

	// focus is the focus window the windows were found for, and windows
	// those of its application that answer pings; silent the windows
	// that did not answer once.
	focus   xproto.Window
	windows []xproto.Window
	silent  map[xproto.Window]bool
}

func dialPinger(display string) (*pinger, error) {
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, err
	}
	p := &pinger{conn: c, root: xproto.Setup(c).DefaultScreen(c).Root, answers: make(chan []uint32, 64),
		done: make(chan struct{}), silent: map[xproto.Window]bool{}}
	for _, a := range []struct {
		name string
		atom *xproto.Atom
	}{{"WM_PROTOCOLS", &p.protocolsAtom}, {"_NET_WM_PING", &p.pingAtom}, {"_NET_WM_PID", &p.pidAtom}} {
		r, err := xproto.InternAtom(c, false, uint16(len(a.name)), a.name).Reply()
		if err != nil {
			c.Close()
			return nil, err
		}
		*a.atom = r.Atom
	}
	if err := xproto.ChangeWindowAttributesChecked(c, p.root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskSubstructureNotify}).Check(); err != nil {
		c.Close()
		return nil, err
	}
	go p.read()
	return p, nil
}

// read hands on the ClientMessages the connection gets until it ends.
func (p *pinger) read() {
	defer close(p.done)
	for {
		ev, err := p.conn.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		if m, ok := ev.(xproto.ClientMessageEvent); ok && m.Format == 32 && m.Type == p.protocolsAtom {
			select {
			case p.answers <- m.Data.Data32:
			default: // nobody waits for that many
			}
		}
	}
}

// closePings closes the connection pings are made from.
func (x *X11) closePings() {
	if x.pings != nil {
		x.pings.conn.Close()
		<-x.pings.done
		x.pings = nil
	}
}

// ping pings the focused application's windows that answer pings and
// waits for their answers; it reports whether all answered, and false
// when there is none.
func (p *pinger) ping() bool {
	windows := p.windowsOfFocus()
	if len(windows) == 0 {
		return false
	}
	p.serial++
	all := true
	waiting := map[xproto.Window]bool{}
	for _, w := range windows {
		ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: p.protocolsAtom,
			Data: xproto.ClientMessageDataUnionData32New([]uint32{uint32(p.pingAtom), 0, uint32(w), p.serial, 0})}
		if err := xproto.SendEventChecked(p.conn, false, w, xproto.EventMaskNoEvent, string(ev.Bytes())).Check(); err != nil {
			p.focus = 0 // the window is gone: find them again next time
			all = false
			continue
		}
		waiting[w] = true
	}
	timeout := time.NewTimer(pingTimeout)
	defer timeout.Stop()
	for len(waiting) > 0 {
		select {
		case d := <-p.answers:
			if len(d) == 5 && xproto.Atom(d[0]) == p.pingAtom && d[3] == p.serial {
				delete(waiting, xproto.Window(d[2]))
			}
		case <-timeout.C:
			for w := range waiting {
				p.silent[w] = true
			}
			return false
		case <-p.done:
			return false
		}
	}
	return all
}

// windowsOfFocus returns the windows of the application that has the
// keyboard focus that say they answer pings (WM_PROTOCOLS lists
// _NET_WM_PING) and have not failed to: its top-level window (the focus
// window or the first of its ancestors with a _NET_WM_PID), and every
// top-level window with the same _NET_WM_PID (GDK's leader window is one,
// unmapped). Found again when the focus moves.
func (p *pinger) windowsOfFocus() []xproto.Window {
	f, err := xproto.GetInputFocus(p.conn).Reply()
	if err != nil {
		return nil
	}
	focus := f.Focus
	if focus == xproto.InputFocusPointerRoot {
		q, err := xproto.QueryPointer(p.conn, p.root).Reply()
		if err != nil {
			return nil
		}
		focus = q.Child
	}
	if focus == xproto.WindowNone || focus == p.root {
		return nil
	}
	if focus != p.focus {
		p.focus, p.windows = focus, p.findWindows(focus)
	}
	var out []xproto.Window
	for _, w := range p.windows {
		if !p.silent[w] {
			out = append(out, w)
		}
	}
	return out
}

func (p *pinger) findWindows(focus xproto.Window) []xproto.Window {
	top, pid := focus, uint32(0)
	for top != p.root && top != xproto.WindowNone {
		if pid = p.pidOf(top); pid != 0 {
			break
		}
		t, err := xproto.QueryTree(p.conn, top).Reply()
		if err != nil {
			return nil
		}
		top = t.Parent
	}
	if pid == 0 {
		return nil
	}
	var out []xproto.Window
	if p.answersPings(top) {
		out = append(out, top)
	}
	t, err := xproto.QueryTree(p.conn, p.root).Reply()
	if err != nil {
		return out
	}
	// Ask about every top-level window at once, then read the answers.
	pids := make([]xproto.GetPropertyCookie, len(t.Children))
	for i, w := range t.Children {
		pids[i] = xproto.GetProperty(p.conn, false, w, p.pidAtom, xproto.AtomCardinal, 0, 1)
	}
	for i, w := range t.Children {
		r, err := pids[i].Reply()
		if err == nil && w != top && cardinal(r) == pid && p.answersPings(w) {
			out = append(out, w)
		}
	}
	return out
}

// pidOf reads a window's _NET_WM_PID: 0 without one.
func (p *pinger) pidOf(w xproto.Window) uint32 {
	r, err := xproto.GetProperty(p.conn, false, w, p.pidAtom, xproto.AtomCardinal, 0, 1).Reply()
	if err != nil {
		return 0
	}
	return cardinal(r)
}

func cardinal(r *xproto.GetPropertyReply) uint32 {
	if r == nil || r.Format != 32 || len(r.Value) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(r.Value)
}

// answersPings reports whether a window's WM_PROTOCOLS lists _NET_WM_PING.
func (p *pinger) answersPings(w xproto.Window) bool {
	r, err := xproto.GetProperty(p.conn, false, w, p.protocolsAtom, xproto.AtomAtom, 0, 32).Reply()
	if err != nil || r.Format != 32 {
		return false
	}
	for i := 0; i+4 <= len(r.Value); i += 4 {
		if xproto.Atom(binary.LittleEndian.Uint32(r.Value[i:])) == p.pingAtom {
			return true
		}
	}
	return false
}
