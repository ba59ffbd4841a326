package inject

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/keyrelay/keyrelay/internal/wayland/wlwire"
	"github.com/keyrelay/keyrelay/keys"
)

// The protocol numbers Wayland uses: wayland.xml's wl_seat and wl_keyboard,
// virtual-keyboard-unstable-v1.xml's manager and keyboard.
const (
	wlSeatInterface    = "wl_seat"
	wlSeatGetKeyboard  = 1 // wl_seat.get_keyboard(id new_id)
	wlSeatCapabilities = 0 // event wl_seat.capabilities(capabilities)
	wlSeatCapKeyboard  = 2
	wlKeyboardRelease  = 0 // wl_keyboard.release, since version 3
	wlKeyboardKeymap   = 0 // event wl_keyboard.keymap(format, fd, size)
	wlKeymapFormatXKB1 = 1

	vkManagerInterface = "zwp_virtual_keyboard_manager_v1"
	vkManagerCreate    = 0 // create_virtual_keyboard(seat object, id new_id)
	vkKeymap           = 0 // keymap(format, fd, size)
	vkKey              = 1 // key(time, key, state)
	vkModifiers        = 2 // modifiers(depressed, latched, locked, group)
	vkDestroy          = 3
)

// maxKeymap bounds the seat's keymap read: a full one is about 60 KB.
const maxKeymap = 1 << 20

// Wayland types through the compositor's virtual keyboard protocol
// (zwp_virtual_keyboard_v1), which wlroots compositors (sway, Hyprland,
// river, labwc...) offer any client; GNOME and KDE do not (NewWayland says
// to use uinput there). Physical keys are typed with the seat's keymap,
// read once when recv starts, so the user's layout decides the character
// as it does for a keyboard plugged in; characters through a keymap of
// their own (wlKeyboard). Caps and Num Lock are the virtual keyboard's
// locked modifiers, set as the sender says.
//
// Inject, SetLocks and Close are called from one goroutine at a time (the
// receiver's).
type Wayland struct {
	conn    *wlwire.Conn
	vk      uint32
	kb      *wlKeyboard
	logf    func(format string, args ...any)
	skipped skipped
	start   time.Time
	failed  error // the connection failed: every call says so

	// The watcher: Gone is closed when the compositor hangs up.
	gone      chan struct{}
	goneErr   error // set before gone is closed
	stop      int   // an eventfd that ends the watcher
	watchDone chan struct{}
}

// NewWayland connects to the compositor WAYLAND_DISPLAY names (getenv is
// os.Getenv but in tests), reads the seat's keymap and makes the virtual
// keyboard.
func NewWayland(getenv func(string) string, logf func(format string, args ...any)) (*Wayland, error) {
	path, err := wlwire.SocketPath(getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	conn, err := wlwire.Dial(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	w, err := newWayland(conn, getenv, logf)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return w, nil
}

// HasWaylandKeyboard reports whether the compositor WAYLAND_DISPLAY names
// offers the virtual keyboard protocol: what --inject auto asks.
func HasWaylandKeyboard(getenv func(string) string) bool {
	_, err := waylandKeyboard(getenv)
	return err == nil
}

// CheckWayland says whether --inject wayland can work here (doctor):
// WAYLAND_DISPLAY is set and its compositor offers the virtual keyboard
// protocol.
func CheckWayland(getenv func(string) string) (string, error) {
	if getenv("WAYLAND_DISPLAY") == "" {
		return "", fmt.Errorf("%w: WAYLAND_DISPLAY is not set: run recv inside the Wayland session (or set WAYLAND_DISPLAY, e.g. wayland-1, with XDG_RUNTIME_DIR); without Wayland use --inject x11 or uinput", ErrNoWayland)
	}
	path, err := waylandKeyboard(getenv)
	if err != nil {
		return "", err
	}
	return "WAYLAND_DISPLAY=" + getenv("WAYLAND_DISPLAY") + ": the compositor at " + path + " offers " + vkManagerInterface, nil
}

// waylandKeyboard asks the compositor WAYLAND_DISPLAY names whether it
// offers the virtual keyboard protocol, and returns its socket's path.
func waylandKeyboard(getenv func(string) string) (string, error) {
	path, err := wlwire.SocketPath(getenv)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	conn, err := wlwire.Dial(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	defer conn.Close()
	conn.Timeout = time.Second
	_, globals, err := conn.Globals()
	if err != nil {
		return "", fmt.Errorf("%w: asking the compositor at %s for its globals: %w", ErrNoWayland, path, err)
	}
	if _, ok := find(globals, vkManagerInterface); !ok {
		return "", fmt.Errorf("%w: the compositor at %s does not offer %s: %s", ErrNoWayland, path, vkManagerInterface, useUinputInstead)
	}
	return path, nil
}

func find(globals []wlwire.Global, iface string) (wlwire.Global, bool) {
	for _, g := range globals {
		if g.Interface == iface {
			return g, true
		}
	}
	return wlwire.Global{}, false
}

func newWayland(conn *wlwire.Conn, getenv func(string) string, logf func(string, ...any)) (*Wayland, error) {
	registry, globals, err := conn.Globals()
	if err != nil {
		return nil, fmt.Errorf("%w: asking the compositor at %s for its globals: %w", ErrNoWayland, conn.Path(), err)
	}
	mgr, ok := find(globals, vkManagerInterface)
	if !ok {
		return nil, fmt.Errorf("%w: the compositor at %s does not offer %s: %s", ErrNoWayland, conn.Path(), vkManagerInterface, useUinputInstead)
	}
	seatG, ok := find(globals, wlSeatInterface)
	if !ok {
		return nil, fmt.Errorf("%w: the compositor at %s has no seat (wl_seat) to type into", ErrNoWayland, conn.Path())
	}
	seat, err := conn.Bind(registry, seatG, 3)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	physical, fromSeat, err := seatKeymap(conn, seat, min(seatG.Version, 3))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the seat's keymap: %w", ErrNoWayland, err)
	}
	altGr := false
	if !fromSeat {
		if physical, altGr, err = defaultKeymap(getenv); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
		}
		if logf != nil {
			logf("the Wayland seat has no keyboard to take the layout from: physical keys are typed with the XKB layout %s (XKB_DEFAULT_LAYOUT, else us)", firstOr(getenv("XKB_DEFAULT_LAYOUT"), "us"))
		}
	}
	m, err := conn.Bind(registry, mgr, 1)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	vk := conn.NewID()
	if err := conn.Send(m, vkManagerCreate, wlwire.Args{}.Uint(seat).Uint(vk)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	w := &Wayland{conn: conn, vk: vk, kb: newWlKeyboard(physical, altGr), logf: logf, start: time.Now(), stop: -1}
	// The physical keymap at once, and a round trip: a compositor that
	// refuses the keyboard (zwp_virtual_keyboard_manager_v1's
	// unauthorized) or the keymap says so now, not at the first key.
	if err := w.apply(w.kb.use(nil, wlPhysical)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	if err := conn.Roundtrip(nil); err != nil {
		return nil, fmt.Errorf("%w: the compositor at %s refused the virtual keyboard or its keymap: %w", ErrNoWayland, conn.Path(), err)
	}
	if err := w.startWatch(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoWayland, err)
	}
	return w, nil
}

// startWatch starts the watcher, which notices the compositor hanging up
// (it quit, or the session ended) between keys, so that recv stops at once
// (receiver.Watched) rather than at the next key. It polls the socket for
// the hang-up only, never reads it: the connection stays the receiver
// goroutine's.
func (w *Wayland) startWatch() error {
	fd, err := w.conn.FD()
	if err != nil {
		return err
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("making the watcher's eventfd: %w", err)
	}
	w.stop, w.gone, w.watchDone = stop, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.watchDone)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}, {Fd: int32(stop), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
				w.goneErr = fmt.Errorf("the Wayland compositor (%s) closed the connection: it quit, or the session ended; %w", w.conn.Path(), ErrGone)
				close(w.gone)
				return
			}
		}
	}()
	return nil
}

// Gone is closed when the compositor hangs up.
func (w *Wayland) Gone() <-chan struct{} { return w.gone }

// GoneErr says what went away, once Gone is closed.
func (w *Wayland) GoneErr() error { return w.goneErr }

func firstOr(list, def string) string {
	first, _, _ := strings.Cut(list, ",")
	if first == "" {
		return def
	}
	return first
}

// seatKeymap reads the keymap the seat's keyboard has, through a
// wl_keyboard asked for and released. fromSeat is false when the seat has
// no keyboard (the compositor then sends no keymap).
func seatKeymap(conn *wlwire.Conn, seat, seatVersion uint32) (km string, fromSeat bool, err error) {
	// Asked only of a seat that has a keyboard: wlroots ends the
	// connection of a client asking any other.
	var caps uint32
	err = conn.Roundtrip(func(m wlwire.Message) error {
		if m.Object == seat && m.Opcode == wlSeatCapabilities {
			caps = wlwire.NewReader(m.Args).Uint()
		}
		return nil
	})
	if err != nil || caps&wlSeatCapKeyboard == 0 {
		return "", false, err
	}
	kbd := conn.NewID()
	if err := conn.Send(seat, wlSeatGetKeyboard, wlwire.Args{}.Uint(kbd)); err != nil {
		return "", false, err
	}
	err = conn.Roundtrip(func(m wlwire.Message) error {
		if m.Object != kbd || m.Opcode != wlKeyboardKeymap {
			return nil
		}
		fd, ok := conn.TakeFD()
		if !ok {
			return errors.New("the keymap event came without its file descriptor")
		}
		f := os.NewFile(uintptr(fd), "keymap")
		defer f.Close()
		r := wlwire.NewReader(m.Args)
		format, size := r.Uint(), r.Uint() // the fd travels beside the bytes
		if r.Err() != nil {
			return r.Err()
		}
		if format != wlKeymapFormatXKB1 {
			return nil // no keymap (format 0): as with no keyboard
		}
		if size > maxKeymap {
			return fmt.Errorf("a keymap of %d bytes (at most %d)", size, maxKeymap)
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, 0); err != nil {
			return fmt.Errorf("reading the keymap: %w", err)
		}
		km, fromSeat = strings.TrimRight(string(buf), "\x00"), true
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if seatVersion >= 3 {
		err = conn.Send(kbd, wlKeyboardRelease, nil)
	}
	return km, fromSeat, err
}

// apply sends ops.
func (w *Wayland) apply(ops []wlOp) error {
	for _, op := range ops {
		var err error
		switch {
		case op.keymap != "":
			err = w.sendKeymap(op.keymap)
		case op.mods:
			err = w.conn.Send(w.vk, vkModifiers, wlwire.Args{}.Uint(op.depressed).Uint(0).Uint(op.locked).Uint(0))
		default:
			state := uint32(0)
			if op.down {
				state = 1
			}
			ms := uint32(time.Since(w.start).Milliseconds())
			err = w.conn.Send(w.vk, vkKey, wlwire.Args{}.Uint(ms).Uint(op.key).Uint(state))
		}
		if err != nil {
			return w.fail(err)
		}
	}
	// What the compositor sent (a protocol error, the registry's news) is
	// read now, so that its buffer for this client never fills.
	if err := w.conn.Drain(nil); err != nil {
		return w.fail(err)
	}
	return nil
}

// fail makes err final: the compositor is gone or ended the connection.
func (w *Wayland) fail(err error) error {
	if w.failed == nil {
		w.failed = fmt.Errorf("the Wayland compositor's virtual keyboard (%s) stopped taking keys (%v): keys can no longer be typed here; %w", w.conn.Path(), err, ErrGone)
	}
	return w.failed
}

// sendKeymap uploads km in a memfd, as the protocol passes keymaps.
func (w *Wayland) sendKeymap(km string) error {
	fd, err := unix.MemfdCreate("keyrelay-keymap", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("making the keymap's memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "keymap")
	defer f.Close()
	data := append([]byte(km), 0) // the size counts the NUL
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing the keymap's memfd: %w", err)
	}
	return w.conn.Send(w.vk, vkKeymap, wlwire.Args{}.Uint(wlKeymapFormatXKB1).Uint(uint32(len(data))), int(f.Fd()))
}

// Inject presses or releases one key or character.
func (w *Wayland) Inject(k Event) error {
	if w.failed != nil {
		return w.failed
	}
	if r, ok := k.Key.Char(); ok {
		ops, err := w.kb.char(r, k.Down)
		if err != nil {
			return w.skipped.report(w.logf, "wayland", k.Key, err.Error())
		}
		return w.apply(ops)
	}
	code, _ := k.Key.Code()
	ops, err := w.kb.physicalKey(code, k.Down)
	if err != nil {
		return w.skipped.report(w.logf, "wayland", k.Key, err.Error())
	}
	return w.apply(ops)
}

// SetLocks makes Caps Lock and Num Lock what l says (PROTOCOL.md §3.2).
func (w *Wayland) SetLocks(l keys.Locks, _ uint64) error {
	if w.failed != nil {
		return w.failed
	}
	return w.apply(w.kb.setLocks(l))
}

// Close releases what is held, destroys the virtual keyboard and waits
// for the compositor to have handled it all.
func (w *Wayland) Close() error {
	var err error
	if w.failed == nil {
		err = w.apply(w.kb.releaseAll())
		if err == nil {
			err = w.conn.Send(w.vk, vkDestroy, nil)
		}
		if err == nil {
			err = w.conn.Roundtrip(nil)
		}
	}
	if w.stop >= 0 {
		// The watcher ends before the socket closes: its descriptor
		// must not be polled once it may name another file.
		unix.Write(w.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		<-w.watchDone
		unix.Close(w.stop)
	}
	if cerr := w.conn.Close(); cerr != nil && !errors.Is(cerr, syscall.EBADF) {
		err = errors.Join(err, cerr)
	}
	return err
}
