package cmd

import (
	"fmt"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
)

// This file turns the backend lists (inject.Backends) into what the
// commands say and do with them: help, the flag values, completion and
// auto's choice. Nothing here names a backend.

// autoShort is --inject auto's line in completion.
const autoShort = "the first injector that works here"

// autoHelp says what --inject auto picks, from the injectors' ranks (on
// every operating system: the help is the same everywhere).
func autoHelp() string {
	var steps []string
	for _, b := range inject.Ranked("") {
		steps = append(steps, strings.TrimSpace(b.Name+" "+b.Auto.Desc))
	}
	return autoShort + ": " + strings.Join(steps, ", else ") + " (the default)"
}

// injectorHelp is recv --help's list of injectors, auto first.
func injectorHelp() string {
	list := []string{hangingIndent(fmt.Sprintf("  %-8s ", "auto"), autoHelp(), 78)}
	for _, b := range inject.Backends {
		list = append(list, hangingIndent(fmt.Sprintf("  %-8s ", b.Name), b.Help, 78))
	}
	return strings.Join(list, "\n")
}

// injectorCompletions are --inject's values for the shell.
func injectorCompletions() []string {
	out := []string{"auto\t" + autoShort}
	for _, b := range inject.Backends {
		out = append(out, b.Name+"\t"+b.Short)
	}
	return out
}

// injectorDeviceHelp is recv's --device help.
func injectorDeviceHelp() string {
	var helps []string
	for _, b := range inject.WithDevice() {
		helps = append(helps, "with --inject "+b.Name+": "+b.Device.What)
	}
	return strings.Join(helps, "; ")
}

// injectorLayoutHelp is recv's --layout help.
func injectorLayoutHelp() string {
	var helps []string
	for _, b := range inject.WithLayout() {
		helps = append(helps, "with --inject "+b.Name+": "+b.NamedLayout.What)
	}
	return "the XKB layout characters (from a terminal, a script's type) are typed through, as LAYOUT or LAYOUT(VARIANT): de, fr, gb, us(intl); " +
		strings.Join(helps, "; ") + "; a character it lacks is reported and skipped (needs xkb-data)"
}

// sourceHelp is send --help's list of key sources.
func sourceHelp() string {
	var list []string
	for _, b := range capture.Sources {
		list = append(list, hangingIndent(fmt.Sprintf("  %-15s ", b.Name), b.Help, 78))
	}
	return strings.Join(list, "\n")
}

// sourceAliases says which sources have other names ("hook is x11; "),
// for --input's help.
func sourceAliases() string {
	var out string
	for _, b := range capture.Sources {
		for _, a := range b.Aliases {
			out += a + " is " + b.Name + "; "
		}
	}
	return out
}

// sourceCompletions are --input's values for the shell, aliases last.
func sourceCompletions() []string {
	var out, aliases []string
	for _, b := range capture.Sources {
		out = append(out, b.Name+"\t"+b.Short)
		for _, a := range b.Aliases {
			aliases = append(aliases, a+"\tthe same as "+b.Name)
		}
	}
	return append(out, aliases...)
}

// doctorRoleHelp is doctor --help's list of each role's checks: the
// backends' own, then the network's.
func doctorRoleHelp() string {
	var recv, send []string
	for _, b := range inject.Backends {
		if b.Check != nil {
			recv = append(recv, b.Check.What+" (--inject "+b.Name+")")
		}
	}
	for _, b := range capture.Sources {
		if c := b.Check; c != nil {
			send = append(send, strings.TrimSpace(c.What+" (--input "+b.Name+" "+c.When)+")")
		}
	}
	recv = append(recv, "and the UDP port recv listens on (--listen): free, or held by a keyrelay recv that answers a probe under this key (it is already running: fine)")
	send = append(send, "and a round trip to each of send's destinations ([send] to in the config file, $KEYRELAY_SEND_TO, or --to): a keyrelay recv there answers under this key (RTT and clock offset). A broadcast or multicast destination is one-way: it is named, not probed.")
	return hangingIndent("  recv        ", strings.Join(recv, ", "), 78) + "\n" +
		hangingIndent("  send        ", strings.Join(send, ", "), 78)
}
