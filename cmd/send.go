package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// SendOptions are the settings of `keyrelay send`: its flags, the
// environment and the config file fill them.
type SendOptions = relay.SendOptions

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
			// flag without marking it changed: see CheckSettings.
			opts.HotkeyGiven = c.Flags().Changed("hotkey")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			var err error
			if opts.IdentityPath, err = config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName); err != nil {
				return err
			}
			if opts.PeersPath, err = config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName); err != nil {
				return err
			}
			res, err := relay.Send(c.Context(), opts, stdio.In, stdio.Err)
			if res == nil {
				return err
			}
			return sendEnd(opts, res, err)
		},
	}
	f := c.Flags()
	f.Var(dest.Flag{To: &opts.To, Tables: &opts.ToTables}, "to", "receiver address HOST[:PORT] (repeatable, or several separated by commas; host names, IPv4, [IPv6], broadcast; default port "+DefaultPort+"), a paired peer's name (NAME:PORT: its recv on another port), or NAME=HOST[:PORT], named for keyrelay switch and status; [[send.to]] tables in the config file add a hotkey, a key map and local keys")
	f.Lookup("to").DefValue = "" // none, as a plain string list shows it
	f.StringVar(&opts.Input, "input", "", "key source: "+spell.JoinOr(capture.SourceNames(false))+" ("+sourceAliases()+"default: script with --script, else terminal)")
	f.StringVar(&opts.Script, "script", "", `key script to play ("-" for standard input); implies --input script`)
	f.DurationVar(&opts.Interval, "interval", sender.DefaultInterval, "resend the queue this often when no key moves")
	f.IntVar(&opts.Queue, "queue", sender.DefaultQueueLen, fmt.Sprintf("queue length N (1..%d): how many events each packet carries", wire.MaxSafeEvents))
	f.DurationVar(&opts.Linger, "linger", sender.DefaultLinger, "resend the final all-released queue at least this long before exiting (longer until live receivers ack it)")
	f.DurationVar(&opts.Timeout, "timeout", sender.DefaultPeerTimeout, "liveness: a receiver that has not acked for this long is named as silent (no answer: exit status 3); it releases nothing (recv's --timeout does)")
	opts.Outage = sender.DefaultOutage
	f.Var(outageFlag{&opts.Outage, &opts.OutageGiven}, "outage", "lossless typing through an outage up to this long: keys typed while a receiver that answered before is silent wait and go out when it answers again (and the end waits for it); past it, older keys may be lost. Never shorter than --timeout: unset, it is --timeout when that is longer")
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

// outageFlag is --outage: a duration that knows whether it was set, from
// the command line, the environment or the config file (which all call
// Set), so that unset it follows --timeout (SendOptions.CheckSettings).
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
