package inject

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/wlwire"
)

// fakeCompositor answers wl_display.get_registry with globals and every
// wl_display.sync at once, as a compositor does, on a socket in dir.
func fakeCompositor(t *testing.T, dir string, globals ...wlwire.Global) {
	t.Helper()
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
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	}()
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
