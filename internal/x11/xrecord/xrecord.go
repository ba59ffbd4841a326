// Package xrecord streams the key presses and releases of an X server with
// the RECORD extension, in pure Go.
//
// Why by hand: RECORD's EnableContext answers with a stream of replies to
// one request, which github.com/jezek/xgb cannot deliver (it hands a request
// one reply), and gohook's pure-Go backend needs a build tag, while every
// keyrelay source must be in a plain `go build`. So a Stream opens its own
// data connection (X's connection setup, with the MIT-MAGIC-COOKIE-1 of the
// display from the Xauthority file), sends EnableContext on it and reads the
// replies; the context itself is created and later disabled over an ordinary
// xgb connection.
//
// The server sends what a context recorded only when it flushes its
// clients' output after recording it, and it flushes only when some client
// has new output: a key that no client receives would stay in its buffer
// until any client gets output, for seconds (on a bare Xvfb, say). So a
// Stream opens a third connection, the flush connection, that selects the
// key events of the root window, which gets the keys nobody else takes
// while the focus is on the root or follows the pointer (no window
// manager): they are read and dropped, and the recorded key comes in the
// same flush. (XInput 2's raw events, which every key sends to the root
// window, come too early: the server may flush them before it records the
// key.) A key sent to a focused window that does not listen to keys can
// still wait; on a desktop there is nearly always a client that gets it.
//
// The data connection itself must get nothing but the recording: when the
// server flushes a client's output it first writes out every context's
// recorded data, and when that client is the recording client the write
// lands in the very buffer being flushed, which the X.Org server then frees
// under its own feet (DESIGN.md, "RECORD's recording client gets only the
// recording"): selecting keys on the data connection crashes the server
// within a few sessions. For the same reason the data connection opts out of
// the MappingNotify events every client gets when a keyboard mapping changes
// (useXKB).
package xrecord

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/record"
	"github.com/jezek/xgb/xproto"
)

// ErrNoRecord is wrapped when the server lacks the RECORD extension.
var ErrNoRecord = errors.New("the X server lacks the RECORD extension")

// Key is one recorded key event: an X keycode, pressed or released, with
// the server time in milliseconds.
type Key struct {
	Keycode byte
	Down    bool
	Time    uint32
}

// Stream records the key events of every client of one X server. Next is
// called from one goroutine; Close from any.
type Stream struct {
	ctrl  *xgb.Conn
	data  net.Conn
	in    *bufio.Reader // data, read a whole flush at a time
	flush net.Conn      // selects the root window's keys (the package doc says why)
	ctx   record.Context

	head    [32]byte
	body    []byte
	pending []Key // keys parsed; those from next on not yet returned
	next    int
	once    sync.Once
	closed  atomic.Bool
	events  atomic.Int64 // events read on the data connection: none, normally
}

// Open records the key events of the X server of display ("" for $DISPLAY),
// through ctrl, a connection to that same server.
func Open(ctrl *xgb.Conn, display string) (*Stream, error) {
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	if err := record.Init(ctrl); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRecord, err)
	}
	opcode, ok := ctrl.Extensions["RECORD"]
	if !ok {
		return nil, ErrNoRecord
	}
	ctx, err := record.NewContextId(ctrl)
	if err != nil {
		return nil, fmt.Errorf("unable to make a RECORD context: %w", err)
	}
	ranges := []record.Range{{DeviceEvents: record.Range8{First: xproto.KeyPress, Last: xproto.KeyRelease}}}
	if err := record.CreateContextChecked(ctrl, ctx, 0, 1, 1, []record.ClientSpec{record.CsAllClients}, ranges).Check(); err != nil {
		return nil, fmt.Errorf("unable to make a RECORD context: %w", err)
	}
	data, err := Dial(display)
	if err != nil {
		record.FreeContext(ctrl, ctx)
		return nil, err
	}
	if err := useXKB(ctrl, data); err != nil {
		data.Close()
		record.FreeContext(ctrl, ctx)
		return nil, fmt.Errorf("unable to start recording on DISPLAY=%s: %w", display, err)
	}
	flush, err := Dial(display)
	if err != nil {
		data.Close()
		record.FreeContext(ctrl, ctx)
		return nil, err
	}
	s := &Stream{ctrl: ctrl, data: data, in: bufio.NewReaderSize(data, 4096), flush: flush, ctx: ctx}
	if err := selectKeys(flush, xproto.Setup(ctrl).DefaultScreen(ctrl).Root); err != nil {
		flush.Close()
		data.Close()
		record.FreeContext(ctrl, ctx)
		return nil, fmt.Errorf("unable to start recording on DISPLAY=%s: %w", display, err)
	}
	// The flush connection's key events are read and dropped until Close
	// closes it: unread, they would fill its socket and the server would
	// stop writing to it, and no longer flush for it.
	go io.Copy(io.Discard, flush)
	// EnableContext (RECORD request 5): opcode, minor, length 2, context.
	req := make([]byte, 8)
	req[0], req[1] = opcode, 5
	binary.LittleEndian.PutUint16(req[2:], 2)
	binary.LittleEndian.PutUint32(req[4:], uint32(ctx))
	if _, err := data.Write(req); err != nil {
		flush.Close()
		data.Close()
		record.FreeContext(ctrl, ctx)
		return nil, fmt.Errorf("unable to start recording on DISPLAY=%s: %w", display, err)
	}
	return s, nil
}

// useXKB makes the data connection a client of the XKEYBOARD extension
// (XkbUseExtension, a round trip) that selects none of its events: the
// server then sends it no MappingNotify for a layout change (setxkbmap)
// or a remapped key (xmodmap, recv's spare keycodes), and the recording
// is all it gets (the package doc says why it must be). A server without
// XKEYBOARD, or that says no, sends MappingNotify all the same, which
// readReply drops.
func useXKB(ctrl *xgb.Conn, data net.Conn) error {
	ext, err := xproto.QueryExtension(ctrl, uint16(len("XKEYBOARD")), "XKEYBOARD").Reply()
	if err != nil {
		return err
	}
	if !ext.Present {
		return nil
	}
	// XkbUseExtension (minor 0): wanted version 1.0. Its reply is the
	// connection's first (sequence 1), and only a reply or an error comes
	// before it: no event is selected yet.
	req := []byte{ext.MajorOpcode, 0, 2, 0, 1, 0, 0, 0}
	data.SetDeadline(time.Now().Add(3 * time.Second))
	defer data.SetDeadline(time.Time{})
	if _, err := data.Write(req); err != nil {
		return err
	}
	var h [32]byte
	if _, err := io.ReadFull(data, h[:]); err != nil {
		return err
	}
	if h[0] == 1 {
		_, err = io.CopyN(io.Discard, data, 4*int64(binary.LittleEndian.Uint32(h[4:])))
	}
	return err
}

// selectKeys makes conn, the flush connection, receive the key events
// that reach root, so that a key no other client receives gives output
// all the same (the package doc says why). It waits for the server's
// answer (a round trip), so that nothing but events comes later; a
// refusal (an X error) is no failure: the stream works without.
func selectKeys(conn net.Conn, root xproto.Window) error {
	// ChangeWindowAttributes: root, event mask KeyPress|KeyRelease (several
	// clients may select those on one window); then GetInputFocus, whose
	// reply (sequence 2) comes after any error.
	req := []byte{changeWindowAttributes, 0, 4, 0}
	req = binary.LittleEndian.AppendUint32(req, uint32(root))
	req = binary.LittleEndian.AppendUint32(req, xproto.CwEventMask)
	req = binary.LittleEndian.AppendUint32(req, xproto.EventMaskKeyPress|xproto.EventMaskKeyRelease)
	req = append(req, getInputFocus, 0, 1, 0)
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if _, err := conn.Write(req); err != nil {
		return err
	}
	in := bufio.NewReader(conn)
	var h [32]byte
	for {
		if _, err := io.ReadFull(in, h[:]); err != nil {
			return err
		}
		if h[0] == 1 || h[0]&0x7f == genericEvent {
			if _, err := in.Discard(4 * int(binary.LittleEndian.Uint32(h[4:]))); err != nil {
				return err
			}
		}
		if h[0] <= 1 && binary.LittleEndian.Uint16(h[2:]) == 2 {
			if in.Buffered() > 0 {
				// Key events already behind the reply: dropped, as
				// the ones to come are.
				in.Discard(in.Buffered())
			}
			return nil
		}
	}
}

// Core requests' opcodes.
const (
	changeWindowAttributes = 2
	getInputFocus          = 43
)

// Next returns the next recorded key event. It returns io.EOF once the
// stream is closed, and another error if the server went away or said no.
func (s *Stream) Next() (Key, error) {
	for s.next == len(s.pending) {
		s.pending, s.next = s.pending[:0], 0
		if err := s.readReply(); err != nil {
			return Key{}, err
		}
	}
	s.next++
	return s.pending[s.next-1], nil
}

// RECORD reply categories (record.xml).
const (
	categoryFromServer  = 0
	categoryStartOfData = 4
	categoryEndOfData   = 5
)

// genericEvent is the type of X events longer than 32 bytes (XInput 2's):
// none is selected, but one must not make the stream lose its place.
const genericEvent = 35

// readReply reads one reply (32 bytes and 4·length more) and queues its key
// events, or reads and drops one event.
func (s *Stream) readReply() error {
	head := s.head[:]
	if _, err := io.ReadFull(s.in, head); err != nil {
		return s.ended(err)
	}
	n := binary.LittleEndian.Uint32(head[4:]) // words more, of a reply or a generic event
	if n > 1<<22 && (head[0] == 1 || head[0]&0x7f == genericEvent) {
		return fmt.Errorf("X reply or event of %d words: not an X server", n)
	}
	switch head[0] {
	case 1: // a reply
	case 0: // an X error on the data connection
		return fmt.Errorf("the X server refused to record: error code %d", head[1])
	default: // an event every client gets (MappingNotify, unless useXKB
		// opted out), dropped
		s.events.Add(1)
		if head[0]&0x7f == genericEvent {
			if _, err := s.in.Discard(4 * int(n)); err != nil {
				return s.ended(err)
			}
		}
		return nil
	}
	if cap(s.body) < 4*int(n) {
		s.body = make([]byte, 4*int(n))
	}
	body := s.body[:4*n]
	if _, err := io.ReadFull(s.in, body); err != nil {
		return s.ended(err)
	}
	switch head[1] {
	case categoryEndOfData:
		return io.EOF
	case categoryFromServer:
		s.pending = appendEvents(s.pending, body)
	}
	return nil
}

// ended turns a read error into io.EOF when the stream was closed.
func (s *Stream) ended(err error) error {
	if s.closed.Load() {
		return io.EOF
	}
	return fmt.Errorf("the X server stopped the recording: %w", err)
}

// ParseEvents reads the key events out of the data of a RECORD
// FromServer reply: whole 32-byte X events (the context has no element
// headers), of which only KeyPress (2) and KeyRelease (3) are kept. A
// trailing partial event is ignored.
func ParseEvents(b []byte) []Key { return appendEvents(nil, b) }

// appendEvents appends the key events of b (ParseEvents) to out.
func appendEvents(out []Key, b []byte) []Key {
	for ; len(b) >= 32; b = b[32:] {
		switch t := b[0] & 0x7f; t {
		case xproto.KeyPress, xproto.KeyRelease:
			out = append(out, Key{Keycode: b[1], Down: t == xproto.KeyPress, Time: binary.LittleEndian.Uint32(b[4:])})
		}
	}
	return out
}

// Close stops the recording and closes the data and flush connections; Next then
// returns io.EOF. The control connection stays open.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		record.DisableContext(s.ctrl, s.ctx)
		record.FreeContext(s.ctrl, s.ctx)
		s.data.Close()
		s.flush.Close()
	})
	return nil
}

// Dial opens an X connection to display (":0", "host:0.1", "/tmp/.X11-unix/X0:0")
// and does the connection setup, with the display's MIT-MAGIC-COOKIE-1 from
// the Xauthority file when there is one. The server's setup data is read
// and dropped: the connection is for requests whose replies the caller
// reads itself.
func Dial(display string) (net.Conn, error) {
	d, err := ParseDisplay(display)
	if err != nil {
		return nil, err
	}
	conn, err := net.Dial(d.Network, d.Address)
	if err != nil {
		return nil, fmt.Errorf("unable to connect to DISPLAY=%s: %w", display, err)
	}
	name, cookie := findCookie(d)
	if err := setup(conn, name, cookie); err != nil {
		conn.Close()
		return nil, fmt.Errorf("unable to connect to DISPLAY=%s: %w", display, err)
	}
	return conn, nil
}

// Display is a parsed DISPLAY.
type Display struct {
	Network, Address string // for net.Dial
	Host             string // "" for the local machine
	Number           string
}

// ParseDisplay reads a DISPLAY string as Xlib does (the forms xgb takes).
func ParseDisplay(display string) (Display, error) {
	colon := strings.LastIndex(display, ":")
	if colon < 0 {
		return Display{}, fmt.Errorf("bad DISPLAY %q: no colon", display)
	}
	num := display[colon+1:]
	if dot := strings.Index(num, "."); dot >= 0 {
		num = num[:dot]
	}
	if _, err := strconv.ParseUint(num, 10, 16); err != nil {
		return Display{}, fmt.Errorf("bad DISPLAY %q: display number %q", display, num)
	}
	host := display[:colon]
	switch {
	case strings.HasPrefix(host, "/"):
		return Display{Network: "unix", Address: host + ":" + num, Number: num}, nil
	case host == "" || host == "unix":
		return Display{Network: "unix", Address: "/tmp/.X11-unix/X" + num, Number: num}, nil
	}
	network := "tcp"
	if slash := strings.LastIndex(host, "/"); slash >= 0 {
		network, host = host[:slash], host[slash+1:]
	}
	n, _ := strconv.Atoi(num)
	return Display{Network: network, Address: net.JoinHostPort(host, strconv.Itoa(6000+n)), Host: host, Number: num}, nil
}

// Xauthority families (X11/Xauth.h).
const (
	familyInternet = 0
	familyLocal    = 256
	familyWild     = 65535
)

// findCookie returns the MIT-MAGIC-COOKIE-1 for d from the Xauthority file
// ($XAUTHORITY, else ~/.Xauthority), or none: a server without access
// control (Xvfb, xhost) takes a connection without one.
func findCookie(d Display) (name string, data []byte) {
	path := os.Getenv("XAUTHORITY")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil
		}
		path = home + "/.Xauthority"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil
	}
	hostname, _ := os.Hostname()
	for _, e := range ParseXauthority(b) {
		if e.Name != "MIT-MAGIC-COOKIE-1" || (e.Number != "" && e.Number != d.Number) {
			continue
		}
		local := d.Host == "" || d.Host == "localhost" || d.Host == hostname
		switch {
		case e.Family == familyWild,
			e.Family == familyLocal && local && e.Address == hostname,
			e.Family == familyInternet && !local && ipIs(e.Address, d.Host),
			e.Family == familyLocal && !local && e.Address == d.Host:
			return e.Name, e.Data
		}
	}
	return "", nil
}

// ipIs reports whether addr, an Internet family address (4 raw bytes),
// is host.
func ipIs(addr, host string) bool {
	ip := net.ParseIP(host)
	return len(addr) == 4 && ip != nil && ip.Equal(net.IP([]byte(addr)))
}

// XauthEntry is one entry of an Xauthority file.
type XauthEntry struct {
	Family                uint16
	Address, Number, Name string
	Data                  []byte
}

// ParseXauthority reads the entries of an Xauthority file; it stops at the
// first malformed one.
func ParseXauthority(b []byte) []XauthEntry {
	var out []XauthEntry
	field := func() ([]byte, bool) {
		if len(b) < 2 {
			return nil, false
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, false
		}
		f := b[2 : 2+n]
		b = b[2+n:]
		return f, true
	}
	for len(b) >= 2 {
		var e XauthEntry
		e.Family = binary.BigEndian.Uint16(b)
		b = b[2:]
		var f [4][]byte
		for i := range f {
			var ok bool
			if f[i], ok = field(); !ok {
				return out
			}
		}
		e.Address, e.Number, e.Name, e.Data = string(f[0]), string(f[1]), string(f[2]), append([]byte(nil), f[3]...)
		out = append(out, e)
	}
	return out
}

// setup does X's connection setup on conn (little-endian, protocol 11.0)
// and reads the server's answer.
func setup(conn net.Conn, authName string, authData []byte) error {
	pad := func(n int) int { return (n + 3) &^ 3 }
	req := make([]byte, 12+pad(len(authName))+pad(len(authData)))
	req[0] = 'l' // little-endian: every reply is little-endian too
	binary.LittleEndian.PutUint16(req[2:], 11)
	binary.LittleEndian.PutUint16(req[6:], uint16(len(authName)))
	binary.LittleEndian.PutUint16(req[8:], uint16(len(authData)))
	copy(req[12:], authName)
	copy(req[12+pad(len(authName)):], authData)
	if _, err := conn.Write(req); err != nil {
		return err
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(conn, head); err != nil {
		return fmt.Errorf("no answer to the connection setup: %w", err)
	}
	rest := make([]byte, 4*int(binary.LittleEndian.Uint16(head[6:])))
	if _, err := io.ReadFull(conn, rest); err != nil {
		return fmt.Errorf("short answer to the connection setup: %w", err)
	}
	if head[0] != 1 {
		reason := rest
		if int(head[1]) <= len(rest) {
			reason = rest[:head[1]]
		}
		return fmt.Errorf("the X server refused the connection: %s", strings.TrimSpace(string(reason)))
	}
	return nil
}
