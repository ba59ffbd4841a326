package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/spf13/cobra"
)

// keyrelay switch and keyrelay status: the control socket's client
// (package control) and what it prints.

// NewCmdSwitch builds `keyrelay switch NAME|local`.
func NewCmdSwitch(stdio IO) *cobra.Command {
	var pid int
	c := &cobra.Command{
		Use:   "switch NAME|local",
		Short: "Send a running send's keys to one destination, or keep them here",
		Long: `Make the destination NAME of the running keyrelay send (one of its named
destinations: --to NAME=HOST[:PORT] or a [[send.to]] table) the only one that
gets keys, as its hotkey does; 'local' sends keys to none. What the old
target holds is released there first, and a key held across the switch
reaches the new target only when pressed again.

It talks to a send of the same user on this machine through its control
socket ($XDG_RUNTIME_DIR/keyrelay/send-PID.sock, which only that user can
open): the only one running, else the one with a destination NAME (or,
for 'local', the one that can switch), else the one --pid names.

With --input x11 or evdev and --grab the grab follows: 'local' gives the
keyboard back, as send's --hotkey does (which then resumes relaying to
the same target), and NAME takes it again; switch answers once the source
has switched. A send with one destination, or mirroring every key to
every destination, switches that way only: there 'local' gives the
keyboard back and NAME takes it again (with several destinations, for all
of them), and a send whose source owns no keyboard (a script, a terminal,
a source without --grab) cannot switch and says so (exit status 1).
Windows and macOS sources keep the keyboard after 'local' in a send with
--switch (their --hotkey gives it back).`,
		Example: switchExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				return nil
			}
			return switchArgsError(len(args), pid)
		},
		// Completion asks the running sends for their destinations' names.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names := []string{"local"}
			sends, _ := control.Sends(pid)
			for _, s := range sends {
				for _, d := range s.Answer.Dests {
					if !slices.Contains(names, d.Name) {
						names = append(names, d.Name)
					}
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			sends, err := control.Sends(pid)
			if err != nil {
				return err
			}
			s, err := control.Pick(sends, args[0])
			if errors.Is(err, control.ErrNoFit) {
				return config.UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			ans, err := control.Ask(s.Path, control.Request{Op: "switch", To: args[0]})
			if err != nil {
				return err
			}
			switch {
			case ans.Error == "":
			case ans.Code == control.CodeNoSuchDestination:
				var names []string
				for _, d := range ans.Dests {
					names = append(names, d.Name)
				}
				return config.Usagef("%s (the destinations: %s, or local)%s", ans.Error, strings.Join(names, ", "), spell.Suggest(args[0], append(names, "local")))
			default:
				return fmt.Errorf("keyrelay send (pid %d): %s", ans.PID, ans.Error)
			}
			fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
			return nil
		},
	}
	c.Flags().IntVar(&pid, "pid", 0, "the process id of the send to switch, when several run (keyrelay status lists them)")
	return c
}

// switchArgsError is keyrelay switch's usage error for n arguments (not
// one): what it takes, with the destinations of the sends running (pid:
// --pid's) when there are any.
func switchArgsError(n, pid int) error {
	var names []string
	sends, _ := control.Sends(pid)
	for _, s := range sends {
		for _, d := range s.Answer.Dests {
			if !slices.Contains(names, d.Name) {
				names = append(names, d.Name)
			}
		}
	}
	which := "'keyrelay status' lists the running send's destinations"
	if len(names) > 0 {
		which = "the running send's destinations: " + strings.Join(names, ", ")
	}
	if n == 0 {
		return config.Usagef("keyrelay switch needs a destination: 'keyrelay switch NAME' sends the keys to NAME only, 'keyrelay switch local' keeps them here (%s)", which)
	}
	return config.Usagef("keyrelay switch takes one destination, got %d arguments: 'keyrelay switch NAME' or 'keyrelay switch local' (%s)", n, which)
}

// NewCmdStatus builds `keyrelay status`.
func NewCmdStatus(stdio IO) *cobra.Command {
	var asJSON bool
	var pid int
	c := &cobra.Command{
		Use:   "status",
		Short: "Show each running send's target, mode and destinations",
		Long: `Show every keyrelay send running as this user on this machine (or the one
--pid names): its process id and key source, its target (a name, local,
or all in mirror mode), its mode (relaying, or local use with a grabbing
source), whether keyrelay switch can switch it, and each destination: its
address and whether it answers (live, silent for how long, no answer
yet). It asks each send through its control socket, as keyrelay switch
does.`,
		Example: statusExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			sends, err := control.Sends(pid)
			if err != nil {
				return err
			}
			for i, s := range sends {
				ans := s.Answer
				if asJSON {
					if err := json.NewEncoder(stdio.Out).Encode(ans); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					fmt.Fprintln(stdio.Out)
				}
				fmt.Fprintf(stdio.Out, "send %d (--input %s)\n", ans.PID, ans.Input)
				fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
				mode := ans.Mode
				switch {
				case ans.Grab && ans.Mode == "relaying":
					mode += " (the keyboard is grabbed)"
				case ans.Grab:
					mode += " (keys act here)"
				}
				fmt.Fprintf(stdio.Out, "mode: %s\n", mode)
				fmt.Fprintf(stdio.Out, "switch: %s\n", ans.Switch)
				for _, d := range ans.Dests {
					mark := " "
					if d.Name == ans.Target || ans.Target == "all" {
						mark = "*"
					}
					keysNote := ""
					if d.Keys == "characters" {
						keysNote = " (characters)"
					}
					fmt.Fprintf(stdio.Out, "%s %-12s %-24s %s%s\n", mark, d.Name, d.Addr, d.State, keysNote)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print each send's answer as one JSON object, one line each")
	c.Flags().IntVar(&pid, "pid", 0, "show only the send with this process id")
	return c
}
