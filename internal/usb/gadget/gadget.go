// Package gadget makes and removes the USB keyboard gadget recv --inject
// hidg types through: a configfs USB gadget (libcomposite) with one HID
// function, a boot keyboard with LEDs (internal/usb/hidkbd's descriptor),
// bound to a USB device controller. The file system is passed in, so the
// steps are tested on a recording fake; the VM test runs them on a real
// kernel (dummy_hcd).
package gadget

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/internal/usb/hidkbd"
)

// Where the kernel puts things, as absolute paths under the FS root.
const (
	// GadgetsDir is configfs's usb_gadget directory.
	GadgetsDir = "/sys/kernel/config/usb_gadget"
	// UDCDir lists the USB device controllers a gadget can be bound to.
	UDCDir = "/sys/class/udc"
	// function is the gadget's one function: HID, instance usb0.
	function = "functions/hid.usb0"
	config   = "configs/c.1"
)

// DefaultName is the gadget's directory name under GadgetsDir.
const DefaultName = "keyrelay"

// FS is what the set-up needs of the file system; OS is the real one.
type FS interface {
	Mkdir(name string) error
	WriteFile(name string, data []byte) error
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]string, error)
	Symlink(target, link string) error
	Remove(name string) error
	Exists(name string) bool
}

// OS is the machine's file system.
type OS struct{}

func (OS) Mkdir(name string) error                  { return os.Mkdir(name, 0o755) }
func (OS) WriteFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }
func (OS) ReadFile(name string) ([]byte, error)     { return os.ReadFile(name) }
func (OS) Symlink(target, link string) error        { return os.Symlink(target, link) }
func (OS) Remove(name string) error                 { return os.Remove(name) }
func (OS) Exists(name string) bool                  { _, err := os.Lstat(name); return err == nil }
func (OS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(name)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, err
}

// Options say which gadget to make.
type Options struct {
	Name string // directory under GadgetsDir; DefaultName if ""
	UDC  string // the controller to bind to; the first in UDCDir if ""
}

// ErrNoConfigfs and ErrNoUDC are wrapped by Setup's errors for a machine
// that cannot be a USB gadget as it is.
var (
	ErrNoConfigfs = errors.New("no USB gadget configfs")
	ErrNoUDC      = errors.New("no USB device controller")
)

// Descriptor strings and ids: the Linux Foundation's vendor id with its
// "multifunction composite gadget" product, as the kernel's own examples
// use; the host shows "keyrelay USB keyboard".
const (
	vendorID     = "0x1d6b"
	productID    = "0x0104"
	Manufacturer = "keyrelay"
	Product      = "USB keyboard"
)

func (o Options) dir() string {
	name := o.Name
	if name == "" {
		name = DefaultName
	}
	return path.Join(GadgetsDir, name)
}

// Setup makes the gadget and binds it; it returns the controller bound.
func Setup(fsys FS, o Options) (udc string, err error) {
	if !fsys.Exists(GadgetsDir) {
		return "", fmt.Errorf("%w: %s does not exist: load the gadget modules (sudo modprobe libcomposite) and mount configfs if it is not (sudo mount -t configfs none /sys/kernel/config)", ErrNoConfigfs, GadgetsDir)
	}
	udc, err = pickUDC(fsys, o.UDC)
	if err != nil {
		return "", err
	}
	dir := o.dir()
	if fsys.Exists(dir) {
		return "", fmt.Errorf("the gadget %s exists already: remove it first (keyrelay gadget remove%s)", dir, nameFlag(o))
	}
	steps := []struct {
		mkdir string
		file  string
		data  []byte
		link  [2]string
	}{
		{mkdir: ""},
		{file: "idVendor", data: []byte(vendorID)},
		{file: "idProduct", data: []byte(productID)},
		{file: "bcdDevice", data: []byte("0x0100")},
		{file: "bcdUSB", data: []byte("0x0200")},
		{mkdir: "strings/0x409"},
		{file: "strings/0x409/manufacturer", data: []byte(Manufacturer)},
		{file: "strings/0x409/product", data: []byte(Product)},
		{file: "strings/0x409/serialnumber", data: []byte("0001")},
		// The HID function: a keyboard in the boot subclass, so that a
		// BIOS or boot menu reads it too (HID 1.11 §4.2, §4.3).
		{mkdir: function},
		{file: function + "/protocol", data: []byte("1")},
		{file: function + "/subclass", data: []byte("1")},
		{file: function + "/report_length", data: []byte(fmt.Sprint(hidkbd.ReportLen))},
		{file: function + "/report_desc", data: hidkbd.Descriptor},
		{mkdir: config},
		{mkdir: config + "/strings/0x409"},
		{file: config + "/strings/0x409/configuration", data: []byte("keyboard")},
		{file: config + "/MaxPower", data: []byte("100")},
		{link: [2]string{path.Join(dir, function), path.Join(dir, config, "hid.usb0")}},
		{file: "UDC", data: []byte(udc)},
	}
	for _, s := range steps {
		var err error
		switch {
		case s.file != "":
			err = fsys.WriteFile(path.Join(dir, s.file), s.data)
		case s.link[0] != "":
			err = fsys.Symlink(s.link[0], s.link[1])
		default:
			err = fsys.Mkdir(path.Join(dir, s.mkdir))
		}
		if err != nil {
			// Leave nothing half made: a second setup would find it.
			rerr := Remove(fsys, o)
			if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%w (run as root: sudo keyrelay gadget setup)", err)
			}
			return "", errors.Join(fmt.Errorf("unable to make the gadget %s: %w", dir, err), rerr)
		}
	}
	return udc, nil
}

func nameFlag(o Options) string {
	if o.Name == "" || o.Name == DefaultName {
		return ""
	}
	return " --name " + o.Name
}

// pickUDC returns want if the machine has it, else the first controller.
func pickUDC(fsys FS, want string) (string, error) {
	udcs, err := fsys.ReadDir(UDCDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("unable to list the USB device controllers: %w", err)
	}
	slices.Sort(udcs)
	if len(udcs) == 0 {
		return "", fmt.Errorf("%w in %s: this machine has no USB port that can be a device, or its driver is not loaded (on a Raspberry Pi Zero, 4 or 5: dtoverlay=dwc2 in config.txt and dwc2 in /etc/modules, then reboot, and use the USB-C or OTG port)", ErrNoUDC, UDCDir)
	}
	if want == "" {
		return udcs[0], nil
	}
	if !slices.Contains(udcs, want) {
		return "", fmt.Errorf("%w named %q: the controllers here are %s", ErrNoUDC, want, strings.Join(udcs, ", "))
	}
	return want, nil
}

// Remove unbinds the gadget and takes it apart, in the reverse order
// configfs needs (a directory goes once nothing links to it). A gadget
// that does not exist is no error: there is nothing to remove.
func Remove(fsys FS, o Options) error {
	dir := o.dir()
	if !fsys.Exists(dir) {
		return nil
	}
	var errs []error
	if fsys.Exists(path.Join(dir, "UDC")) {
		if udc, _ := fsys.ReadFile(path.Join(dir, "UDC")); strings.TrimSpace(string(udc)) != "" {
			if err := fsys.WriteFile(path.Join(dir, "UDC"), []byte("\n")); err != nil {
				errs = append(errs, fmt.Errorf("unbinding %s: %w", dir, err))
			}
		}
	}
	for _, p := range []string{config + "/hid.usb0", config + "/strings/0x409", config, function, "strings/0x409", ""} {
		name := path.Join(dir, p)
		if !fsys.Exists(name) {
			continue
		}
		if err := fsys.Remove(name); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%w (run as root: sudo keyrelay gadget remove)", err)
			}
			errs = append(errs, fmt.Errorf("unable to remove %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Device returns the /dev node of the gadget's keyboard (/dev/hidg0),
// from the major:minor number its function reports.
func Device(fsys FS, o Options) (string, error) {
	num, err := fsys.ReadFile(path.Join(o.dir(), function, "dev"))
	if err != nil {
		return "", fmt.Errorf("unable to read the keyboard's device number: %w", err)
	}
	uevent, err := fsys.ReadFile(path.Join("/sys/dev/char", strings.TrimSpace(string(num)), "uevent"))
	if err != nil {
		return "", fmt.Errorf("unable to find the keyboard's device: %w", err)
	}
	for _, line := range strings.Split(string(uevent), "\n") {
		if name, ok := strings.CutPrefix(line, "DEVNAME="); ok {
			return "/dev/" + name, nil
		}
	}
	return "", fmt.Errorf("no DEVNAME for device %s", strings.TrimSpace(string(num)))
}
