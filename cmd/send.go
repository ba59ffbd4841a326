package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/statusboard"
	"github.com/keyrelay/keyrelay/internal/wake"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// SendOptions are the flags of `keyrelay send`.
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
	Key       relay.KeyOptions
	Identity  string // --identity
	Peers     string // --peers
	Quiet     bool
	LogFormat string

	// toTables are the config file's [[send.to]] tables; dests is every
	// destination, named (validate).
	toTables []dest.Spec
	dests    []dest.Spec

	hotkey      capture.Hotkey // --hotkey, parsed by validate
	outageGiven bool           // --outage is set (command line, environment or config file)
	hotkeyGiven bool           // --hotkey is on the command line
	// The identity and peers files as the flags, the environment, the
	// config file or the default name them (sharedPath).
	identityPath, peersPath string
}

// NewCmdSend builds `keyrelay send`. runF replaces the run step in tests
// that only check flag parsing.
func NewCmdSend(stdio IO, runF func(context.Context, *SendOptions) error) *cobra.Command {
	opts := &SendOptions{}
	c := &cobra.Command{
		Use:     "send --to DEST [--to ...] [--script FILE | --input SOURCE]",
		Example: sendExample,
		Short:   "Send key events to one or more receivers",
		Long: `Send key events to every --to: a paired machine's name (keyrelay pair,
keyrelay peers), NAME:PORT for its recv on another port, or HOST[:PORT].

Key sources (--input):
` + sourceShortHelp() + `

With --grab (x11, evdev, windows, macos) keys reach the receivers only, and
--hotkey (both Ctrl keys) switches between relaying and local use. Several
destinations each get every key, or with --switch one at a time ('keyrelay
switch NAME', or a destination's hotkey). When the source ends, or on
SIGINT or SIGTERM, send releases every key and says whether each receiver
acknowledged every key event.

Exit status: 0 delivered, 1 failed, 2 bad flags or settings, 3 not
delivered (a receiver missed key events, never answered, went silent
during a script, or typed keys into no application).

The whole reference (sources, grabbing, switching, delivery, the
handshake, one-way use, every flag): man keyrelay-send.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// Not from a config file or the environment, which fill the
			// flag without marking it changed: see validate.
			opts.hotkeyGiven = c.Flags().Changed("hotkey")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			var err error
			if opts.identityPath, err = config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName); err != nil {
				return err
			}
			if opts.peersPath, err = config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName); err != nil {
				return err
			}
			return runSend(c.Context(), stdio, opts)
		},
	}
	f := c.Flags()
	f.Var(dest.Flag{To: &opts.To, Tables: &opts.toTables}, "to", "receiver address HOST[:PORT] (repeatable, or several separated by commas; host names, IPv4, [IPv6], broadcast; default port "+DefaultPort+"), a paired peer's name (NAME:PORT: its recv on another port), or NAME=HOST[:PORT], named for keyrelay switch and status; [[send.to]] tables in the config file add a hotkey, a key map and local keys")
	f.Lookup("to").DefValue = "" // none, as a plain string list shows it
	f.StringVar(&opts.Input, "input", "", "key source: "+spell.JoinOr(capture.SourceNames(false))+" ("+sourceAliases()+"default: script with --script, else terminal)")
	f.StringVar(&opts.Script, "script", "", `key script to play ("-" for standard input); implies --input script`)
	f.DurationVar(&opts.Interval, "interval", sender.DefaultInterval, "resend the queue this often when no key moves")
	f.IntVar(&opts.Queue, "queue", sender.DefaultQueueLen, fmt.Sprintf("queue length N (1..%d): how many events each packet carries", wire.MaxSafeEvents))
	f.DurationVar(&opts.Linger, "linger", sender.DefaultLinger, "resend the final all-released queue at least this long before exiting (longer until live receivers ack it)")
	f.DurationVar(&opts.Timeout, "timeout", sender.DefaultPeerTimeout, "liveness: a receiver that has not acked for this long is named as silent (no answer: exit status 3); it releases nothing (recv's --timeout does)")
	opts.Outage = sender.DefaultOutage
	f.Var(outageFlag{&opts.Outage, &opts.outageGiven}, "outage", "lossless typing through an outage up to this long: keys typed while a receiver that answered before is silent wait and go out when it answers again (and the end waits for it); past it, older keys may be lost. Never shorter than --timeout: unset, it is --timeout when that is longer")
	f.DurationVar(&opts.Wait, "wait", 0, "before playing the script or reading a key, wait up to this long for every receiver to answer (its handshake answered; with --insecure, its first ack): a receiver started at the same time, or later, gets every key; none within it: exit 3, nothing typed anywhere. Broadcast and multicast destinations answer nothing and are not waited for (nor is anything with --feedback=false: refused). 0: start at once")
	f.BoolVar(&opts.Feedback, "feedback", true, "read the receivers' acks: RTT, loss, redundant bursts, lossless typing (false: the plain one-way queue)")
	f.BoolVar(&opts.OneWay, "one-way", false, "allow one-way destinations (--feedback=false, broadcast or multicast --to): no handshake; each packet is sealed with the key file and signed by this machine's identity, and only a receiver run with recv --one-way that pairs this machine types it; a recording of the session can be typed again into such a receiver, within its --max-skew (PROTOCOL.md §8.6)")
	f.BoolVar(&opts.Grab, "grab", false, "own the keyboard while relaying (--input x11, evdev, windows or macos): keys reach the receiver only; --hotkey switches to local use and back")
	f.BoolVar(&opts.Switch, "switch", false, "send keys to one destination at a time (the first, until a destination's hotkey or 'keyrelay switch NAME|local' picks another) instead of to every destination (mirror); on whenever a [[send.to]] destination has a hotkey. With --grab a destination without one gets ControlRight+Digit1, +Digit2, … by its place")
	f.StringVar(&opts.Hotkey, "hotkey", capture.DefaultHotkey, "with --grab (refused without it on the command line): the keys (key names joined by +, as in key scripts) that switch between relaying and local use; with --input x11 all but one must be Shift, Control, Alt or Meta keys")
	f.StringVar(&opts.Keys, "keys", "", `what every destination gets: "physical" keys (the receiver's layout decides the character), or "characters": printable keys as the characters this machine's layout gives them, chords with Control/Alt/Super and keys that print nothing as physical keys (default: each [[send.to]]'s keys, else physical)`)
	f.StringVar(&opts.Layout, "layout", "", "with characters: this keyboard's XKB layout, LAYOUT or LAYOUT(VARIANT) (de, fr, us(intl)); needed for --input evdev, which cannot ask for it; --input x11 reads the X server's keymap without it")
	f.StringArrayVar(&opts.Devices, "device", nil, "with --input evdev: read this /dev/input/event* device (repeatable; default: every keyboard, and those plugged in later)")
	registerKeyFlags(f, &opts.Key)
	registerIdentityFlag(f, &opts.Identity)
	registerPeersFlag(f, &opts.Peers)
	f.BoolVar(&opts.Debug, "debug", false, "name keys in log and status lines (the keys held, a press the queue dropped): passwords typed included; without, counts only (command line only)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors (no status lines)")
	f.StringVar(&opts.LogFormat, "log-format", "text", "log lines as text or json (status lines too, when not on a terminal)")
	config.AddFlag(f)
	configurable(c)
	manual(c, `Send key events to every --to address: the whole balanced queue goes out in
one UDP packet on every key event and every --interval.

Key sources (--input):
`+sourceHelp()+`

Owning the keyboard (--input x11, evdev, windows or macos): with --grab, keys
reach the receiver only while relaying (an X keyboard grab, EVIOCGRAB, the
Windows hook swallowing them, or a macOS event tap that drops them); --hotkey
(default ControlLeft+ControlRight: both Ctrl keys) switches to local use and
back. The hotkey is checked at start (exit 2 if it cannot work), and only
--grab takes one: without --grab every key acts here and is relayed, so
--hotkey on the command line without --grab is refused (one from a config
file or the environment waits for the runs that grab). Switching away releases at the receiver every key held there; the
hotkey itself reaches neither side. When relaying starts or resumes, the
receiver's Caps Lock and Num Lock are set to this machine's. The grab ends
with the process (X and the kernel drop it), so a crashed send cannot leave
the keyboard unusable.

Several destinations: every key goes to every --to (mirror) unless --switch
is given or a [[send.to]] destination of the config file has a hotkey; then
keys go to one target at a time, the first destination until its hotkey or
'keyrelay switch NAME|local' picks another ('keyrelay status' shows the
target and each destination's liveness). What the old target holds is
released there, and a key held across a switch reaches the new target only
when pressed again. A destination's map and local-keys apply to what it
gets; its local keys act on this machine instead, with --grab too: --input
evdev passes them through a uinput keyboard of its own ("keyrelay send local
keys", needs /dev/uinput writable; held while held), --input x11 through
XTEST as a tap once released (no hold: the X server drops a second press of a
key already down), --input windows and macos let them through the hook or
event tap (held while held). A destination's hotkey also works in local use:
it takes the keyboard again for that destination. Name a destination with --to
NAME=HOST[:PORT].

Every send answers 'keyrelay status' (its target, mode and destinations)
through a control socket of its own, only its user can open. Without
--switch, a map, local keys or characters (one queue to every
destination), 'keyrelay switch local' gives a grabbed keyboard back and
'keyrelay switch NAME' takes it again (--input x11 or evdev with --grab);
a send that owns no keyboard (a script, a terminal, no --grab) refuses.

When the source ends, or on SIGINT, SIGTERM, SIGHUP (the terminal closing) or
SIGQUIT, send releases every key it holds, resends the final queue for a short
linger and prints a summary to standard error.

Delivery: with feedback (the default) each receiver acknowledges what it got,
and send counts, per receiver, the key events a packet it acknowledged
carried (a restarted receiver gets what was typed while it was down, within
--outage, and is not given again what it acknowledged before). A receiver
that has not answered within --timeout is named at once, with the likely
causes (nothing listening, another key, --insecure on one end only, a
firewall). At the end send says "delivered: every receiver acknowledged the
final state and all N key events" and exits 0, or exits 3 when a receiver
never answered, did not acknowledge the final state (all keys released), or
missed key events: how many, and when they were typed (down or unreachable
longer than --outage), or typed them into no application: how many, why,
and the fix (recv --inject x11 with no window focused, hidg with no USB
host taking its reports, windows with no window in the foreground). A
script stops, exit 3, once a receiver that answered has been silent for
--outage, rather than play on for no one; with several destinations, once
any one has, for all of them: the script was written for each, the silent
one lost keys for good, so exit 3 is certain, and the others stop at the
same place (run a send per destination to let each go on alone). The
summary gives each receiver's figures; with
--log-format json as fields (summary=session: events, queued, dropped,
undelivered, nowhere, packets, bytes, acks, handshakes...;
summary=receiver: receiver, delivered, undelivered, undelivered_from,
undelivered_to, nowhere, nowhere_why, rtt_ms, loss...).

With --wait, nothing plays (no script line, no key read) until every unicast
receiver has answered: its handshake answered, or with --insecure its first
ack (--one-way destinations and --feedback=false answer nothing, and are not
waited for); if one has not within --wait, send exits 3 having typed nothing
anywhere: for CI, where recv and send start together, or the receiver's
machine boots. A receiver that stops answering gets at most a few packets a
second, each with the whole queue, until it answers again (PROTOCOL.md §9).

Handshake: each unicast receiver is a paired machine (keyrelay pair, keyrelay
peers; --to names it, or its address; on loopback, this machine itself) and
first answers a handshake proving its identity, and only then gets keys,
sealed under keys of that handshake alone, so that no recording of them can
be typed again anywhere (PROTOCOL.md §8.3). --key-file, if given, is a
second factor both ends need. A receiver that does not answer never gets a
key: send keeps asking, keeps what is typed meanwhile (up to --outage),
says why it may be silent, and exits 3 if it never answers.

One-way (--one-way, needed for --feedback=false or a broadcast or multicast
--to): no handshake; each packet is sealed with the key file (--key-file)
and signed by this machine's identity, and a receiver types it only when
run with recv --one-way and paired with this machine (PROTOCOL.md §8.6).
The only replay protection is the wall clock: a recording of the session
can be typed again, in full, into such a receiver that has not heard it
(one restarted since, or another) within recv's --max-skew of when it was
made. One-way use exits 0 and says delivery was not confirmed.

Exit status: 0 delivered (or one-way), 1 the command failed (an error
names it), 2 bad flags or arguments, 3 delivery not confirmed (a receiver
missed key events, or the final state, or typed keys into no
application; a script stopped because its receiver was silent past
--outage).`)
	commonFlags(c, "to", "input", "script", "grab", "hotkey", "switch", "keys", "wait", "quiet", "config")
	briefly(c, map[string]string{
		"to":     "where keys go: a paired machine's name, NAME:PORT, HOST[:PORT], or NAME=ADDR to name it (repeatable; default port " + DefaultPort + ")",
		"input":  "key source: " + spell.JoinOr(capture.SourceNames(false)) + " (default: terminal, or script with --script)",
		"script": `play this key script ("-": standard input; its format: keyrelay help script)`,
		"grab":   "own the keyboard while relaying: keys reach the receivers only",
		"hotkey": "with --grab: the keys that switch between relaying and local use",
		"switch": "keys go to one destination at a time (keyrelay switch NAME), not to all",
		"keys":   `"characters": printable keys as this machine's layout types them`,
		"wait":   "wait this long for every receiver to answer before playing (none: exit 3, nothing typed)",
		"config": "settings file (default ~/.config/keyrelay/config.toml; keyrelay config)",
	})
	return c
}

// sendStatus makes the status lines of a sender: one per destination (or
// per receiver that acked, for a broadcast).
func sendStatus(s *sender.Sender, dests []net.Addr, src sender.Source, timeout time.Duration, debug bool) func() ([]string, [][]any) {
	sw, _ := src.(sender.SwitchSource)
	lastPackets, last := 0, time.Now()
	return func() ([]string, [][]any) {
		st := s.Status()
		unanswered := unansweredAddrs(s)
		uptime := st.Uptime
		now := time.Now()
		pps := float64(st.Packets-lastPackets) / now.Sub(last).Seconds()
		lastPackets, last = st.Packets, now
		var text []string
		var attrs [][]any
		byAddr := map[string]sender.PeerStatus{}
		for _, p := range st.Peers {
			byAddr[p.Addr] = p
		}
		addrs := make([]string, 0, len(dests))
		for _, d := range dests {
			addrs = append(addrs, d.String())
		}
		for a := range byAddr {
			if !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		for _, a := range addrs {
			p, ok := byAddr[a]
			state := "no answer yet"
			if !ok && slices.Contains(unanswered, a) && uptime >= timeout {
				state = "no handshake"
				if why := handshakeWhy(s, a); why != "" && why != "no answer" {
					state = "handshake: " + why
				}
			}
			if ok && p.Live {
				state = "live"
			} else if ok && p.Speaks != nil {
				state = fmt.Sprintf("speaks protocol %s, not %d", wire.DescribeVersions(p.Speaks), wire.Version)
			} else if ok {
				state = fmt.Sprintf("silent %v", now.Sub(p.LastHeard).Round(100*time.Millisecond))
			}
			// Only measured figures: no RTT before a sample, no loss
			// before the acks settled a packet's fate.
			rtt, loss := "-", "-"
			if p.SRTT > 0 {
				rtt = p.SRTT.Round(10 * time.Microsecond).String()
			}
			if p.Settled > 0 {
				loss = fmt.Sprintf("%.1f%%", 100*p.Loss)
			}
			text = append(text, fmt.Sprintf("→ %-22s %-13s rtt %-9s loss %6s  %5.1f pkt/s  %s  waiting %d%s",
				a, state, rtt, loss, pps, relay.HeldText(st.Held, debug), st.Pending, clockNote(p)))
			attr := []any{"receiver", a, "live", ok && p.Live, "handshake_answered", !slices.Contains(unanswered, a)}
			if p.SRTT > 0 {
				attr = append(attr, "rtt_ms", float64(p.SRTT.Round(time.Microsecond))/float64(time.Millisecond))
			}
			if p.Settled > 0 {
				attr = append(attr, "loss", math.Round(p.Loss*1000)/1000)
			}
			attr = append(attr, "packets_per_s", math.Round(pps*10)/10)
			attr = append(attr, relay.HeldAttrs(st.Held, debug)...)
			attr = append(attr, "waiting", st.Pending)
			if p.ClockKnown {
				attr = append(attr, "clock_offset_ms", p.ClockOffset.Milliseconds())
			}
			if p.Speaks != nil {
				attr = append(attr, "protocol_version", int(p.Speaks[len(p.Speaks)-1]), "ours", wire.Version)
			}
			attrs = append(attrs, attr)
		}
		if g, ok := src.(interface{ Grabbing() bool }); ok && g.Grabbing() && sw != nil {
			mode := "relaying: the keyboard is grabbed"
			if !sw.Relaying() {
				mode = "local use: keys act here"
			}
			text = append([]string{"mode: " + mode}, text...)
			attrs = append([][]any{{"relaying", sw.Relaying()}}, attrs...)
		}
		return text, attrs
	}
}

// validateSettings checks the options that flags alone cannot, without
// looking at this machine: send runs it first, doctor alone.
func (o *SendOptions) validateSettings() error {
	o.To = config.SplitList(o.To) // --to a:1,b:2, like KEYRELAY_SEND_TO
	if len(o.To) == 0 && len(o.toTables) == 0 {
		return config.Usagef("no destination: give --to HOST[:PORT] (the receiver runs 'keyrelay recv', default port %s)", DefaultPort)
	}
	dests, err := dest.Named(o.To, o.toTables)
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
	if !o.outageGiven {
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
	if o.hotkeyGiven && !o.Grab {
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

// validate checks the options that flags alone cannot (validateSettings),
// then what the source needs of this machine (a terminal, an X display).
func (o *SendOptions) validate() error {
	if err := o.validateSettings(); err != nil {
		return err
	}
	b, _ := capture.LookupSource(o.Input) // validateSettings checked the name
	if b.Ready != nil {
		if err := b.Ready(o.sourceOptions()); err != nil {
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

// sourceOptions are the options send's source is made from, but for its
// label, status and standard input, which runSend adds.
func (o *SendOptions) sourceOptions() capture.SourceOptions {
	return capture.SourceOptions{Grab: o.Grab, Hotkey: o.hotkey, Devices: o.Devices, Script: o.Script, Debug: o.Debug}
}

// badHotkey is the usage error for a --hotkey that cannot work, with the
// valid form.
func badHotkey(err error) error {
	want := fmt.Sprintf("%v (a hotkey is %s)", err, capture.HotkeyForm)
	return config.BadValue("hotkey", want, "--hotkey: "+want)
}

func runSend(ctx context.Context, stdio IO, o *SendOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	// An early source (a script file, checked whole) is made before
	// resolving or sending anything; the others once the session is.
	b, _ := capture.LookupSource(o.Input) // validate checked the name
	var src sender.Source
	sopts := o.sourceOptions()
	sopts.Stdin = stdio.In
	if b.Early {
		var err error
		if src, err = b.New(sopts); err != nil {
			return err
		}
	}
	logf, logger := statusboard.NewLogf(stdio.Err, "send", o.LogFormat)
	// Status: one line per destination, redrawn on a terminal (not with the
	// terminal source, which owns the terminal), logged every 10 s
	// elsewhere.
	showStatus := !o.Quiet && !b.Caps.Terminal
	board := &statusboard.Board{W: stdio.Err, Term: showStatus && statusboard.IsTerminal(stdio.Err) && o.LogFormat != "json", Logger: logger, Width: statusboard.TermWidth(stdio.Err)}
	logf = board.Wrap(logf)
	errf := logf
	if o.Quiet {
		logf = func(string, ...any) {}
	}
	if o.Debug {
		errf(relay.DebugNote) // even with --quiet: what the log holds must be known
	}
	var id *identity.Identity
	list := &peers.List{}
	if !o.Key.Insecure {
		var err error
		if id, err = relay.LoadIdentity(o.identityPath, errf); err != nil {
			return err
		}
		if list, err = loadPeersAt(o.peersPath); err != nil {
			return err
		}
	}
	resolved, err := dest.Resolve(o.addrs(), list, id, !o.Feedback, o.Key.Insecure)
	if err != nil {
		return err
	}
	dests := dest.Addrs(resolved)
	if err := checkOneWay(o, dests); err != nil {
		return err
	}
	oneWay := false
	for _, d := range resolved {
		oneWay = oneWay || d.OneWay
	}
	// A one-way packet carries the sending machine's public key and
	// signature too (PROTOCOL.md §5): a longer queue might not fit in a
	// datagram.
	if oneWay && o.Queue > wire.MaxSafeOneWayEvents {
		want := fmt.Sprintf("a one-way destination takes at most %d, as its packets carry the sending machine's signature too (PROTOCOL.md §5)", wire.MaxSafeOneWayEvents)
		return config.BadValue("queue", want, fmt.Sprintf("--queue %d: %s", o.Queue, want))
	}
	key, err := o.Key.Load(logf, oneWay)
	if err != nil {
		return err
	}
	if o.Wait > 0 && !answersAny(dests) {
		return config.Involving(fmt.Errorf("--wait: --to %s is broadcast or multicast, which no receiver answers (one-way): nothing to wait for (drop --wait)", joinAddrs(dests)), "wait", "to")
	}
	ss := &sendSession{stdio: stdio, o: o, source: b, src: src, sopts: sopts, resolved: resolved, key: key, id: id,
		logf: logf, errf: errf, board: board, showStatus: showStatus}
	if o.routed() {
		return ss.runGroup(ctx)
	}
	return ss.run(ctx)
}

// sendSession is a send set up to run: its options, its key source (made
// already when early, a script; else made once the senders are), the
// destinations resolved, the key and identity, and where it logs and
// shows its status. run sends every key to every destination in one
// queue; runGroup routes them to a Sender per destination.
type sendSession struct {
	stdio      IO
	o          *SendOptions
	source     capture.SourceBackend
	src        sender.Source
	sopts      capture.SourceOptions
	resolved   []dest.Resolved
	key        []byte
	id         *identity.Identity
	logf, errf func(string, ...any) // errf is said even with --quiet
	board      *statusboard.Board
	showStatus bool
}

// config is the configuration of a Sender to ds over conn.
func (ss *sendSession) config(conn *transport.Conn, ds []dest.Resolved) sender.Config {
	o := ss.o
	cfg := sender.Config{
		Conn: conn, Dests: dest.SenderDests(ds), QueueLen: o.Queue, Interval: o.Interval,
		Linger: o.Linger, Logf: ss.logf, PSK: ss.key, PeerTimeout: o.Timeout, Outage: o.Outage, Debug: o.Debug,
		Identity: ss.id, Insecure: o.Key.Insecure, Wait: o.Wait,
		// A script plays on for no one once its receiver is gone: it stops
		// (exit 3) instead; with several destinations, for every one once
		// any one is silent past --outage (sender.Group.Run says why). A
		// person typing sees the status and decides.
		StopWhenSilent: o.Input == "script",
	}
	if o.Feedback {
		cfg.Feedback = conn.Sockets()
	}
	return cfg
}

// run sends every key to every destination in one queue (one
// destination, or mirror): one Sender.
func (ss *sendSession) run(ctx context.Context) error {
	o, b, src, logf, errf := ss.o, ss.source, ss.src, ss.logf, ss.errf
	dests := dest.Addrs(ss.resolved)
	conn, err := transport.Open(dests)
	if err != nil {
		return err
	}
	defer conn.Close()

	cfg := ss.config(conn, ss.resolved)
	// The loop's timer fires through the network poller where there is a
	// timerfd: a runtime timer also wakes the runtime's monitor thread at
	// every resend (package wake). Run closes it.
	if t, err := wake.New(); err == nil {
		cfg.Timer = t
	}
	s, err := sender.New(cfg)
	if err != nil {
		if cfg.Timer != nil {
			cfg.Timer.Close()
		}
		return err
	}
	if !b.Early {
		ss.sopts.Label = joinAddrs(dests)
		if !o.Quiet {
			ss.sopts.Status = ss.stdio.Err
		}
		if !o.Quiet && b.Caps.Terminal {
			// Its status line is send's only one (ss.showStatus).
			ss.sopts.Liveness = liveness(s, dests, o.Feedback, o.Timeout)
		}
		if src, err = b.New(ss.sopts); err != nil {
			return err
		}
	}
	// Every send answers keyrelay status, and switch where its source
	// can switch; one that cannot open its socket runs without.
	var names []string
	for _, d := range o.dests {
		names = append(names, d.Name)
	}
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	defer stopCtrl()
	if err := control.Listen(ctrlCtx, control.Path(), &control.Plain{Sender: s, Source: src, Input: o.Input, Names: names, Addrs: dests}); err != nil {
		errf("no keyrelay switch or status for this send: %v", err)
	}
	if !o.Quiet {
		if script, ok := src.(*capture.Script); ok && len(script.HeldAtEnd) > 0 {
			what := fmt.Sprintf("%d keys", len(script.HeldAtEnd))
			if o.Debug {
				what = fmt.Sprintf("%v", script.HeldAtEnd)
			}
			logf("note: the script leaves %s held; they are released at the end", what)
		}
		logf("session %016x: sending to %s (queue %d, every %v)", s.Session(), joinAddrs(dests), o.Queue, o.Interval)
		if o.Wait > 0 {
			logf("waiting up to %v for the receivers to answer before %s", o.Wait, map[bool]string{true: "playing the script", false: "reading keys"}[o.Input == "script"])
		}
	}
	statusCtx, stopStatus := context.WithCancel(ctx)
	statusDone := make(chan struct{})
	status := sendStatus(s, dests, src, o.Timeout, o.Debug)
	if ss.showStatus {
		go func() { defer close(statusDone); ss.board.Run(statusCtx, status) }()
	} else {
		close(statusDone)
	}
	// Say it while it matters: a receiver that has not answered within
	// --timeout will likely never answer.
	var silent *time.Timer
	if o.Feedback && !b.Caps.Terminal {
		silent = time.AfterFunc(o.Wait+o.Timeout, func() { warnSilent(dests, s, o.Timeout, fingerprintOf(ss.id), errf) })
	}
	stats, err := s.Run(ctx, src)
	if na, ok := errors.AsType[*sender.NoAnswerError](err); ok {
		err = noAnswer(na, fingerprintOf(ss.id), s)
	}
	silenced, _ := errors.AsType[*sender.SilentError](err)
	if silenced != nil {
		err = nil // said below, with what it cost
	}
	if silent != nil {
		silent.Stop()
	}
	stopStatus()
	<-statusDone
	if ss.showStatus {
		text, _ := status()
		ss.board.Finish(text)
	}
	rep := s.Report()
	if err == nil {
		err = checkDelivery(o, rep, fingerprintOf(ss.id), logf)
	}
	if silenced != nil {
		// checkDelivery names what the receiver missed of what was
		// played; the rest of the script never was.
		err = undeliveredError{fmt.Errorf("%v (exit status %d); %w", silenced, ExitUndelivered, cmp.Or(err, error(errNothingMissed)))}
	}
	if !o.Quiet || err != nil {
		summarize(o, ss.board.Logger, errf, logf, rep, stats, err == nil)
	}
	return err
}

// oneWayCost is what a one-way sender gives up, for the errors that ask
// for --one-way.
const oneWayCost = "a one-way session has no handshake, so its only replay protection is the wall clock (PROTOCOL.md §8.6): a recording of it can be typed again, in full, into a receiver that runs recv --one-way with the key file and pairs this machine (restarted since, or another) within recv's --max-skew of when it was made; give --one-way if that is acceptable here (the receivers must run recv --one-way too)"

// checkOneWay refuses a broadcast or multicast destination without
// --one-way: it cannot handshake (one packet reaches many receivers),
// so it is one-way, and that must be asked for (PROTOCOL.md §8.6).
func checkOneWay(o *SendOptions, dests []net.Addr) error {
	if o.OneWay {
		return nil
	}
	for _, d := range dests {
		if ua, ok := d.(*net.UDPAddr); ok && transport.IsBroadcast(ua.IP) {
			kind := "a broadcast address"
			if ua.IP.IsMulticast() {
				kind = "a multicast group"
			}
			return config.Involving(fmt.Errorf("--to %v is %s, which is one-way and needs --one-way: %s", ua, kind, oneWayCost), "to", "one-way")
		}
	}
	return nil
}

// errNothingMissed completes a stop for a silent receiver whose ledger,
// oddly, shows nothing missed of what was played.
var errNothingMissed = errors.New("what was played before was acknowledged")

// undeliveredError is send's error when a receiver did not acknowledge the
// final state: exit status ExitUndelivered, which scripts test.
type undeliveredError struct{ err error }

func (e undeliveredError) Error() string { return e.err.Error() }
func (e undeliveredError) Unwrap() error { return e.err }

// noAnswer is send's error when a receiver did not answer within --wait:
// exit status ExitUndelivered, and what may keep each one silent.
func noAnswer(na *sender.NoAnswerError, fp string, s *sender.Sender) error {
	var why []string
	for _, a := range na.Addrs {
		_, port, _ := net.SplitHostPort(a)
		w := whyNoAnswer(port, fp)
		if h := handshakeWhy(s, a); h != "" && h != "no answer" {
			w = "its handshake: " + h + "; " + w
		}
		why = append(why, fmt.Sprintf("%s: %s", a, w))
	}
	return undeliveredError{fmt.Errorf("no answer within --wait %v, so the keys were not sent and nothing was typed anywhere (exit status %d); %s", na.Wait, ExitUndelivered, strings.Join(why, "; "))}
}

// answersAny reports whether a destination can answer (unicast): one a
// --wait can wait for.
func answersAny(dests []net.Addr) bool {
	for _, d := range dests {
		if ua, ok := d.(*net.UDPAddr); ok && !transport.IsBroadcast(ua.IP) {
			return true
		}
	}
	return false
}

// outageFlag is --outage: a duration that knows whether it was set, from
// the command line, the environment or the config file (which all call
// Set), so that unset it follows --timeout (validate).
type outageFlag struct {
	d     *time.Duration
	given *bool
}

func (f outageFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f outageFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d, *f.given = d, true
	return nil
}

func (f outageFlag) Type() string { return "duration" }

// whyNoAnswer lists what makes a receiver stay silent, for port, fp
// being this machine's identity's fingerprint ("" with --insecure).
func whyNoAnswer(port, fp string) string {
	paired := ""
	if fp != "" {
		paired = "this machine not paired there (its keyrelay peers must list identity " + fp + ": 'keyrelay pair'), another --key-file there (both ends need the same one, or none), "
	}
	return "nothing listening there (is keyrelay recv running, on port " + port + "?), " + paired + "--insecure on one end only, or a firewall dropping UDP " + port
}

// fingerprintOf is id's fingerprint, "" without one (--insecure).
func fingerprintOf(id *identity.Identity) string {
	if id == nil {
		return ""
	}
	return identity.Fingerprint(id.Public())
}

// warnSilent says which unicast destinations have not answered after
// timeout, and the likely causes.
func warnSilent(dests []net.Addr, s *sender.Sender, timeout time.Duration, fp string, logf func(string, ...any)) {
	heard := map[string]bool{}
	for _, p := range s.Peers() {
		heard[p.Addr] = true
	}
	unanswered := unansweredAddrs(s)
	for _, d := range dests {
		ua := d.(*net.UDPAddr)
		switch {
		case transport.IsBroadcast(ua.IP) || heard[ua.String()]:
		case slices.Contains(unanswered, ua.String()):
			logf("no handshake with %s after %v (%s): no key goes to it until it answers (keys typed meanwhile wait up to --outage); %s", ua, timeout, handshakeWhy(s, ua.String()), whyNoAnswer(strconv.Itoa(ua.Port), fp))
		default:
			logf("no answer from %s after %v: %s", ua, timeout, whyNoAnswer(strconv.Itoa(ua.Port), fp))
		}
	}
}

// liveness sums up, for the terminal source's one status line, how the
// receivers answer: only what was measured (no RTT before a sample), and
// after timeout with no answer the likely causes.
func liveness(s *sender.Sender, dests []net.Addr, feedback bool, timeout time.Duration) func() string {
	start := time.Now()
	// Which destinations answer for themselves, once: transport.IsBroadcast
	// lists the interfaces, and the line is redrawn every second.
	var unicast []string
	for _, d := range dests {
		if !transport.IsBroadcast(d.(*net.UDPAddr).IP) {
			unicast = append(unicast, d.String())
		}
	}
	return func() string {
		if !feedback {
			return "one-way: delivery not confirmed"
		}
		byAddr := map[string]sender.PeerStatus{}
		for _, p := range s.Peers() {
			byAddr[p.Addr] = p
		}
		var live, silent, unheard int
		var rtt time.Duration
		var other []string
		for _, d := range unicast {
			p, ok := byAddr[d]
			switch {
			case !ok:
				unheard++
			case p.Live:
				live++
				rtt = max(rtt, p.SRTT)
			case p.Speaks != nil:
				other = append(other, fmt.Sprintf("%s speaks protocol %s, not %d: install the same keyrelay release on both", d, wire.DescribeVersions(p.Speaks), wire.Version))
			default:
				silent++
			}
		}
		var parts []string
		if live > 0 {
			l := "live"
			if live+silent+unheard > 1 {
				l = fmt.Sprintf("%d live", live)
			}
			if rtt > 0 {
				l += " rtt " + rtt.Round(10*time.Microsecond).String()
			}
			parts = append(parts, l)
		}
		if silent > 0 {
			parts = append(parts, fmt.Sprintf("%d silent", silent))
		}
		if unheard > 0 {
			l := "no answer yet"
			if time.Since(start) >= timeout {
				l = fmt.Sprintf("no answer after %v: recv not running, another key, --insecure on one end only, or a firewall?", timeout)
			}
			if live+silent > 0 {
				l = fmt.Sprintf("%d %s", unheard, l)
			}
			parts = append(parts, l)
		}
		parts = append(parts, other...)
		if len(parts) == 0 {
			return fmt.Sprintf("%d receivers answered (broadcast)", len(byAddr))
		}
		return strings.Join(parts, ", ")
	}
}

// clockNote flags, on the live line, a receiver clock a second or more
// off ours: drift toward recv's --max-skew, past which it drops every
// packet, should show before it happens.
func clockNote(p sender.PeerStatus) string {
	if !p.ClockKnown || (p.ClockOffset < time.Second && p.ClockOffset > -time.Second) {
		return ""
	}
	return "  clock " + sender.DescribeOffset(p.ClockOffset.Round(100*time.Millisecond))
}

func joinAddrs(as []net.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
