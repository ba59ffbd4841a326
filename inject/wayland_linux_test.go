package inject

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/wayland/wlwire"
	"github.com/keyrelay/keyrelay/keys"
)

// fake is a fake compositor's side: the requests it got, and its end of
// the connection to hang up.
type fake struct {
	requests chan wlwire.Message
	conn     chan net.Conn
}

// fakeCompositor answers wl_display.get_registry with globals and every
// wl_display.sync at once, as a compositor does, on a socket in dir; every
// other request is passed on in requests (file descriptors dropped). Its
// seat has no keyboard: it sends no capabilities.
func fakeCompositor(t *testing.T, dir string, globals ...wlwire.Global) *fake {
	t.Helper()
	f := &fake{requests: make(chan wlwire.Message, 100), conn: make(chan net.Conn, 1)}
	l, err := net.Listen("unix", filepath.Join(dir, "wayland-0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		f.conn <- c
		defer c.Close()
		var in []byte
		buf := make([]byte, 4096)
		registry := uint32(0)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			in = append(in, buf[:n]...)
			for {
				m, n, err := wlwire.Parse(in)
				if err != nil || n == 0 {
					break
				}
				in = in[n:]
				id := wlwire.NewReader(m.Args).Uint()
				var out []byte
				switch {
				case m.Object == wlwire.DisplayID && m.Opcode == 1: // get_registry
					registry = id
					for i, g := range globals {
						out, _ = wlwire.Message{Object: registry, Args: wlwire.Args{}.Uint(uint32(i + 1)).String(g.Interface).Uint(g.Version)}.Append(out)
					}
				case m.Object == wlwire.DisplayID && m.Opcode == 0: // sync
					out, _ = wlwire.Message{Object: id, Args: wlwire.Args{}.Uint(0)}.Append(out)
				default:
					m.Args = append([]byte(nil), m.Args...)
					select {
					case f.requests <- m:
					default:
					}
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	}()
	return f
}

// TestWaylandWithoutVirtualKeyboardSaysUseUinput: a compositor that offers
// no zwp_virtual_keyboard_manager_v1 (GNOME, KDE) is an error that says
// why and to use uinput; auto does not pick wayland there.
func TestWaylandWithoutVirtualKeyboardSaysUseUinput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		globals []wlwire.Global
		want    []string
	}{
		{"no virtual keyboard", []wlwire.Global{{Interface: "wl_compositor", Version: 5}, {Interface: "wl_seat", Version: 8}}, []string{"does not offer zwp_virtual_keyboard_manager_v1", "GNOME", "--inject uinput"}},
		{"no seat", []wlwire.Global{{Interface: "zwp_virtual_keyboard_manager_v1", Version: 1}}, []string{"no seat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := func(k string) string {
				return map[string]string{"XDG_RUNTIME_DIR": dir, "WAYLAND_DISPLAY": "wayland-0"}[k]
			}
			fakeCompositor(t, dir, tc.globals...)
			_, err := NewWayland(env, nil)
			if !errors.Is(err, ErrNoWayland) {
				t.Fatalf("err = %v, want ErrNoWayland", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("auto", func(t *testing.T) {
		dir := t.TempDir()
		fakeCompositor(t, dir, wlwire.Global{Interface: "wl_seat", Version: 8})
		env := func(k string) string {
			return map[string]string{"XDG_RUNTIME_DIR": dir, "WAYLAND_DISPLAY": "wayland-0"}[k]
		}
		if HasWaylandKeyboard(env) {
			t.Error("HasWaylandKeyboard is true for a compositor without the protocol")
		}
	})
}

// TestWaylandNeedsRuntimeDir: a relative WAYLAND_DISPLAY without
// XDG_RUNTIME_DIR says where the socket would be.
func TestWaylandNeedsRuntimeDir(t *testing.T) {
	_, err := NewWayland(func(k string) string { return map[string]string{"WAYLAND_DISPLAY": "wayland-1"}[k] }, nil)
	if !errors.Is(err, ErrNoWayland) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Errorf("err = %v, want ErrNoWayland naming XDG_RUNTIME_DIR", err)
	}
}

// TestWaylandTypesAndNoticesHangUp: against a compositor whose seat has no
// keyboard, the virtual keyboard is made with a keymap and the modifiers,
// a key is sent as its evdev code, and the compositor hanging up closes
// Gone with an error that stops recv (receiver.Watched, sink.ErrGone).
func TestWaylandTypesAndNoticesHangUp(t *testing.T) {
	dir := t.TempDir()
	f := fakeCompositor(t, dir, wlwire.Global{Interface: "wl_seat", Version: 8}, wlwire.Global{Interface: "zwp_virtual_keyboard_manager_v1", Version: 1})
	env := func(k string) string {
		return map[string]string{"XDG_RUNTIME_DIR": dir, "WAYLAND_DISPLAY": "wayland-0", "XKB_DEFAULT_LAYOUT": "de"}[k]
	}
	var logged []string
	w, err := NewWayland(env, func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Inject(Event{Key: keys.Key(keys.KeyA), Down: true}); err != nil {
		t.Fatal(err)
	}
	// Requests after the binds: create_virtual_keyboard (manager 0),
	// keymap (0), modifiers (2), key (1) on the virtual keyboard.
	var got []string
	for len(got) < 6 {
		select {
		case m := <-f.requests:
			r := wlwire.NewReader(m.Args)
			switch {
			case m.Object == w.vk && m.Opcode == vkKey:
				_, key, state := r.Uint(), r.Uint(), r.Uint()
				got = append(got, fmt.Sprintf("key %d %d", key, state))
			default:
				got = append(got, fmt.Sprintf("%d.%d", m.Object, m.Opcode))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the fake compositor got only %v", got)
		}
	}
	// 2 registry, 3 sync, 4 seat, 5 sync (capabilities), 6 manager, 7 the keyboard
	want := []string{"2.0", "2.0", "6.0", "7.0", "7.2", "key 30 1"}
	if !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "XKB layout de") {
		t.Errorf("logged %q, want the XKB layout taken (no keyboard on the seat)", logged)
	}
	(<-f.conn).Close()
	select {
	case <-w.Gone():
	case <-time.After(5 * time.Second):
		t.Fatal("Gone not closed 5 s after the compositor hung up")
	}
	if !errors.Is(w.GoneErr(), ErrGone) {
		t.Errorf("GoneErr = %v, want ErrGone", w.GoneErr())
	}
	w.Close()
}

// TestWaylandCheckAndAuto: doctor's wayland check and auto's choice ask
// the compositor WAYLAND_DISPLAY names for zwp_virtual_keyboard_v1
// (README "Sources and injectors"): with it, the check passes naming the
// socket and auto picks wayland before x11, DISPLAY set too (XTEST into
// Xwayland reaches X clients only); without it (GNOME, KDE), or with no
// WAYLAND_DISPLAY, the check says why and auto goes on to x11.
func TestWaylandCheckAndAuto(t *testing.T) {
	vk := wlwire.Global{Interface: "zwp_virtual_keyboard_manager_v1", Version: 1}
	seat := wlwire.Global{Interface: "wl_seat", Version: 8}
	for _, tc := range []struct {
		name     string
		display  string // WAYLAND_DISPLAY
		globals  []wlwire.Global
		wantOK   string // in the check's ok line; "": the check fails
		wantErr  string // in its error
		wantAuto string
	}{
		{"a wlroots compositor", "wayland-0", []wlwire.Global{seat, vk}, "offers zwp_virtual_keyboard_manager_v1", "", "wayland"},
		{"GNOME or KDE: no virtual keyboard", "wayland-0", []wlwire.Global{seat}, "", "--inject uinput", "x11"},
		{"no WAYLAND_DISPLAY", "", []wlwire.Global{seat, vk}, "", "WAYLAND_DISPLAY is not set", "x11"},
	} {
		for _, what := range []string{"check", "auto"} {
			t.Run(tc.name+"/"+what, func(t *testing.T) {
				dir := t.TempDir()
				fakeCompositor(t, dir, tc.globals...) // one connection each
				env := map[string]string{"XDG_RUNTIME_DIR": dir, "WAYLAND_DISPLAY": tc.display, "DISPLAY": ":0"}
				getenv := func(k string) string { return env[k] }
				if what == "auto" {
					b, _, ok := Choose(Host{GOOS: "linux", Getenv: getenv, Exists: func(string) bool { return false }})
					if !ok || b.Name != tc.wantAuto {
						t.Errorf("auto picked %q (%v), want %q", b.Name, ok, tc.wantAuto)
					}
					return
				}
				ok, err := CheckWayland(getenv)
				switch {
				case tc.wantOK != "" && (err != nil || !strings.Contains(ok, tc.wantOK) || !strings.Contains(ok, dir)):
					t.Errorf("CheckWayland = %q, %v; want a line naming the socket in %s and %q", ok, err, dir, tc.wantOK)
				case tc.wantOK == "" && (!errors.Is(err, ErrNoWayland) || !strings.Contains(err.Error(), tc.wantErr)):
					t.Errorf("CheckWayland = %q, %v; want ErrNoWayland saying %q", ok, err, tc.wantErr)
				}
			})
		}
	}
}
