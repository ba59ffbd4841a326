package inject

import (
	"io"
	"os"
	"runtime"
	"slices"

	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
)

// Backends lists recv's injectors (--inject), each described once: recv's
// flag, its help and validation, auto's choice, doctor's checks, shell
// completion and the README's injector table all come from it, so adding
// an injector is its own file(s) and one entry here, and nothing in cmd.
//
// A plain slice in one file rather than registration from init functions:
// its order is the order of the help, the completion and the README table,
// fixed in one place; every entry is here whatever the build's operating
// system (a backend's constructor and check are stubs that fail where it
// cannot work), so the help and the README do not depend on where keyrelay
// was built; and a reader sees every backend, and auto's ranks side by
// side, without hunting for init functions across files and build tags.
//
// cmd reads it only; tests may replace it (and restore it) to see a fake
// backend flow through to the commands. Not safe to change while commands
// run.
var Backends = []Backend{
	{
		Name:  "x11",
		GOOS:  []string{"linux"},
		Short: "press keys in the X server of $DISPLAY",
		Help:  "press keys in the X server of $DISPLAY (XTEST), like a keyboard plugged in here: a physical key (from --input hook, a script's tap KeyZ) as the same key, so this machine's layout decides the character; a character (from a terminal, a script's type) as that character on any layout. Needs an X display with evdev keycodes (Xorg, Xwayland, Xvfb)",
		Layout: Layout{
			Key:  "the same key (XTEST keycode = evdev code + 8); the receiver's layout decides",
			Char: "that character: found on the receiver's keymap, with Shift/AltGr as its level needs, or typed through a spare keycode",
		},
		Caps:  Caps{Characters: true, Locks: true, Repeat: true},
		Needs: "an X display (`DISPLAY`) with XTEST and evdev keycodes",
		Check: &Check{
			What: "X display, XTEST and evdev keycodes",
			Run: func(Options) (string, error) {
				layout, err := CheckX11()
				return "DISPLAY=" + os.Getenv("DISPLAY") + " answers, has XTEST and evdev keycodes; its layout is \"" + layout + "\" (physical keys type what this layout puts on them)", err
			},
			Fix: "run inside the graphical session or set DISPLAY (e.g. DISPLAY=:0), allow this user (xhost/XAUTHORITY); without X use --inject uinput",
		},
		Auto: &Auto{Rank: 20, When: func(h Host) bool { return h.Getenv("DISPLAY") != "" },
			Desc: "when $DISPLAY is set", Unmet: "no DISPLAY"},
		New: func(o Options) (Injector, error) { return NewX11(o.Logf) },
	},
	{
		Name:  "robotgo",
		GOOS:  []string{"linux", "darwin", "windows"},
		Short: "press keys through robotgo",
		Help:  "press keys through robotgo: on X11 a physical key becomes the character the US layout puts on it, looked up in this layout (between German desktops the key labelled Z types y), so use the same layout on both ends; characters type as themselves. On macOS and Windows only in a build made with -tags robotgo (cgo; release builds have none), chosen by name only (auto picks macos or windows there)",
		Layout: Layout{
			Key:  "the character the *US* layout puts on it, looked up on the receiver's layout: same layout on both ends needed, and AltGr levels, the ISO and JIS keys are out of reach",
			Char: "that character (by its key, or robotgo's scratch keycode)",
		},
		Caps:  Caps{Characters: true, Repeat: true},
		Needs: "Linux: an X display with XTEST; macOS, Windows: a build with `-tags robotgo` (cgo), and the desktop",
		Check: &Check{
			What: "X display and XTEST",
			Run: func(Options) (string, error) {
				if runtime.GOOS != "linux" {
					// robotgo types through the desktop there: no X.
					return "no X display needed on " + runtime.GOOS, CheckDisplay()
				}
				return "DISPLAY=" + os.Getenv("DISPLAY") + " answers and has XTEST", CheckDisplay()
			},
			Fix: "run inside the graphical session or set DISPLAY (e.g. DISPLAY=:0), allow this user (xhost/XAUTHORITY); without X use --inject uinput",
		},
		// Never auto: windows and macos press physical keys where robotgo
		// turns them into the US layout's characters; it stays for those
		// who name it.
		New: func(o Options) (Injector, error) { return NewRobotgo(o.Logf) },
	},
	{
		Name:  "uinput",
		GOOS:  []string{"linux"},
		Short: "a virtual keyboard in the Linux kernel",
		Help:  "a virtual keyboard in the Linux kernel (/dev/uinput, writable); works without X: Wayland, console. A physical key as the same key, so this machine's layout decides the character; the kernel has no layout, so a character is typed through the one --layout names for this machine (the keys it needs, Shift, AltGr and dead keys included), else reported and skipped. A held key auto-repeats at the kernel's rate; Caps/Num Lock follow its LEDs",
		Layout: Layout{
			Key:  "the same key (evdev code); the receiver's console, compositor or X server decides",
			Char: "with `--layout` (this machine's layout, e.g. `de`): the keys that XKB layout needs, Shift, AltGr and dead keys included; without it, or a character that layout lacks: reported once, counted, nothing typed (the kernel has no layout)",
		},
		Caps:  Caps{Locks: true, Repeat: true, Device: true},
		Needs: "`/dev/uinput` writable (root, or a udev rule and group `input`)",
		Check: &Check{
			What: DefaultUinputPath,
			Run: func(Options) (string, error) {
				return DefaultUinputPath + " is writable", CheckUinput(DefaultUinputPath)
			},
			Fix: "sudo modprobe uinput; a udev rule KERNEL==\"uinput\", GROUP=\"input\", MODE=\"0660\" and membership of group input",
		},
		Auto: &Auto{Rank: 30, When: func(h Host) bool { return h.Exists(DefaultUinputPath) },
			Desc: "when " + DefaultUinputPath + " exists", Unmet: "no " + DefaultUinputPath},
		NamedLayout: &NamedLayout{What: "this machine's layout, whose keys uinput presses"},
		New: func(o Options) (Injector, error) {
			u, err := NewUinput(DefaultUinputPath, o.Logf)
			if err != nil {
				return nil, err
			}
			u.SetLayout(o.Layout)
			return u, nil
		},
	},
	{
		Name:  "wayland",
		GOOS:  []string{"linux"},
		Short: "a virtual keyboard of the Wayland compositor",
		Help:  "press keys through the Wayland compositor's virtual keyboard (zwp_virtual_keyboard_v1: sway, Hyprland, river, labwc; not GNOME or KDE, which offer none: use uinput there): a physical key as the same key with the seat's keymap, so this machine's layout decides the character; a character as that character on any layout (put on a writing key of a copy of the seat's keymap, uploaded when a new character comes). Caps/Num Lock follow the sender",
		Layout: Layout{
			Key:  "the same key (evdev code) with the seat's keymap, read when `recv` starts: the receiver's layout decides",
			Char: "that character, on a writing key (a letter, digit or punctuation key) of a copy of the seat's keymap, uploaded when a new character comes and kept while text is typed; the seat's keymap is back for a physical writing key",
		},
		// Clients repeat a held virtual key as they do a real one's
		// (wl_keyboard.repeat_info).
		Caps:  Caps{Characters: true, Locks: true, Repeat: true},
		Needs: "a wlroots compositor (sway, Hyprland, river, labwc) offering `zwp_virtual_keyboard_v1` at `WAYLAND_DISPLAY`",
		// Before x11: XTEST into Xwayland reaches X clients only. Asked over
		// a connection, so GNOME and KDE, which lack the protocol, fall
		// through to x11 or uinput.
		Check: &Check{
			What: "Wayland compositor with zwp_virtual_keyboard_v1",
			Run:  func(Options) (string, error) { return CheckWayland(os.Getenv) },
			Fix:  "run recv in the Wayland session (WAYLAND_DISPLAY and XDG_RUNTIME_DIR set) of a wlroots compositor (sway, Hyprland, river, labwc); on GNOME or KDE, which offer no virtual keyboard, use --inject uinput",
		},
		Auto: &Auto{Rank: 15, When: func(h Host) bool { return h.Getenv("WAYLAND_DISPLAY") != "" && HasWaylandKeyboard(h.Getenv) },
			Desc: "when $WAYLAND_DISPLAY names a compositor that offers the virtual keyboard"},
		New: func(o Options) (Injector, error) { return NewWayland(os.Getenv, o.Logf) },
	},
	{
		Name:  "hidg",
		GOOS:  []string{"linux"},
		Short: "be a USB keyboard",
		Help:  "be a USB keyboard: the Linux USB gadget's keyboard (--device, /dev/hidg0; made by keyrelay gadget setup) on a board with a USB device port (a Raspberry Pi), its cable in the computer to type into, which runs nothing of keyrelay (a BIOS, a login screen, any OS). A physical key as the same key: that computer's layout decides the character; a character through the layout --layout names for that computer (the keys it needs, Shift, AltGr and dead keys included), else reported and skipped; Caps/Num Lock follow its LEDs",
		Layout: Layout{
			Key:  "the same key (its HID usage, in a USB keyboard report); the computer at the other end of the cable decides",
			Char: "with `--layout` (that computer's layout, e.g. `de`): the keys that XKB layout needs, Shift, AltGr and dead keys included; without it, or a character that layout lacks: reported once, counted, nothing typed",
		},
		// The host repeats a held key, as it does a real USB keyboard's.
		Caps:  Caps{Locks: true, Repeat: true, Device: true},
		Needs: "a USB device port and the gadget (`keyrelay gadget setup`, root)",
		Check: &Check{
			What: "USB keyboard gadget's device",
			Run:  func(o Options) (string, error) { return CheckHidg(o.Device) },
			Fix:  "sudo keyrelay gadget setup (on a board with a USB device port: a Raspberry Pi Zero, 4 or 5 with dtoverlay=dwc2), then name its device with recv --device if it is not " + DefaultHidgPath + "; to run recv without root, a udev rule KERNEL==\"hidg*\", GROUP=\"input\", MODE=\"0660\" and membership of group input",
		},
		// Never auto: typing into another computer is chosen, not found.
		Device:      &Device{Default: DefaultHidgPath, What: "the USB keyboard gadget's device"},
		NamedLayout: &NamedLayout{What: "the layout of the computer at the other end of the USB cable"},
		New: func(o Options) (Injector, error) {
			h, err := NewHidg(o.Device, o.Logf)
			if err != nil {
				return nil, err
			}
			h.SetLayout(o.Layout)
			return h, nil
		},
	},
	{
		Name:  "windows",
		GOOS:  []string{"windows"},
		Short: "press keys on this Windows desktop (SendInput)",
		Help:  "press keys on this Windows desktop with SendInput, in pure Go: a physical key by its scan code, so this machine's layout decides the character; a character as that character on any layout (KEYEVENTF_UNICODE); Caps/Num Lock follow the sender. Windows keeps it from the sign-in screen, UAC prompts and programs running as administrator (unless recv does too)",
		Layout: Layout{
			Key:  "the same key (its scan code, with wVk from MapVirtualKey); the receiver's layout decides",
			Char: "that character (`KEYEVENTF_UNICODE`), on any layout",
		},
		// A posted key is not repeated by the system as a held real key is.
		Caps:  Caps{Characters: true, Locks: true},
		Needs: "the Windows desktop of the signed-in user (not the sign-in screen, a UAC prompt or a service's session)",
		Check: &Check{
			What: "Windows desktop to type on",
			Run:  func(Options) (string, error) { return CheckWindows() },
			Fix:  "run recv in the signed-in user's session (a logon task or the Startup folder, not a service), with the desktop unlocked; run it as administrator to type into programs that run so",
		},
		// The native injector: physical keys by scan code.
		Auto: &Auto{Rank: 10, Desc: "on Windows"},
		New:  func(o Options) (Injector, error) { return NewWindows(o.Logf) },
	},
	{
		Name:  "macos",
		GOOS:  []string{"darwin"},
		Short: "press keys on this Mac (Quartz events)",
		Help:  "press keys on this Mac by posting Quartz key events (pure Go, no cgo): a physical key as its virtual keycode, so this Mac's layout decides the character; modifiers as real presses and releases; a character as itself on any layout. Needs Accessibility in System Settings > Privacy & Security. Caps Lock follows the sender (IOKit). Not yet run on a Mac",
		Layout: Layout{
			Key:  "the same key (its macOS virtual keycode, from keycodemapdb); the Mac's layout decides (not yet run on a Mac)",
			Char: "that character, as a Unicode string on the posted event, on any layout",
		},
		// A posted key is not repeated by the system as a held real key is.
		Caps:  Caps{Characters: true, Locks: true},
		Needs: "Accessibility permission (System Settings > Privacy & Security)",
		Check: &Check{
			What: "macOS Accessibility permission",
			Run:  func(Options) (string, error) { return CheckMacOS() },
			Fix:  "turn on the app recv is started from (Terminal, iTerm, or keyrelay itself) in System Settings > Privacy & Security > Accessibility, then start recv again",
		},
		// The native injector: physical keys by virtual keycode.
		Auto: &Auto{Rank: 10, Desc: "on macOS"},
		New:  func(o Options) (Injector, error) { return NewMacOS(o.Logf) },
	},
	{
		Name:  "log",
		Short: "one JSON object per key event on standard output",
		Help:  "one JSON object per key event on standard output ({\"key\":\"KeyA\",...} or {\"char\":\"é\",...}); needs nothing",
		Layout: Layout{
			Key:  "`{\"key\":\"KeyZ\",…}`",
			Char: "`{\"char\":\"é\",…}`",
		},
		Caps:  Caps{Characters: true, Locks: true, Stdout: true},
		Needs: "nothing",
		Auto:  &Auto{Rank: 1000, Note: "keys are logged to standard output, not typed (choose with --inject)"},
		New:   func(o Options) (Injector, error) { return &Log{W: o.Out}, nil },
	},
}

// Backend describes one injector: what recv, doctor, completion and the
// README say of it and how recv makes it.
type Backend struct {
	// Name is the --inject value.
	Name string
	// GOOS lists the operating systems (runtime.GOOS) it types on; nil:
	// every one. Its files' build tags leave stubs elsewhere, whose
	// constructor and check fail saying so.
	GOOS []string
	// Short is the one line shell completion shows; Help is recv --help's
	// paragraph.
	Short, Help string
	// Layout says what it does with layouts: the README's "Keys and
	// layouts" table.
	Layout Layout
	Caps   Caps
	// Needs says what it needs of the machine, for the README's table.
	Needs string
	// Check is doctor's check of what it needs (nil: none).
	Check *Check
	// Auto is how --inject auto ranks it (nil: never picked).
	Auto *Auto
	// Device, if set, is recv's --device for it (nil: --device is refused
	// with this injector).
	Device *Device
	// NamedLayout, if set, is recv's --layout for it: the target's
	// layout, named by the user because the injector cannot ask it,
	// which characters are typed through (nil: --layout is refused with
	// this injector).
	NamedLayout *NamedLayout
	// New makes it from recv's options, checking what it needs before any
	// key arrives.
	New func(Options) (Injector, error)
}

// Layout says what an injector makes of each kind of key event (README
// "Keys and layouts"): Key a physical key, Char a character. Markdown.
type Layout struct{ Key, Char string }

// Caps are what an injector can do beyond pressing physical keys.
type Caps struct {
	Characters bool // types characters (sink.Event's Char), not only keys
	Locks      bool // sets Caps/Num Lock (receiver.LockSetter)
	Repeat     bool // a held key repeats at the target, as a real keyboard's does
	Device     bool // opens a device node: root, a group or a udev rule
	Stdout     bool // writes to standard output: recv draws no status there
}

// Check is doctor's check of an injector: What names it ("/dev/uinput",
// shown with the --inject it is for), Run returns the line to show when it
// passes and the error when it fails, Fix says what to do then.
type Check struct {
	What string
	Run  func(Options) (ok string, err error)
	Fix  string
}

// Auto is how --inject auto ranks an injector: the lowest Rank whose
// condition holds wins. GOOS (nil: the backend's) restricts where auto
// considers it; When (nil: always) is the condition, Desc says it for the
// help ("when $DISPLAY is set"), Unmet says it failed ("no DISPLAY") when
// auto falls back to a later one. Note, if set, is logged when auto picks
// it, after the unmet conditions of those ranked before: a fallback that
// may not be what the user wants.
type Auto struct {
	Rank              int
	GOOS              []string
	When              func(Host) bool
	Desc, Unmet, Note string
}

// Device is an injector's device node, recv's --device: its Default, and
// What it is, for the flag's help and the error when --device is given to
// another injector.
type Device struct{ Default, What string }

// NamedLayout is an injector's --layout: What the layout is of, for the
// flag's help and the error when --layout is given to another injector.
type NamedLayout struct{ What string }

// Options are what an injector is made from: recv's settings and outputs.
type Options struct {
	Device string               // --device, for an injector with a Device
	Layout *xkblayout.Layout    // --layout, for an injector with a NamedLayout; nil: none named
	Out    io.Writer            // standard output
	Logf   func(string, ...any) // recv's log
}

// Host is what auto's conditions look at: a value, so that tests can
// describe a machine. OSHost is this one.
type Host struct {
	GOOS   string
	Getenv func(string) string
	Exists func(path string) bool
}

// OSHost is this machine, as auto's conditions see it.
func OSHost() Host {
	return Host{GOOS: runtime.GOOS, Getenv: os.Getenv, Exists: func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	}}
}

// Lookup returns the injector named name.
func Lookup(name string) (Backend, bool) {
	i := slices.IndexFunc(Backends, func(b Backend) bool { return b.Name == name })
	if i < 0 {
		return Backend{}, false
	}
	return Backends[i], true
}

// Names are the injectors' names, in Backends' order.
func Names() []string {
	out := make([]string, len(Backends))
	for i, b := range Backends {
		out[i] = b.Name
	}
	return out
}

// WithDevice are the injectors that open a device of the user's choice
// (recv's --device), in Backends' order.
func WithDevice() []Backend {
	var out []Backend
	for _, b := range Backends {
		if b.Device != nil {
			out = append(out, b)
		}
	}
	return out
}

// WithLayout are the injectors that type characters through a named XKB
// layout (recv's --layout), in Backends' order.
func WithLayout() []Backend {
	var out []Backend
	for _, b := range Backends {
		if b.NamedLayout != nil {
			out = append(out, b)
		}
	}
	return out
}

// Ranked are the injectors auto considers on goos ("": on any), best
// first.
func Ranked(goos string) []Backend {
	var out []Backend
	for _, b := range Backends {
		if b.Auto == nil {
			continue
		}
		on := b.Auto.GOOS
		if on == nil {
			on = b.GOOS
		}
		if goos != "" && on != nil && !slices.Contains(on, goos) {
			continue
		}
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b Backend) int { return a.Auto.Rank - b.Auto.Rank })
	return out
}

// Choose is auto's choice on h: the first of Ranked whose condition holds,
// and, for each one ranked before it, why not (their Unmet, where said).
// ok is false when none holds.
func Choose(h Host) (b Backend, unmet []string, ok bool) {
	for _, b := range Ranked(h.GOOS) {
		if b.Auto.When == nil || b.Auto.When(h) {
			return b, unmet, true
		}
		if b.Auto.Unmet != "" {
			unmet = append(unmet, b.Auto.Unmet)
		}
	}
	return Backend{}, unmet, false
}
