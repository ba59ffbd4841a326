package gadget

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/usb/hidkbd"
)

// fakeFS is configfs as the steps see it: directories, files and links by
// path, every change recorded. Like configfs, a gadget's directory comes
// with its strings, configs and functions groups and a configuration's
// with its strings group ("group": made and removed with their parent),
// a directory's attribute files go with it, but a directory something
// links to, or that holds a directory someone made, cannot go.
type fakeFS struct {
	entries map[string]string // path -> "dir", "file:DATA", "link:TARGET"
	ops     []string
	failOn  string // a path whose change fails with fs.ErrPermission
}

func newFakeFS(udcs ...string) *fakeFS {
	f := &fakeFS{entries: map[string]string{"/sys/kernel/config/usb_gadget": "dir", UDCDir: "dir"}}
	for _, u := range udcs {
		f.entries[path.Join(UDCDir, u)] = "link:../../devices/" + u
	}
	return f
}

func (f *fakeFS) change(op, name, v string) error {
	if name == f.failOn {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	}
	if _, ok := f.entries[path.Dir(name)]; !ok {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	f.ops = append(f.ops, op+" "+strings.TrimPrefix(name, GadgetsDir+"/"))
	f.entries[name] = v
	return nil
}

func (f *fakeFS) Mkdir(name string) error {
	if err := f.change("mkdir", name, "dir"); err != nil {
		return err
	}
	var groups []string
	switch {
	case path.Dir(name) == GadgetsDir:
		groups = []string{"strings", "configs", "functions"}
	case path.Base(path.Dir(name)) == "configs":
		groups = []string{"strings"}
	}
	for _, g := range groups {
		f.entries[path.Join(name, g)] = "group"
	}
	return nil
}
func (f *fakeFS) WriteFile(name string, data []byte) error {
	return f.change("write", name, "file:"+string(data))
}
func (f *fakeFS) Symlink(target, link string) error { return f.change("link", link, "link:"+target) }
func (f *fakeFS) Exists(name string) bool           { _, ok := f.entries[name]; return ok }
func (f *fakeFS) ReadFile(name string) ([]byte, error) {
	v, ok := strings.CutPrefix(f.entries[name], "file:")
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(v), nil
}
func (f *fakeFS) ReadDir(name string) ([]string, error) {
	var out []string
	for p := range f.entries {
		if path.Dir(p) == name {
			out = append(out, path.Base(p))
		}
	}
	return out, nil
}
func (f *fakeFS) Remove(name string) error {
	if name == f.failOn {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
	}
	for p, v := range f.entries {
		if v == "link:"+name || strings.HasPrefix(p, name+"/") && f.entries[p] == "dir" {
			return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
		}
	}
	for p := range f.entries {
		if strings.HasPrefix(p, name+"/") {
			delete(f.entries, p)
		}
	}
	delete(f.entries, name)
	f.ops = append(f.ops, "remove "+strings.TrimPrefix(name, GadgetsDir+"/"))
	return nil
}

// TestSetupMakesABootKeyboard: the gadget is a HID function in the boot
// keyboard subclass and protocol (HID 1.11 §4.2, §4.3) with hidkbd's
// report descriptor and 8-byte reports, linked into a configuration and
// bound to the first controller, or the one asked for.
func TestSetupMakesABootKeyboard(t *testing.T) {
	for _, tt := range []struct {
		name, want, udc string
	}{
		{"the first controller", "", "dummy_udc.0"},
		{"the one named", "fe980000.usb", "fe980000.usb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeFS("fe980000.usb", "dummy_udc.0")
			udc, err := Setup(f, Options{UDC: tt.want})
			if err != nil || udc != tt.udc {
				t.Fatalf("Setup = %q, %v; want %q", udc, err, tt.udc)
			}
			g := GadgetsDir + "/keyrelay/"
			for file, want := range map[string]string{
				function + "/protocol":      "1",
				function + "/subclass":      "1",
				function + "/report_length": "8",
				function + "/report_desc":   string(hidkbd.Descriptor),
				"strings/0x409/product":     "USB keyboard",
				"UDC":                       tt.udc,
			} {
				if got := f.entries[g+file]; got != "file:"+want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if got := f.entries[g+config+"/hid.usb0"]; got != "link:"+g+function {
				t.Errorf("the configuration's link: %q", got)
			}
			if last := f.ops[len(f.ops)-1]; last != "write keyrelay/UDC" {
				t.Errorf("the last step is %q, want the binding (after everything it binds is made)", last)
			}
		})
	}
}

// TestSetupRefuses: a machine with no gadget configfs or no controller,
// a controller that is not there, and a gadget already made are refused
// with what to do, and nothing is made.
func TestSetupRefuses(t *testing.T) {
	noConfigfs := newFakeFS("dummy_udc.0")
	delete(noConfigfs.entries, GadgetsDir)
	exists := newFakeFS("dummy_udc.0")
	exists.entries[GadgetsDir+"/keyrelay"] = "dir"
	for _, tt := range []struct {
		name string
		f    *fakeFS
		o    Options
		is   error
		want string
	}{
		{"no configfs", noConfigfs, Options{}, ErrNoConfigfs, "modprobe libcomposite"},
		{"no controller", newFakeFS(), Options{}, ErrNoUDC, "dtoverlay=dwc2"},
		{"an unknown controller", newFakeFS("dummy_udc.0"), Options{UDC: "musb"}, ErrNoUDC, `named "musb": the controllers here are dummy_udc.0`},
		{"made already", exists, Options{}, nil, "exists already: remove it first (keyrelay gadget remove)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Setup(tt.f, tt.o)
			if err == nil || tt.is != nil && !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Setup = %v, want an error saying %q", err, tt.want)
			}
			if len(tt.f.ops) != 0 {
				t.Errorf("Setup changed %q", tt.f.ops)
			}
		})
	}
}

// TestSetupFailingHalfWayLeavesNothing: a step that fails (not root) takes
// back what was made, so the next setup starts clean, and says to run as
// root.
func TestSetupFailingHalfWayLeavesNothing(t *testing.T) {
	f := newFakeFS("dummy_udc.0")
	f.failOn = GadgetsDir + "/keyrelay/" + function
	_, err := Setup(f, Options{})
	if err == nil || !strings.Contains(err.Error(), "sudo keyrelay gadget setup") {
		t.Errorf("Setup = %v, want a permission error saying to run as root", err)
	}
	for p := range f.entries {
		if strings.HasPrefix(p, GadgetsDir+"/") {
			t.Errorf("%s left behind", p)
		}
	}
}

// TestRemoveUndoesSetup: remove unbinds first and takes the gadget apart
// in the order configfs allows (the fake refuses a directory still linked
// to or holding one); a second remove has nothing to do.
func TestRemoveUndoesSetup(t *testing.T) {
	f := newFakeFS("dummy_udc.0")
	if _, err := Setup(f, Options{Name: "kb"}); err != nil {
		t.Fatal(err)
	}
	f.ops = nil
	if err := Remove(f, Options{Name: "kb"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"write kb/UDC", "remove kb/configs/c.1/hid.usb0", "remove kb/configs/c.1/strings/0x409", "remove kb/configs/c.1",
		"remove kb/functions/hid.usb0", "remove kb/strings/0x409", "remove kb"}
	if !slices.Equal(f.ops, want) {
		t.Errorf("remove did\n%s\nwant\n%s", strings.Join(f.ops, "\n"), strings.Join(want, "\n"))
	}
	f.ops = nil
	if err := Remove(f, Options{Name: "kb"}); err != nil || len(f.ops) != 0 {
		t.Errorf("second Remove = %v, did %q", err, f.ops)
	}
}

// TestDevice: the keyboard's /dev node is found from the function's
// device number.
func TestDevice(t *testing.T) {
	f := newFakeFS("dummy_udc.0")
	Setup(f, Options{})
	f.entries[GadgetsDir+"/keyrelay/"+function+"/dev"] = "file:236:0\n"
	f.entries["/sys/dev/char/236:0/uevent"] = fmt.Sprintf("file:MAJOR=236\nMINOR=0\nDEVNAME=%s\n", "hidg0")
	if got, err := Device(f, Options{}); err != nil || got != "/dev/hidg0" {
		t.Errorf("Device = %q, %v", got, err)
	}
}
