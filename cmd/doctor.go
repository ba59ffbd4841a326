package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/doctor"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/spf13/cobra"
)

// NewCmdDoctor builds `keyrelay doctor`.
func NewCmdDoctor(stdio IO) *cobra.Command {
	return newCmdDoctor(stdio, &doctor.Options{})
}

// newCmdDoctor builds `keyrelay doctor` filling opts, whose fields that
// are no flag (a test's shorter probe timeout) are kept.
func newCmdDoctor(stdio IO, opts *doctor.Options) *cobra.Command {
	c := &cobra.Command{
		Use:     "doctor [--role ROLE] [--to DEST ...] [--peer ADDR]",
		Example: doctorExample,
		Short:   "Check what send and recv need here, and how to fix what is missing",
		Long: `Check, one line each, what this machine needs to send or receive keys,
and say how to fix what is missing. Exit status 1 if something needed is.

doctor reads send's and recv's settings as they do (the config file,
KEYRELAY_ variables; its own flags of the same names win) and validates
them as they do; it checks what the injector (recv) or the key source
(send) needs here, and makes a round trip to each of send's destinations,
resolved as send resolves them, or to --peer. The role (--role, default
auto) comes from the config file's [send] and [recv] tables and the flags
given; the other role's checks are listed as not checked.

Every check, and what a probe does: man keyrelay-doctor.`,
		Args: cobra.NoArgs,
	}
	var settings []config.Setting
	var cf *config.File
	c.RunE = func(c *cobra.Command, _ []string) error {
		var err error
		if opts.IdentityPath, err = config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName); err != nil {
			return err
		}
		if opts.PeersPath, err = config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName); err != nil {
			return err
		}
		given := givenToDoctor(settings)
		opts.CheckSettings = func(role string) (doctor.Check, *capture.SourceOptions) { return settingsCheck(role, given, cf) }
		// A wrong value from the file or the environment is named there.
		return config.Attribute(runDoctor(c.Context(), stdio, opts), settings, cf)
	}
	f := c.Flags()
	registerIdentityFlag(f, &opts.Identity)
	registerPeersFlag(f, &opts.Peers)
	f.StringVar(&opts.Role, "role", doctor.RoleAuto, "what this machine does: send, recv, both, or auto (from the config file's tables and the settings given)")
	f.StringVar(&opts.Inject, "inject", "auto", "the injector recv will use ("+strings.Join(relay.InjectorNames(), ", ")+")")
	f.StringVar(&opts.Input, "input", "terminal", "the key source send will use ("+strings.Join(capture.SourceNames(false), ", ")+"; "+strings.TrimSuffix(sourceAliases(), "; ")+")")
	f.StringArrayVar(&opts.Devices, "device", nil, "with --input evdev: the /dev/input/event* devices send will read (repeatable; default: every keyboard)")
	f.StringVar(&opts.Listen, "listen", ":"+DefaultPort, "the address recv will listen on")
	f.StringArrayVar(&opts.Allow, "allow", nil, "recv's --allow (default [recv] allow): when it leaves out this machine, doctor's probe of a recv running here is dropped, and the port check says so instead of failing")
	f.StringVar(&opts.KeyFile, "key-file", "", "the key file (default $"+secret.Env+")")
	f.BoolVar(&opts.Insecure, "insecure", false, "send and recv run with --insecure: no key file needed, probes in plaintext")
	f.Var(dest.Flag{To: &opts.To, Chars: &opts.CharDests}, "to", "send's destinations, HOST[:PORT], a paired peer's name (NAME:PORT: its recv on another port) or NAME=HOST[:PORT] (repeatable or comma-separated; default [send] to or $KEYRELAY_SEND_TO): each is probed with the send role")
	f.Lookup("to").DefValue = ""
	f.StringVar(&opts.Keys, "keys", "", `send's --keys: with "characters", doctor checks where this keyboard's layout comes from (default [send] keys; [[send.to]] tables with keys = "characters" are checked too)`)
	f.StringVar(&opts.Layout, "layout", "", "send's --layout: this keyboard's XKB layout for characters mode, LAYOUT or LAYOUT(VARIANT), checked against this machine's XKB data (default [send] layout)")
	f.StringVar(&opts.Peer, "peer", "", "a running recv to test a round trip with (HOST[:PORT]), instead of send's destinations")
	config.AddFlag(f)
	manual(c, `Check, one line each, what this machine's role needs, and say how to fix
what is missing. Exit status 1 if something needed is missing.

The role (--role) says which checks apply. auto, the default, takes it from
the config file and the settings given: a config file with a [recv] table and
no [send] is a receiver, one with [send] and no [recv] a sender; --inject or
--listen point at recv, --input, --device or --to at send; with nothing to go
by, or both, doctor checks both. The checks of the other role are listed as
"not checked".

  both roles  the settings send and recv will run with, read and
              validated as those commands read and validate them (the
              config file, KEYRELAY_ variables, and doctor's own flags of
              the same names); the key file (present, mode 0600,
              fingerprint; none with --insecure)
`+doctorRoleHelp()+`

With --peer HOST[:PORT], whatever the role, a round trip to that recv
instead of send's destinations. A probe is one short session holding no
key, started with the handshake as send's are (so a recv, which refuses
one-way senders unless --one-way, answers it), which the receiver logs as a new session that ended, not as a
lost one; a failed one names the address, where it came from and the
likely causes. A clock offset past 15s is named with its fix but fails
nothing: only one-way packets (send --one-way: broadcast, multicast,
--feedback=false) depend on it.`)
	commonFlags(c, "role", "inject", "input", "to", "peer", "config")
	briefly(c, map[string]string{
		"role":   "what this machine does: send, recv, both, or auto (from the config file and the flags given)",
		"inject": "the injector recv will use (" + strings.Join(relay.InjectorNames(), ", ") + ")",
		"input":  "the key source send will use (" + strings.Join(capture.SourceNames(false), ", ") + ")",
		"to":     "send's destinations, as send takes them (default [send] to, $KEYRELAY_SEND_TO)",
		"peer":   "a running recv to make a round trip to (HOST[:PORT]), instead of send's destinations",
		"config": "settings file (default ~/.config/keyrelay/config.toml; keyrelay config)",
	})
	c.PreRunE = func(c *cobra.Command, _ []string) (err error) {
		if settings, cf, err = configure(c); err == nil {
			opts.NoteSettings(settings, cf)
		}
		return err
	}
	return c
}

// runDoctor runs doctor's checks and prints them, a line each: ok, FAIL
// with the fix, or -- for what is not checked or not needed. Its error
// counts the needed checks that failed.
func runDoctor(ctx context.Context, stdio IO, o *doctor.Options) error {
	rep, err := doctor.Run(ctx, o)
	if err != nil {
		return err
	}
	for _, c := range rep.Checks {
		switch {
		case c.Skipped != "":
			fmt.Fprintf(stdio.Out, "--    %s: %s\n", c.Name, c.Skipped)
		case c.Err == nil:
			fmt.Fprintf(stdio.Out, "ok    %s: %s\n", c.Name, c.OK)
		case c.Needed:
			fmt.Fprintf(stdio.Out, "FAIL  %s: %v\n      fix: %s\n", c.Name, c.Err, c.Fix)
		case c.NotNeeded != "":
			fmt.Fprintf(stdio.Out, "--    %s: %v (not needed: %s)\n      fix: %s\n", c.Name, c.Err, c.NotNeeded, c.Fix)
		default:
			fmt.Fprintf(stdio.Out, "--    %s: %v (not needed for %s)\n", c.Name, c.Err, rep.Choices)
		}
	}
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("%d check(s) failed", n)
	}
	return nil
}
