package cmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/relay"
)

// RecvOptions are the settings of `keyrelay recv`: its flags, the
// environment and the config file fill them.
type RecvOptions = relay.RecvOptions

// NewCmdRecv builds `keyrelay recv`.
func NewCmdRecv(stdio IO, runF func(context.Context, *RecvOptions) error) *cobra.Command {
	opts := &RecvOptions{}
	c := &cobra.Command{
		Use:     "recv [--listen ADDR] [--inject INJECTOR]",
		Example: recvExample,
		Short:   "Receive key events and inject them",
		// The word people type for it, and its usual misspellings, are
		// too far from "recv" for cobra's own suggestions.
		SuggestFor: []string{"receive", "recieve", "receiver", "reciever", "recive", "receve"},
		Long: `Receive key events and type them on this machine. Only paired machines
(keyrelay pair, keyrelay peers) and this machine's own send can type. Each
sender's session is tracked on its own, and the keys of one silent for
--timeout are released, so none stays stuck down.

Injectors (--inject):
` + injectorShortHelp() + `

A physical key types what this machine's layout puts on it; text (from a
terminal, a script's type) arrives as the same text whatever the layouts.
On SIGINT, SIGTERM, SIGHUP or SIGQUIT recv releases every key and exits 0.

What each injector needs and does, and every flag: man keyrelay-recv.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
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
			return relay.Recv(c.Context(), opts, stdio.Out, stdio.Err)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Listen, "listen", ":"+DefaultPort, "UDP address to listen on")
	f.StringVar(&opts.Inject, "inject", "auto", "where keys go (see above)")
	f.StringVar(&opts.Device, "device", relay.DefaultDevice(), injectorDeviceHelp())
	f.StringVar(&opts.Layout, "layout", "", injectorLayoutHelp())
	f.DurationVar(&opts.Timeout, "timeout", receiver.DefaultTimeout, "release the keys of a sender silent this long (the stuck-key guard; longer while its packets are being lost, up to 10 times; send's --timeout is only about liveness)")
	f.BoolVar(&opts.Balanced, "balanced", true, "never inject a second key-down for a held key (release it first)")
	registerKeyFlags(f, &opts.Key)
	registerIdentityFlag(f, &opts.Identity)
	registerPeersFlag(f, &opts.Peers)
	f.StringArrayVar(&opts.Allow, "allow", nil, "accept packets only from this network or address (repeatable; e.g. 192.168.1.0/24, 10.0.0.7, fd00::/8)")
	f.BoolVar(&opts.Acks, "acks", true, "answer each sender with small ack packets (RTT, loss, liveness; at most one per 5ms per sender, one a second while nothing changes)")
	f.BoolVar(&opts.OneWay, "one-way", false, "accept one-way senders (send --one-way: broadcast, multicast, --feedback=false) of paired machines, whose identity signs each packet; off by default: their only replay defence is --max-skew, so a recording of their session could be typed again here within it (PROTOCOL.md §8.6); handshaken senders' recordings never can")
	f.DurationVar(&opts.MaxSkew, "max-skew", receiver.DefaultMaxSkew, "reject one-way packets whose sender clock differs from ours by more than this (their replay defence; needs clocks in sync; handshaken senders need no clock)")
	f.BoolVar(&opts.Debug, "debug", false, "name keys in log and status lines (the keys a session holds, a key that failed to type): passwords typed included; without, counts only (command line only)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors (no status lines)")
	f.StringVar(&opts.LogFormat, "log-format", "text", "log lines as text or json (status lines too, when not on a terminal)")
	config.AddFlag(f)
	configurable(c)
	manual(c, `Receive key events from senders and inject them. Each sender session is
tracked on its own: stale and duplicate packets change nothing, a session
silent for --timeout has its keys released, and a key stays down while any
session holds it.

Injectors (--inject):
`+injectorHelp()+`

Layouts: a physical key types what this machine's layout puts on it, so when
you relay a keyboard (send --input hook) use the same layout on both machines;
text from a terminal or a script's type arrives as the same text whatever the
layouts. The README's "Keys and layouts" has the details.

Only senders that answer its handshake can type: a one-way sender (send
--one-way: broadcast, multicast, --feedback=false) is refused, counted and
logged once a minute unless recv runs with --one-way, and even then only a
paired machine types, whose identity signs each one-way packet: the key file
alone types nothing (PROTOCOL.md §8.6).

On SIGINT, SIGTERM, SIGHUP or SIGQUIT recv releases every key it holds and
exits 0.`)
	commonFlags(c, "listen", "inject", "layout", "allow", "timeout", "quiet", "config")
	briefly(c, map[string]string{
		"inject": "where keys go: " + strings.Join(relay.InjectorNames(), ", "),
		"layout": "with " + spell.JoinOr(layoutInjectors()) + ": the XKB layout text is typed through",
		"config": "settings file (default ~/.config/keyrelay/config.toml; keyrelay config)",
	})
	return c
}

// hangingIndent wraps text at width after the head, indenting the lines
// after the first under the text.
func hangingIndent(head, text string, width int) string {
	var b strings.Builder
	b.WriteString(head)
	col := len(head)
	for i, w := range strings.Fields(text) {
		if i > 0 && col+1+len([]rune(w)) > width {
			b.WriteString("\n" + strings.Repeat(" ", len(head)))
			col = len(head)
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len([]rune(w))
	}
	return b.String()
}
