// Package xrecord streams the key presses and releases of an X server with
// the RECORD extension, in pure Go.
//
// Why by hand: RECORD's EnableContext answers with a stream of replies to
// one request, which github.com/jezek/xgb cannot deliver (it hands a
// request one reply), and gohook's pure-Go backend needs a build tag, while
// keyrelay must have every source in a plain `go build`. So a Stream opens
// its own data connection (X's connection setup, with the MIT-MAGIC-COOKIE-1
// of the display from the Xauthority file), sends EnableContext on it and
// reads the replies; the context itself is created and later disabled over
// an ordinary xgb connection.
package xrecord

import (
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
	ctrl *xgb.Conn
	data net.Conn
	ctx  record.Context

	pending []Key // keys parsed, not yet returned
	once    sync.Once
	closed  atomic.Bool
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
	// EnableContext (RECORD request 5): opcode, minor, length 2, context.
	req := make([]byte, 8)
	req[0], req[1] = opcode, 5
	binary.LittleEndian.PutUint16(req[2:], 2)
	binary.LittleEndian.PutUint32(req[4:], uint32(ctx))
	if _, err := data.Write(req); err != nil {
		data.Close()
		record.FreeContext(ctrl, ctx)
		return nil, fmt.Errorf("unable to start recording on DISPLAY=%s: %w", display, err)
	}
	return &Stream{ctrl: ctrl, data: data, ctx: ctx}, nil
}

// Next returns the next recorded key event. It returns io.EOF once the
// stream is closed, and another error if the server went away or said no.
func (s *Stream) Next() (Key, error) {
	for len(s.pending) == 0 {
		if err := s.readReply(); err != nil {
			return Key{}, err
		}
	}
	k := s.pending[0]
	s.pending = s.pending[1:]
	return k, nil
}

// RECORD reply categories (record.xml).
const (
	categoryFromServer  = 0
	categoryStartOfData = 4
	categoryEndOfData   = 5
)

// readReply reads one reply (32 bytes and 4·length more) and queues its key
// events.
func (s *Stream) readReply() error {
	head := make([]byte, 32)
	if _, err := io.ReadFull(s.data, head); err != nil {
		return s.ended(err)
	}
	switch head[0] {
	case 1: // a reply
	case 0: // an X error on the data connection
		return fmt.Errorf("the X server refused to record: error code %d", head[1])
	default: // an event: none is expected on this connection
		return nil
	}
	n := binary.LittleEndian.Uint32(head[4:])
	if n > 1<<22 {
		return fmt.Errorf("RECORD reply of %d words: not an X server", n)
	}
	body := make([]byte, 4*int(n))
	if _, err := io.ReadFull(s.data, body); err != nil {
		return s.ended(err)
	}
	switch head[1] {
	case categoryEndOfData:
		return io.EOF
	case categoryFromServer:
		s.pending = append(s.pending, ParseEvents(body)...)
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
func ParseEvents(b []byte) []Key {
	var out []Key
	for ; len(b) >= 32; b = b[32:] {
		switch t := b[0] & 0x7f; t {
		case xproto.KeyPress, xproto.KeyRelease:
			out = append(out, Key{Keycode: b[1], Down: t == xproto.KeyPress, Time: binary.LittleEndian.Uint32(b[4:])})
		}
	}
	return out
}

// Close stops the recording and closes the data connection; Next then
// returns io.EOF. The control connection stays open.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		record.DisableContext(s.ctrl, s.ctx)
		record.FreeContext(s.ctrl, s.ctx)
		s.data.Close()
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
