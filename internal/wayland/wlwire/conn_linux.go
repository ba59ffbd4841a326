package wlwire

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"time"
)

// The core protocol's objects, requests and events that every client uses
// (wayland.xml).
const (
	DisplayID = 1 // wl_display, always object 1

	displaySync        = 0 // wl_display.sync(callback new_id)
	displayGetRegistry = 1 // wl_display.get_registry(registry new_id)
	displayError       = 0 // event wl_display.error(object, code, message)
	displayDeleteID    = 1 // event wl_display.delete_id(id)
	callbackDone       = 0 // event wl_callback.done(data)
	registryBind       = 0 // wl_registry.bind(name, interface, version, new_id)
	registryGlobal     = 0 // event wl_registry.global(name, interface, version)
)

// ErrNoDisplay is wrapped by Dial's error when there is no compositor to
// connect to.
var ErrNoDisplay = errors.New("no wayland compositor")

// ProtocolError is the compositor's wl_display.error: it ends the
// connection.
type ProtocolError struct {
	Object uint32
	Code   uint32
	Msg    string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("the compositor ended the connection: protocol error %d on object %d: %s", e.Code, e.Object, e.Msg)
}

// Global is one global the registry announced.
type Global struct {
	Name      uint32
	Interface string
	Version   uint32
}

// Conn is a client's connection to a compositor. It is not safe for
// concurrent use: one goroutine sends and reads.
type Conn struct {
	c    *net.UnixConn
	path string
	next uint32 // the next object id to hand out
	in   []byte // bytes read and not yet parsed
	fds  []int  // descriptors read and not yet taken
	// Timeout bounds each write and each Roundtrip's wait for the
	// compositor's answer (5 s from Dial). A deadline bounds only the
	// read or write it was set for: a connection idle for any time
	// still sends and reads.
	Timeout time.Duration
}

// SocketPath is the compositor's socket that WAYLAND_DISPLAY names:
// wayland-0 by default, relative to XDG_RUNTIME_DIR unless absolute.
func SocketPath(getenv func(string) string) (string, error) {
	name := getenv("WAYLAND_DISPLAY")
	if name == "" {
		name = "wayland-0"
	}
	if filepath.IsAbs(name) {
		return name, nil
	}
	dir := getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return "", fmt.Errorf("%w: XDG_RUNTIME_DIR is not set, so the socket %s cannot be found: run recv in the desktop session (or set XDG_RUNTIME_DIR, usually /run/user/$(id -u))", ErrNoDisplay, name)
	}
	return filepath.Join(dir, name), nil
}

// Dial connects to the compositor's socket at path.
func Dial(path string) (*Conn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%w: cannot connect to %s: %v (is a Wayland compositor running in this session, and is WAYLAND_DISPLAY its socket?)", ErrNoDisplay, path, err)
	}
	return &Conn{c: c, path: path, next: DisplayID + 1, Timeout: 5 * time.Second}, nil
}

// Path is the socket's path.
func (c *Conn) Path() string { return c.path }

// Close closes the connection and every descriptor not taken.
func (c *Conn) Close() error {
	for _, fd := range c.fds {
		syscall.Close(fd)
	}
	c.fds = nil
	return c.c.Close()
}

// FD is the socket's descriptor, valid until Close, for polling it
// (never to read or write it: the Conn does).
func (c *Conn) FD() (int, error) {
	raw, err := c.c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return -1, err
	}
	return fd, nil
}

// NewID hands out a new object id.
func (c *Conn) NewID() uint32 {
	id := c.next
	c.next++
	return id
}

// Send sends one request, with the descriptors its arguments name.
func (c *Conn) Send(object uint32, opcode uint16, args Args, fds ...int) error {
	b, err := Message{Object: object, Opcode: opcode, Args: args}.Append(nil)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	// The deadline bounds this write only: one left set would refuse
	// every write after it passed, however long after.
	c.c.SetWriteDeadline(time.Now().Add(c.Timeout))
	_, _, err = c.c.WriteMsgUnix(b, oob, nil)
	c.c.SetWriteDeadline(time.Time{})
	if err != nil {
		// A compositor that ended the connection said why first: that is
		// the error worth telling.
		if perr := c.pendingError(); perr != nil {
			return perr
		}
		return fmt.Errorf("writing to the compositor's socket %s: %w", c.path, err)
	}
	return nil
}

// pendingError returns the wl_display.error among the events already
// received, nil if none.
func (c *Conn) pendingError() error {
	for {
		_, err := c.Next(time.Now().Add(100 * time.Millisecond))
		var perr *ProtocolError
		if errors.As(err, &perr) {
			return perr
		}
		if err != nil {
			return nil
		}
	}
}

// Next reads the next event, waiting at most until deadline (none if
// zero). A wl_display.error comes back as a *ProtocolError.
func (c *Conn) Next(deadline time.Time) (Message, error) {
	return c.read(deadline, true)
}

// errNothing is read's error, without wait, when nothing more was sent.
var errNothing = errors.New("no event waiting")

func (c *Conn) read(deadline time.Time, wait bool) (Message, error) {
	for {
		m, n, err := Parse(c.in)
		if err != nil {
			return Message{}, err
		}
		if n > 0 {
			// Copied: c.in is read into again.
			m.Args = append([]byte(nil), m.Args...)
			c.in = c.in[n:]
			if m.Object == DisplayID && m.Opcode == displayError {
				r := NewReader(m.Args)
				e := &ProtocolError{Object: r.Uint(), Code: r.Uint(), Msg: r.String()}
				return Message{}, e
			}
			return m, nil
		}
		if err := c.fill(deadline, wait); err != nil {
			return Message{}, err
		}
	}
}

// fill reads what the compositor sent, descriptors included; without
// wait, only what is there already (errNothing if nothing is).
func (c *Conn) fill(deadline time.Time, wait bool) error {
	buf := make([]byte, MaxMessage)
	oob := make([]byte, syscall.CmsgSpace(28*4)) // libwayland sends at most 28 at once
	var n, oobn int
	var err error
	if wait {
		// The deadline bounds this read only: a read deadline left set
		// refuses every read after it passed, the non-blocking ones
		// below included, however long after (DESIGN.md, the wayland
		// injector's timeouts).
		c.c.SetReadDeadline(deadline)
		n, oobn, _, _, err = c.c.ReadMsgUnix(buf, oob)
		c.c.SetReadDeadline(time.Time{})
	} else {
		// Not a read with a deadline: a short one would hold up every
		// key. raw.Read checks the read deadline before it calls the
		// function, and there is none (the waiting read clears its own).
		raw, rerr := c.c.SyscallConn()
		if rerr != nil {
			return rerr
		}
		if rerr := raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, err = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_DONTWAIT|syscall.MSG_CMSG_CLOEXEC)
			return true
		}); rerr != nil {
			return rerr
		}
		if errors.Is(err, syscall.EAGAIN) {
			return errNothing
		}
	}
	n, oobn = max(n, 0), max(oobn, 0) // -1 with a timeout
	if n == 0 && err == nil {
		err = errors.New("the compositor closed the connection")
	}
	if oobn > 0 {
		if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, msg := range msgs {
				if fds, perr := syscall.ParseUnixRights(&msg); perr == nil {
					c.fds = append(c.fds, fds...)
				}
			}
		}
	}
	c.in = append(c.in, buf[:n]...)
	if err != nil {
		return fmt.Errorf("reading from the compositor's socket %s: %w", c.path, err)
	}
	return nil
}

// TakeFD takes the oldest descriptor received: the one the event just read
// carried, when it carries one. The caller closes it.
func (c *Conn) TakeFD() (int, bool) {
	if len(c.fds) == 0 {
		return -1, false
	}
	fd := c.fds[0]
	c.fds = c.fds[1:]
	return fd, true
}

// Roundtrip sends wl_display.sync and hands every event that comes before
// its answer to handle (which may be nil): the compositor has then handled
// every request sent before it.
func (c *Conn) Roundtrip(handle func(Message) error) error {
	cb := c.NewID()
	if err := c.Send(DisplayID, displaySync, Args{}.Uint(cb)); err != nil {
		return err
	}
	deadline := time.Now().Add(c.Timeout)
	for {
		m, err := c.Next(deadline)
		if err != nil {
			return err
		}
		switch {
		case m.Object == cb && m.Opcode == callbackDone:
			return nil
		case m.Object == DisplayID:
			continue // delete_id: ids are never reused here
		case handle != nil:
			if err := handle(m); err != nil {
				return err
			}
		}
	}
}

// Globals asks for the registry and returns the globals the compositor has,
// and the registry's id to bind them with.
func (c *Conn) Globals() (registry uint32, globals []Global, err error) {
	registry = c.NewID()
	if err := c.Send(DisplayID, displayGetRegistry, Args{}.Uint(registry)); err != nil {
		return 0, nil, err
	}
	err = c.Roundtrip(func(m Message) error {
		if m.Object != registry || m.Opcode != registryGlobal {
			return nil
		}
		r := NewReader(m.Args)
		g := Global{Name: r.Uint(), Interface: r.String(), Version: r.Uint()}
		if r.Err() != nil {
			return r.Err()
		}
		globals = append(globals, g)
		return nil
	})
	return registry, globals, err
}

// Bind binds global g at version (at most the global's) and returns the
// new object's id.
func (c *Conn) Bind(registry uint32, g Global, version uint32) (uint32, error) {
	version = min(version, g.Version)
	id := c.NewID()
	return id, c.Send(registry, registryBind, Args{}.Uint(g.Name).String(g.Interface).Uint(version).Uint(id))
}

// Drain handles the events already sent without waiting for more, so that
// the compositor's buffer for this client never fills.
func (c *Conn) Drain(handle func(Message) error) error {
	for {
		m, err := c.read(time.Time{}, false)
		if errors.Is(err, errNothing) {
			return nil
		}
		if err != nil {
			return err
		}
		if m.Object != DisplayID && handle != nil {
			if err := handle(m); err != nil {
				return err
			}
		}
	}
}
