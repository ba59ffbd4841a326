package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
)

// This file turns the backend lists (inject.Backends) into what the
// commands say and do with them: help, the flag values, completion and
// auto's choice. Nothing here names a backend.

// autoShort is --inject auto's line in completion.
const autoShort = "the first injector that works here"

// injectorNames are --inject's values: auto, then every injector.
func injectorNames() []string {
	return append([]string{"auto"}, inject.Names()...)
}

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

// chooseInjector resolves --inject auto on this machine, logging a
// fallback's note with why nothing better applied.
func chooseInjector(choice string, logf func(string, ...any)) (inject.Backend, error) {
	if choice != "auto" {
		b, ok := inject.Lookup(choice)
		if !ok {
			return b, fmt.Errorf("unknown injector %q (choose one of: %s)", choice, strings.Join(injectorNames(), ", "))
		}
		return b, nil
	}
	b, unmet, ok := inject.Choose(inject.OSHost())
	if !ok {
		return b, fmt.Errorf("--inject auto found no injector that works here (%s): choose one with --inject", strings.Join(unmet, ", "))
	}
	if b.Auto.Note != "" && logf != nil {
		logf("%s: %s", strings.Join(unmet, " and "), b.Auto.Note)
	}
	return b, nil
}

// autoInjector is the name of what --inject auto picks on this machine.
func autoInjector() string {
	b, err := chooseInjector("auto", nil)
	if err != nil {
		return "auto"
	}
	return b.Name
}

// writesStdout reports whether the injector named name writes to standard
// output (recv then draws no status there).
func writesStdout(name string) bool {
	b, ok := inject.Lookup(name)
	return ok && b.Caps.Stdout
}

// withDevice are the injectors that take recv's --device.
func withDevice() []inject.Backend {
	var out []inject.Backend
	for _, b := range inject.Backends {
		if b.Device != nil {
			out = append(out, b)
		}
	}
	return out
}

// injectorDevice is recv's --device default (the first injector's with a
// device) and help.
func injectorDevice() (def, help string) {
	var helps []string
	for _, b := range withDevice() {
		if def == "" {
			def = b.Device.Default
		}
		helps = append(helps, "with --inject "+b.Name+": "+b.Device.What)
	}
	return def, strings.Join(helps, "; ")
}

// checkInjectorDevice refuses --device (given: neither empty nor its
// default) with an injector that opens no device of the user's choice.
func checkInjectorDevice(choice, device string) error {
	def, _ := injectorDevice()
	if device == "" || device == def {
		return nil
	}
	if b, ok := inject.Lookup(choice); ok && b.Device != nil {
		return nil
	}
	var what, flags []string
	for _, b := range withDevice() {
		what = append(what, b.Device.What)
		flags = append(flags, "--inject "+b.Name)
	}
	return config.Involving(fmt.Errorf("--device %s names %s, which only %s types through: add %s, or drop --device",
		device, strings.Join(what, " or "), strings.Join(flags, " or "), strings.Join(flags, " or ")), "device", "inject")
}

// withLayout are the injectors that take recv's --layout.
func withLayout() []inject.Backend {
	var out []inject.Backend
	for _, b := range inject.Backends {
		if b.NamedLayout != nil {
			out = append(out, b)
		}
	}
	return out
}

// injectorLayoutHelp is recv's --layout help.
func injectorLayoutHelp() string {
	var helps []string
	for _, b := range withLayout() {
		helps = append(helps, "with --inject "+b.Name+": "+b.NamedLayout.What)
	}
	return "the XKB layout characters (from a terminal, a script's type) are typed through, as LAYOUT or LAYOUT(VARIANT): de, fr, gb, us(intl); " +
		strings.Join(helps, "; ") + "; a character it lacks is reported and skipped (needs xkb-data)"
}

// checkInjectorLayout refuses a --layout that is no layout's name, or
// given with an injector that types characters some other way or not at
// all. With --inject auto, newInjector checks the one it picks.
func checkInjectorLayout(choice, layout string) error {
	if layout == "" {
		return nil
	}
	if err := xkblayout.CheckName(layout); err != nil {
		return config.Involving(err, "layout")
	}
	if choice == "auto" {
		return nil
	}
	if b, ok := inject.Lookup(choice); !ok || b.NamedLayout != nil {
		return nil // an unknown --inject is validate's to report
	}
	return layoutRefused(choice, layout)
}

func layoutRefused(choice, layout string) error {
	var flags []string
	for _, b := range withLayout() {
		flags = append(flags, "--inject "+b.Name)
	}
	return config.Involving(fmt.Errorf("--layout %s is for injectors whose target's layout cannot be asked (%s); --inject %s types characters on its own or not at all: drop --layout, or use %s",
		layout, joinOr(flags), choice, joinOr(flags)), "layout", "inject")
}

// loadLayout reads the layout --layout names for the injector b, from
// this machine's XKB data; nil when none is named.
func loadLayout(b inject.Backend, layout string) (*xkblayout.Layout, error) {
	if layout == "" {
		return nil, nil
	}
	if b.NamedLayout == nil {
		// --inject auto picked it (validate refused the others).
		return nil, layoutRefused("auto (which picked "+b.Name+" here)", layout)
	}
	var compose io.Reader
	if f, err := os.Open(xkblayout.ComposeFile); err == nil {
		defer f.Close()
		compose = f
	}
	l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), layout, compose)
	if err != nil {
		if errors.Is(err, xkblayout.ErrUnknown) {
			return nil, config.Involving(fmt.Errorf("--layout: %w", err), "layout")
		}
		return nil, fmt.Errorf("--layout %s: %w", layout, err)
	}
	return l, nil
}

// joinOr joins words as a list in prose: "a, b or c".
func joinOr(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
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
	return joinOr(out)
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
