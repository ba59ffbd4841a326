package inject

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/jezek/xgb/xproto"
)

// keyConn is X11's own X connection for the requests that press keys and
// read the state they leave: XTEST FakeInput, ChangeKeyboardMapping of the
// spare keycodes, QueryPointer. They are written to the socket from the
// injecting goroutine itself: xgb hands each request to a goroutine of its
// own and waits for it, a goroutine switch (and often a thread woken) on
// the way of every relayed key. One connection keeps them in order, as the
// server processes one client's requests in order: a key pressed after a
// remapping is pressed under it, and the lock state read after a key
// includes it.
//
// write and roundTrip are called from one goroutine at a time (X11's
// Inject); a goroutine of its own reads what the server sends.
type keyConn struct {
	conn net.Conn
	out  io.Writer // conn's writes: raw ones where there are (x11_write_linux.go)
	seq  uint16    // sequence number of the last request written
	buf  []byte
	// waiting is the sequence number + 1 of the round trip waiting for its
	// reply, 0 when none is.
	waiting atomic.Uint32
	replies chan []byte   // the waiting round trip's reply or X error
	done    chan struct{} // closed when the connection has ended
}

// Requests (X11 protocol, XTEST).
const (
	reqChangeKeyboardMapping = 100
	reqGetKeyboardMapping    = 101
	reqGrabServer            = 36
	reqUngrabServer          = 37
	reqQueryPointer          = 38
	reqGetInputFocus         = 43
	xtestFakeInput           = 2
)

// errConnEnded is roundTrip's error once the connection has ended.
var errConnEnded = errors.New("the X connection ended")

func newKeyConn(conn net.Conn) *keyConn {
	k := &keyConn{conn: conn, out: newRawStream(conn), replies: make(chan []byte, 1), done: make(chan struct{})}
	if k.out == nil {
		k.out = conn
	}
	return k
}

// write sends one request.
func (k *keyConn) write(req []byte) error {
	k.seq++
	_, err := k.out.Write(req)
	return err
}

// roundTrip sends a request that has a reply and returns the reply (32
// bytes and more), or the X error the server answered with.
func (k *keyConn) roundTrip(req []byte) ([]byte, error) {
	k.waiting.Store(uint32(k.seq+1) + 1)
	defer k.waiting.Store(0)
	if err := k.write(req); err != nil {
		return nil, err
	}
	select {
	case p := <-k.replies:
		if p[0] == 0 {
			return nil, fmt.Errorf("X error %d (request %d.%d)", p[1], p[10], binary.LittleEndian.Uint16(p[8:]))
		}
		return p, nil
	case <-k.done:
		return nil, errConnEnded
	}
}

// read reads what the server sends until the connection ends: the waiting
// round trip's reply or error goes to it, other errors (of requests sent
// without a reply) to onError; events (every client gets MappingNotify)
// are dropped.
func (k *keyConn) read(onError func(code, major byte, minor uint16)) {
	defer close(k.done)
	in := bufio.NewReader(k.conn)
	for {
		head := make([]byte, 32)
		if _, err := io.ReadFull(in, head); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(head[4:])) // words more, of a reply or a generic event
		if head[0] == 1 || head[0]&0x7f == genericEvent {
			if n > 1<<20 {
				return // not an X server
			}
			more := make([]byte, 4*n)
			if _, err := io.ReadFull(in, more); err != nil {
				return
			}
			head = append(head, more...)
		}
		if head[0] > 1 {
			continue // an event
		}
		if w := k.waiting.Load(); w != 0 && uint16(w-1) == binary.LittleEndian.Uint16(head[2:]) {
			k.replies <- head
		} else if head[0] == 0 && onError != nil {
			onError(head[1], head[10], binary.LittleEndian.Uint16(head[8:]))
		}
	}
}

// genericEvent is the type of X events longer than 32 bytes.
const genericEvent = 35

// fakeInput presses (KeyPress) or releases (KeyRelease) keycode kc with
// XTEST, whose major opcode is op, at once (time 0: CurrentTime).
func (k *keyConn) fakeInput(op, typ byte, kc xproto.Keycode, root xproto.Window) error {
	b := append(k.buf[:0], op, xtestFakeInput, 9, 0, typ, byte(kc), 0, 0)
	b = binary.LittleEndian.AppendUint32(b, 0) // time
	b = binary.LittleEndian.AppendUint32(b, uint32(root))
	b = append(b, make([]byte, 20)...) // pad, root x and y, pad, device
	k.buf = b
	return k.write(b)
}

// changeKeyboardMapping maps keycode kc to syms (one row of the keymap).
func (k *keyConn) changeKeyboardMapping(kc xproto.Keycode, syms []xproto.Keysym) error {
	b := append(k.buf[:0], reqChangeKeyboardMapping, 1, 0, 0, byte(kc), byte(len(syms)), 0, 0)
	binary.LittleEndian.PutUint16(b[2:], uint16(2+len(syms)))
	for _, s := range syms {
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	k.buf = b
	return k.write(b)
}

// keyboardMapping returns the keysyms of keycode kc (one row of the
// keymap): a round trip.
func (k *keyConn) keyboardMapping(kc xproto.Keycode) ([]xproto.Keysym, error) {
	p, err := k.roundTrip([]byte{reqGetKeyboardMapping, 0, 2, 0, byte(kc), 1, 0, 0})
	if err != nil {
		return nil, err
	}
	per := int(p[1])
	if len(p) < 32+4*per {
		return nil, fmt.Errorf("short GetKeyboardMapping reply: %d bytes for %d keysyms", len(p), per)
	}
	row := make([]xproto.Keysym, per)
	for i := range row {
		row[i] = xproto.Keysym(binary.LittleEndian.Uint32(p[32+4*i:]))
	}
	return row, nil
}

// grabServer and ungrabServer make the server process this connection's
// requests alone in between, so that what one reads of the keymap is
// still so when it changes it.
func (k *keyConn) grabServer() error   { return k.write([]byte{reqGrabServer, 0, 1, 0}) }
func (k *keyConn) ungrabServer() error { return k.write([]byte{reqUngrabServer, 0, 1, 0}) }

// queryPointer returns the modifier and button state (QueryPointer's
// mask): a round trip.
func (k *keyConn) queryPointer(root xproto.Window) (uint16, error) {
	req := binary.LittleEndian.AppendUint32([]byte{reqQueryPointer, 0, 2, 0}, uint32(root))
	p, err := k.roundTrip(req)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(p[24:]), nil
}

// sync waits until the server has processed every request sent before (a
// round trip).
func (k *keyConn) sync() error {
	_, err := k.roundTrip([]byte{reqGetInputFocus, 0, 1, 0})
	return err
}
