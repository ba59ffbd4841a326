package relay

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// SendOptions are a send's settings: keyrelay send's flags, as the
// command line, the environment and the config file give them.
type SendOptions struct {
	To        []string
	Input     string
	Script    string
	Interval  time.Duration
	Queue     int
	Linger    time.Duration
	Timeout   time.Duration
	Outage    time.Duration
	Wait      time.Duration
	Feedback  bool
	OneWay    bool
	Debug     bool
	Grab      bool
	Switch    bool
	Hotkey    string
	Devices   []string
	Keys      string // --keys: physical or characters, for every destination
	Layout    string // --layout: the sender's XKB layout, for --keys characters
	Key       KeyOptions
	Identity  string // --identity
	Peers     string // --peers
	Quiet     bool
	LogFormat string

	// ToTables are the config file's [[send.to]] tables.
	ToTables []dest.Spec
	// OutageGiven: --outage is set (command line, environment or config
	// file); unset, it follows --timeout.
	OutageGiven bool
	// HotkeyGiven: --hotkey is on the command line (not from a config
	// file or the environment, which fill the flag without marking it
	// changed): see CheckSettings.
	HotkeyGiven bool
	// IdentityPath and PeersPath are the identity and peers files as the
	// flags, the environment, the config file or the default name them
	// (config.SharedPath).
	IdentityPath, PeersPath string

	dests  []dest.Spec    // every destination, named (CheckSettings)
	hotkey capture.Hotkey // --hotkey, parsed by CheckSettings
}

// Dests are the destinations, every --to and [[send.to]] table named, in
// order, as CheckSettings made them.
func (o *SendOptions) Dests() []dest.Spec { return o.dests }

// CheckSettings checks the settings that flags alone cannot, without
// looking at this machine: send runs it first (Check), doctor alone. A
// usage error names the setting and what it wants.
func (o *SendOptions) CheckSettings() error {
	o.To = config.SplitList(o.To) // --to a:1,b:2, like KEYRELAY_SEND_TO
	if len(o.To) == 0 && len(o.ToTables) == 0 {
		return config.Usagef("no destination: give --to HOST[:PORT] (the receiver runs 'keyrelay recv', default port %s)", config.DefaultPort)
	}
	dests, err := dest.Named(o.To, o.ToTables)
	if err != nil {
		return err
	}
	o.dests = dests
	for _, d := range o.dests {
		if err := dest.CheckTo(d.Addr); err != nil {
			return err
		}
	}
	if !o.Feedback && !o.OneWay {
		return config.Involving(errors.New("--feedback=false is one-way and needs --one-way: "+oneWayCost), "feedback", "one-way")
	}
	// The values first, then what they need of this machine (a terminal,
	// an X display): a mistake in the settings is reported as such.
	hk, err := capture.ParseHotkey(o.Hotkey)
	if err != nil {
		return badHotkey(err)
	}
	o.hotkey = hk
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return config.BadValue("log-format", "unknown format (choose text or json)", fmt.Sprintf("unknown --log-format %q (choose text or json)", o.LogFormat))
	}
	if o.Queue < 1 || o.Queue > wire.MaxSafeEvents {
		want := fmt.Sprintf("out of range 1..%d (a longer queue might not fit in one packet)", wire.MaxSafeEvents)
		return config.BadValue("queue", want, fmt.Sprintf("--queue %d %s", o.Queue, want))
	}
	if o.Interval < time.Millisecond {
		return config.BadValue("interval", "too short (minimum 1ms)", fmt.Sprintf("--interval %v is too short (minimum 1ms)", o.Interval))
	}
	if o.Timeout < 10*time.Millisecond {
		return config.BadValue("timeout", "too short (minimum 10ms)", fmt.Sprintf("--timeout %v is too short (minimum 10ms)", o.Timeout))
	}
	// --timeout alone raises --outage with it: a receiver is owed keys
	// at least as long as it counts as live, and one that asked for a
	// longer --timeout did not ask for a shorter outage. Both given, the
	// user decides which to change.
	if !o.OutageGiven {
		o.Outage = max(sender.DefaultOutage, o.Timeout)
	}
	if o.Outage < o.Timeout {
		want := fmt.Sprintf("shorter than --timeout %v: a receiver is owed keys at least as long as it counts as live; set outage to %v or more, or leave it unset (it follows --timeout)", o.Timeout, o.Timeout)
		return config.BadValue("outage", want, fmt.Sprintf("--outage %v is shorter than --timeout %v: a receiver is owed keys at least as long as it counts as live; raise --outage to %v or more, or leave it unset (it follows --timeout)", o.Outage, o.Timeout, o.Timeout))
	}
	if o.Wait < 0 {
		return config.BadValue("wait", "negative (0: start at once)", fmt.Sprintf("--wait %v is negative (0: start at once)", o.Wait))
	}
	if o.Wait > 0 && !o.Feedback {
		return config.Involving(errors.New("--wait needs feedback: with --feedback=false no receiver answers, so there is nothing to wait for (drop --wait, or --feedback=false)"), "wait", "feedback")
	}
	switch {
	case o.Input == "" && o.Script != "":
		o.Input = "script"
	case o.Input == "":
		o.Input = "terminal"
	}
	b, ok := capture.LookupSource(o.Input)
	if !ok {
		choose, all := "choose "+spell.JoinOr(capture.SourceNames(false)), capture.SourceNames(true)
		return config.BadValue("input", "unknown key source ("+choose+")"+spell.Suggest(o.Input, all),
			fmt.Sprintf("unknown --input %q (%s)%s", o.Input, choose, spell.Suggest(o.Input, all)))
	}
	switch {
	case b.Caps.Script && o.Script == "":
		return config.Involving(fmt.Errorf("--input %s needs --script FILE (or --script - for standard input)", o.Input), "input")
	case !b.Caps.Script && o.Script != "":
		return config.Involving(fmt.Errorf("--script and --input %s exclude each other", o.Input), "script", "input")
	}
	if o.Grab && !b.Caps.Grab {
		return config.Involving(fmt.Errorf("--grab needs %s (--input %s has no keyboard to own)", sourcesWith(func(c capture.SourceCaps) bool { return c.Grab }), o.Input), "grab", "input")
	}
	// A hotkey is checked against its source now, not when the source
	// starts: a usage error at once, not a failure seconds into a session.
	// One from a config file or the environment is a preference for the
	// runs that grab, and is not refused without --grab; one on the
	// command line without --grab would do nothing.
	if o.HotkeyGiven && !o.Grab {
		return config.Involving(fmt.Errorf("--hotkey needs --grab: without it the keyboard is not owned, every key acts here and is relayed, and there is nothing to switch (add --grab with %s)", sourcesWith(func(c capture.SourceCaps) bool { return c.Grab })), "hotkey", "grab")
	}
	if o.Grab {
		if err := capture.CheckHotkey(o.hotkey, o.Input); err != nil {
			return badHotkey(err)
		}
	}
	if o.Grab && o.switching() {
		dest.DefaultHotkeys(o.dests, o.hotkey)
	}
	// A destination's hotkey is caught by send while relaying: it must be
	// one the source can report, and not --hotkey, which the source keeps.
	for _, d := range o.dests {
		if len(d.Hotkey) == 0 {
			continue
		}
		if o.Grab && d.Hotkey.String() == o.hotkey.String() {
			return config.Involving(fmt.Errorf("destination %q's hotkey %v is --hotkey, which switches between relaying and local use: give the destination another", d.Name, d.Hotkey), "to", "hotkey")
		}
		if err := capture.CheckHotkey(d.Hotkey, o.Input); err != nil {
			return config.Involving(fmt.Errorf("destination %q's hotkey: %w (a hotkey is %s)", d.Name, err, capture.HotkeyForm), "to", "input")
		}
	}
	if err := o.validateKeys(b); err != nil {
		return err
	}
	if len(o.Devices) > 0 && !b.Caps.Devices {
		return config.Involving(errors.New("--device needs "+sourcesWith(func(c capture.SourceCaps) bool { return c.Devices })), "device", "input")
	}
	return nil
}

// Check checks the settings that flags alone cannot (CheckSettings),
// then what the source needs of this machine (a terminal, an X display).
func (o *SendOptions) Check() error {
	if err := o.CheckSettings(); err != nil {
		return err
	}
	b, _ := capture.LookupSource(o.Input) // CheckSettings checked the name
	if b.Ready != nil {
		if err := b.Ready(o.SourceOptions()); err != nil {
			if b.ReadyIsUsage {
				return config.UsageError{Err: err}
			}
			return err
		}
	}
	return nil
}

// addrs are the destinations' addresses (or peers' names), in order.
func (o *SendOptions) addrs() []string {
	out := make([]string, len(o.dests))
	for i, d := range o.dests {
		out[i] = d.Addr
	}
	return out
}

// SourceOptions are the options send's source is made from, but for its
// label, status and standard input, which Send adds.
func (o *SendOptions) SourceOptions() capture.SourceOptions {
	return capture.SourceOptions{Grab: o.Grab, Hotkey: o.hotkey, Devices: o.Devices, Script: o.Script, Debug: o.Debug}
}

// badHotkey is the usage error for a --hotkey that cannot work, with the
// valid form.
func badHotkey(err error) error {
	want := fmt.Sprintf("%v (a hotkey is %s)", err, capture.HotkeyForm)
	return config.BadValue("hotkey", want, "--hotkey: "+want)
}

// Routed reports whether send routes keys per destination (a Group): to
// one target at a time (switching), or through a destination's own key
// map, local keys or characters. Otherwise every key goes to every
// destination in one queue.
func (o *SendOptions) Routed() bool {
	if o.switching() {
		return true
	}
	for _, d := range o.dests {
		if len(d.Map) > 0 || len(d.Local) > 0 || d.Characters {
			return true
		}
	}
	return false
}

// switching reports whether keys go to one destination at a time:
// --switch, or any destination with a hotkey. Otherwise mirror mode:
// every key to every destination.
func (o *SendOptions) switching() bool {
	if o.Switch {
		return true
	}
	for _, d := range o.dests {
		if len(d.Hotkey) > 0 {
			return true
		}
	}
	return false
}

// characters reports whether any destination gets characters.
func (o *SendOptions) characters() bool {
	for _, d := range o.dests {
		if d.Characters {
			return true
		}
	}
	return false
}

// validateKeys checks --keys and --layout: --keys characters puts every
// destination in characters mode, which needs the sender's layout: the
// source's own keymap where it reads one (capture.SourceKeymap), else
// --layout.
func (o *SendOptions) validateKeys(b capture.SourceBackend) error {
	switch o.Keys {
	case "", "physical":
		if o.Keys == "physical" {
			for i := range o.dests {
				o.dests[i].Characters = false
			}
		}
	case "characters":
		for i := range o.dests {
			o.dests[i].Characters = true
		}
	default:
		want := `unknown (choose "physical" or "characters")` + spell.Suggest(o.Keys, []string{"physical", "characters"})
		return config.BadValue("keys", want, fmt.Sprintf("--keys %q: %s", o.Keys, want))
	}
	if o.Layout != "" {
		if err := xkblayout.CheckName(o.Layout); err != nil {
			return config.BadValue("layout", err.Error(), "--layout: "+err.Error())
		}
		if !o.characters() {
			return config.Involving(errors.New(`--layout names this keyboard's layout for characters mode, and no destination gets characters: add --keys characters (or keys = "characters" to a [[send.to]]), or drop --layout`), "layout", "keys")
		}
	}
	if o.characters() && o.Layout == "" && b.Keymap == nil {
		return config.Involving(fmt.Errorf("characters mode with --input %s needs this keyboard's layout, which the source cannot tell: add --layout LAYOUT (the XKB layout the keyboard is used with, e.g. --layout de; setxkbmap -query shows it on X)", b.Name), "layout", "keys")
	}
	return nil
}

// keymap is the sender's layout for characters mode: the XKB layout
// --layout names, read from the system's XKB data and Compose file, or
// the keymap source b reads (validateKeys checked it has one), with the
// same Compose file for its dead keys.
func (o *SendOptions) keymap(b capture.SourceBackend) (charmode.Keymap, error) {
	compose, err := os.Open(xkblayout.ComposeFile)
	if err != nil {
		return nil, fmt.Errorf("characters mode composes dead keys through the Compose file: %w (apt-get install libx11-data)", err)
	}
	defer compose.Close()
	if o.Layout != "" {
		l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), o.Layout, compose)
		if err != nil {
			return nil, fmt.Errorf("--layout %s: %w", o.Layout, err)
		}
		return l, nil
	}
	return b.Keymap.Read(compose)
}

// sourcesWith names the sources with a capability, as flags: "--input
// x11 or --input evdev".
func sourcesWith(has func(capture.SourceCaps) bool) string {
	var out []string
	for _, b := range capture.Sources {
		if has(b.Caps) {
			out = append(out, "--input "+b.Name)
		}
	}
	return spell.JoinOr(out)
}
