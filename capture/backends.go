package capture

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/keys"
)

// Sources lists send's key sources (--input), each described once: send's
// flag, its help and validation, doctor's checks, shell completion and the
// README's source table come from it, so adding a source is its own
// file(s) and one entry here, and nothing in cmd. A plain slice in one
// file, as inject.Backends and for the same reasons: one order for every
// listing, every entry on every build (stubs fail where a source cannot
// work), and all of them in sight.
//
// cmd reads it only; tests may replace it (and restore it). Not safe to
// change while commands run.
var Sources = []SourceBackend{
	{
		Name:   "terminal",
		GOOS:   []string{"linux", "darwin"},
		Short:  "the keys typed in this terminal",
		Help:   "the keys typed in this terminal (the default without --script; needs a terminal). Text goes as characters (the receiver types them whatever its layout), named keys (arrows, Home, F1..., Enter, Tab, Backspace, Escape, Space) as physical keys. Most terminals report presses only: each key is a tap, with the Ctrl, Alt, Shift or Super the terminal encodes pressed around it. A terminal that implements the kitty keyboard protocol in full (kitty's own, and others) reports releases too: keys and modifiers go down and up as typed, and holding a key holds it at the receiver. The status line says which mode is on. Sequences that are not keys are dropped and counted, never sent. Ctrl+] ends the session; every other key, Ctrl+C included, goes to the receiver.",
		Layout: "characters for text, physical keys for named keys: the receiver's layout does not change the text",
		Caps:   SourceCaps{Characters: true, Repeat: true, Terminal: true},
		Needs:  "a terminal (`/dev/tty`)",
		// No terminal is a matter of the command line: --script instead.
		Ready:        func(SourceOptions) error { return CheckTerminal() },
		ReadyIsUsage: true,
		Check: &SourceCheck{
			What: "terminal",
			Run:  func(SourceOptions) (string, error) { return "/dev/tty opens", CheckTerminal() },
			Fix:  "run send in a terminal, or use --script FILE or --input hook",
		},
		New: func(o SourceOptions) (Source, error) {
			return &Terminal{Label: o.Label, Status: o.Status, Liveness: o.Liveness}, nil
		},
	},
	{
		Name:    "x11",
		Aliases: []string{"hook"},
		GOOS:    []string{"linux"},
		Short:   "every key of this X session (X RECORD)",
		Help:    "true key-down and key-up from the X session of $DISPLAY (X RECORD, pure Go; \"hook\" is the same): auto-repeat is dropped; modifiers are relayed as keys. Without --grab the keys reach the local desktop too. Needs DISPLAY (and RECORD without --grab). Ends on SIGINT/SIGTERM, or with an error when the X server goes away.",
		Layout:  "physical keys: the receiver's layout decides, as for a keyboard plugged into it",
		Caps:    SourceCaps{Grab: true, Locks: true, Releases: true},
		Needs:   "an X display (`DISPLAY`), with RECORD unless `--grab`",
		Ready:   func(o SourceOptions) error { return CheckX11(o.Grab) },
		Hotkey:  checkX11Hotkey,
		Keymap: &SourceKeymap{
			What:   "this X display's keymap",
			Where:  func() string { return "DISPLAY=" + os.Getenv("DISPLAY") },
			Read:   X11Keymap,
			Follow: FollowX11Keymap,
			Check:  checkX11Keymap,
			Fix:    "run doctor and send in the X session (DISPLAY set, e.g. DISPLAY=:0), or name this keyboard's layout with --layout LAYOUT",
		},
		Check: &SourceCheck{
			What: "X RECORD extension", When: "without --grab",
			Run: func(SourceOptions) (string, error) {
				return "DISPLAY=" + os.Getenv("DISPLAY") + " has RECORD", CheckHook()
			},
			Fix: "enable RECORD in the X server (Xorg: Load \"record\" in the Module section; Xvfb: do not pass -extension RECORD), or use send --grab (it needs no RECORD), or --input terminal",
		},
		New: func(o SourceOptions) (Source, error) {
			return &X11{Label: o.Label, Status: o.Status, Grab: o.Grab, Hotkey: o.Hotkey}, nil
		},
	},
	{
		Name:   "evdev",
		GOOS:   []string{"linux"},
		Short:  "the keyboards under /dev/input (any Linux desktop, the console)",
		Help:   "(Linux) true key-down and key-up from the keyboards under /dev/input, below X or Wayland: any desktop, the console, headless. Default: every keyboard (not recv's own virtual one), and those plugged in later; --device PATH reads only those. Needs read access to /dev/input/event* (the input group, or a udev uaccess rule; doctor --input evdev checks it).",
		Layout: "physical keys: the receiver's layout decides, as for a keyboard plugged into it",
		Caps:   SourceCaps{Grab: true, Locks: true, Releases: true, Devices: true, Device: true},
		Needs:  "read access to `/dev/input/event*` (group `input` or a udev `uaccess` rule)",
		Ready:  func(o SourceOptions) error { return CheckEvdev(o.Devices) },
		Check: &SourceCheck{
			What: "keyboards under /dev/input",
			Run: func(o SourceOptions) (string, error) {
				kbds, err := EvdevKeyboards(o.Devices)
				return "send --input evdev reads " + strings.Join(kbds, ", "), err
			},
			Fix: "Linux only; to read /dev/input/event*: sudo usermod -aG input $USER (then log in again), or a udev rule giving your user access (TAG+=\"uaccess\"); name a keyboard with --device /dev/input/eventN (ls -l /dev/input/by-id)",
		},
		New: func(o SourceOptions) (Source, error) {
			return &Evdev{Label: o.Label, Status: o.Status, Devices: o.Devices, Grab: o.Grab, Hotkey: o.Hotkey}, nil
		},
	},
	{
		Name:   "windows",
		GOOS:   []string{"windows"},
		Short:  "every key of this Windows desktop (a low-level keyboard hook)",
		Help:   "(Windows) true key-down and key-up of this Windows desktop by scan code (a low-level keyboard hook, pure Go); keys a program typed (SendInput) are not relayed. Without --grab the keys act here too. Windows keeps Ctrl+Alt+Del and the secure desktop (sign-in, UAC) from every hook.",
		Layout: "physical keys (scan codes): the receiver's layout decides, as for a keyboard plugged into it",
		Caps:   SourceCaps{Grab: true, Locks: true, Releases: true},
		Needs:  "the Windows desktop of the signed-in user (its hook sees nothing of the sign-in screen, UAC prompts or Ctrl+Alt+Del)",
		Ready:  func(SourceOptions) error { return CheckWindows() },
		Check: &SourceCheck{
			What: "Windows desktop to read keys on",
			Run:  func(SourceOptions) (string, error) { return checkWindowsDesktop() },
			Fix:  "run send in the signed-in user's session (not a service), with the desktop unlocked; run it as administrator to read keys typed into programs that run so",
		},
		New: func(o SourceOptions) (Source, error) {
			return &Windows{Label: o.Label, Status: o.Status, Grab: o.Grab, Hotkey: o.Hotkey}, nil
		},
	},
	{
		Name:   "macos",
		GOOS:   []string{"darwin"},
		Short:  "every key of this Mac (a Quartz event tap)",
		Help:   "(macOS) true key-down and key-up from a Quartz event tap, system-wide, by virtual keycode (pure Go, no cgo); modifiers are relayed as keys, auto-repeat is dropped. Needs Input Monitoring (and Accessibility with --grab) in System Settings > Privacy & Security. Says when an app's secure input keeps keys from it. Not yet run on a Mac.",
		Layout: "physical keys (virtual keycodes): the receiver's layout decides, as for a keyboard plugged into it",
		Caps:   SourceCaps{Grab: true, Locks: true, Releases: true},
		Needs:  "Input Monitoring permission, and Accessibility with `--grab` (System Settings > Privacy & Security)",
		Ready:  func(o SourceOptions) error { return CheckMacOS(o.Grab) },
		Hotkey: CheckMacOSHotkey,
		Check: &SourceCheck{
			What: "macOS Input Monitoring permission",
			Run:  func(SourceOptions) (string, error) { return checkMacOSAccess() },
			Fix:  "turn on the app send is started from (Terminal, iTerm, or keyrelay itself) in System Settings > Privacy & Security > Input Monitoring (and Accessibility for --grab), then start send again",
		},
		New: func(o SourceOptions) (Source, error) {
			return &MacOS{Label: o.Label, Status: o.Status, Grab: o.Grab, Hotkey: o.Hotkey, Debug: o.Debug}, nil
		},
	},
	{
		Name:   "script",
		Short:  "a key script (--script FILE)",
		Help:   "--script FILE: a key script (keyrelay help script: down, up, tap, key, hold, sleep, type, pace; W3C or xdotool key names, chords such as ctrl+shift+t); \"-\" reads it from standard input. A file is checked whole before anything is sent; a pipe or a FIFO is played line by line as it arrives (a bad line ends send there, exit 1, its held keys released).",
		Layout: "physical keys (`tap KeyZ`) and characters (`type \"é\"`), each as what it is",
		Caps:   SourceCaps{Characters: true, Releases: true, Script: true},
		Needs:  "nothing",
		// Opened first: a file is checked whole before anything is
		// resolved or sent.
		Early: true,
		New:   func(o SourceOptions) (Source, error) { return OpenScript(o.Script, o.Stdin) },
	},
}

// Source is what a key source gives send: its keys, as sender.Source
// (which capture does not import) takes them. A source may also be a
// sender.LockSource or SwitchSource.
type Source interface {
	Play(ctx context.Context, emit func(key keys.Key, down bool) error) error
}

// SourceBackend describes one key source: what send, doctor, completion
// and the README say of it, what it can do, and how send makes it.
type SourceBackend struct {
	// Name is the --input value; Aliases are other names for it.
	Name    string
	Aliases []string
	// GOOS lists the operating systems (runtime.GOOS) it reads keys on;
	// nil: every one.
	GOOS []string
	// Short is the one line shell completion shows; Help is send --help's
	// paragraph.
	Short, Help string
	// Layout says what it sends, physical keys or characters: what the
	// receiver's layout then does (README).
	Layout string
	Caps   SourceCaps
	// Needs says what it needs of the machine, for the README's table.
	Needs string
	// Ready checks, when send starts, that it can work (nil: always);
	// a failure exits 2 if ReadyIsUsage (the command line must change),
	// else 1.
	Ready        func(SourceOptions) error
	ReadyIsUsage bool
	// Hotkey, if set, is its own rule for --hotkey with --grab, beyond
	// every key having an evdev code (CheckHotkey).
	Hotkey func(Hotkey) error
	// Keymap, if set, reads the layout the keyboard types with from where
	// the source reads its keys: send's characters mode needs no --layout
	// with it.
	Keymap *SourceKeymap
	// Check is doctor's check of what it needs (nil: none).
	Check *SourceCheck
	// Early sources are made before send resolves or sends anything;
	// their options have no Label or Liveness yet.
	Early bool
	// New makes it from send's options.
	New func(SourceOptions) (Source, error)
}

// SourceCaps are what a source can do.
type SourceCaps struct {
	Grab       bool // owns the keyboard with --grab; --hotkey switches
	Locks      bool // tells the receiver its Caps/Num Lock (sender.LockSource)
	Characters bool // sends characters, not only physical keys
	Releases   bool // true key-ups: a held key is held at the receiver
	Repeat     bool // relays the local auto-repeat as presses (else dropped)
	Devices    bool // reads send's --device
	Device     bool // opens device nodes: a group or a udev rule
	Script     bool // plays send's --script
	Terminal   bool // owns this terminal: send draws its status only through it
}

// SourceCheck is doctor's check of a source: What names it, When
// qualifies when it is needed ("without --grab"), Run returns the line to
// show when it passes and the error when it fails, Fix says what to do.
type SourceCheck struct {
	What, When string
	Run        func(SourceOptions) (ok string, err error)
	Fix        string
}

// SourceKeymap is how a source tells the layout its keyboard types with,
// for send's characters mode without --layout. What names it in send's
// lines ("this X display's keymap"), Where says where it is read now
// ("DISPLAY=:0"). Read reads it, with the dead-key pairs of compose (the
// Compose file); Follow calls changed with each new one until ctx is done,
// or returns why it no longer can. Check is doctor's look at it: the line
// to show when it reads, else why not, with Fix to say what to do.
type SourceKeymap struct {
	What   string
	Where  func() string
	Read   func(compose io.Reader) (*charmode.Table, error)
	Follow func(ctx context.Context, was *charmode.Table, changed func(*charmode.Table)) error
	Check  func(compose io.Reader) (ok string, err error)
	Fix    string
}

// SourceOptions are what a source is made from: send's settings.
type SourceOptions struct {
	Label    string        // where keys go, for its status
	Status   io.Writer     // its status lines; nil: none (--quiet)
	Liveness func() string // how the receivers answer, for a status line
	Grab     bool
	Hotkey   Hotkey
	Devices  []string  // --device
	Script   string    // --script
	Debug    bool      // --debug: a source may show what it reads
	Stdin    io.Reader // send's standard input (--script -)
}

// LookupSource returns the source named name (or one of its aliases).
func LookupSource(name string) (SourceBackend, bool) {
	i := slices.IndexFunc(Sources, func(b SourceBackend) bool { return b.Name == name || slices.Contains(b.Aliases, name) })
	if i < 0 {
		return SourceBackend{}, false
	}
	return Sources[i], true
}

// SourceNames are the sources' names, in Sources' order; aliases lists
// their aliases after them.
func SourceNames(aliases bool) []string {
	var out, more []string
	for _, b := range Sources {
		out = append(out, b.Name)
		more = append(more, b.Aliases...)
	}
	if aliases {
		out = append(out, more...)
	}
	return out
}
