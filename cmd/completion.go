package cmd

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/peers"
)

// flagValues are the fixed choices of the flags whose values are names,
// for shell completion: "value\tdescription", as cobra hands them to the
// shell. The same words as the flags' help and validation. The backends'
// (--input, --inject) come from their lists.
var flagValues = map[string][]string{
	"role":       {"auto\tfrom the config file's tables and the settings given", "send\tthis machine sends", "recv\tthis machine receives", "both\tthis machine sends and receives"},
	"log-format": {"text\tlines for people", "json\tone JSON object a line"},
	"keys":       {"physical\tthe receiver's layout decides the character", "characters\tprintable keys as this machine's layout types them"},
}

// registerCompletions gives every command's --input, --inject, --role,
// --log-format, --hotkey and --to flags their values' completion
// (`keyrelay completion` scripts ask through cobra's hidden __complete
// command). By flag name across the tree, so that a command that gains
// one of these flags completes it with no line of its own.
func registerCompletions(root *cobra.Command) {
	values := map[string]cobra.CompletionFunc{
		"inject": cobra.FixedCompletions(injectorCompletions(), cobra.ShellCompDirectiveNoFileComp),
		"input":  cobra.FixedCompletions(sourceCompletions(), cobra.ShellCompDirectiveNoFileComp),
		"hotkey": completeHotkey,
		"to":     completeTo,
		"layout": completeLayout,
	}
	for name, v := range flagValues {
		values[name] = cobra.FixedCompletions(v, cobra.ShellCompDirectiveNoFileComp)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, f := range values {
			if c.LocalNonPersistentFlags().Lookup(name) != nil {
				// Only fails for a flag already registered: not
				// the case in a tree walked once.
				_ = c.RegisterFlagCompletionFunc(name, f)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeLayout completes --layout with the layouts and variants this
// machine's XKB data lists (xkblayout.ListFile), with their descriptions;
// variants only once the layout is typed up to its "(", as they are many.
func completeLayout(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	f, err := os.Open(xkblayout.ListFile)
	if err != nil {
		return nil, none
	}
	defer f.Close()
	entries, err := xkblayout.ParseList(f)
	if err != nil {
		return nil, none
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name, toComplete) && (strings.Contains(toComplete, "(") || !strings.Contains(e.Name, "(")) {
			out = append(out, e.Name+"\t"+e.Desc)
		}
	}
	return out, none
}

// completeHotkey completes the key name after the last + of --hotkey: the
// names of keys that have an evdev code (capture.CheckHotkey refuses the
// others).
func completeHotkey(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	prefix, part := "", toComplete
	if i := strings.LastIndex(toComplete, "+"); i >= 0 {
		prefix, part = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, k := range keys.All() {
		if k.Name != "" && k.Evdev != 0 && hasPrefixFold(k.Name, part) {
			out = append(out, prefix+k.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeTo completes --to with the names of the paired machines in the
// peers file the command would read (--peers, $KEYRELAY_PEERS, the config
// file, the default), after the last comma of a comma-separated list. A
// host name or address is the user's to type: nothing is offered for it,
// and a peers file that cannot be read offers nothing.
func completeTo(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	prefix, part := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		prefix, part = toComplete[:i+1], toComplete[i+1:]
	}
	path, err := config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName)
	if err != nil {
		return nil, none
	}
	list, err := peers.Load(path)
	if err != nil {
		return nil, none
	}
	var out []string
	for _, p := range list.Peers() {
		if !hasPrefixFold(p.Name, part) {
			continue
		}
		desc := "paired machine"
		if p.Addr != "" {
			desc += ", recv at " + p.Addr
		}
		out = append(out, prefix+p.Name+"\t"+desc)
	}
	return out, none
}

// hasPrefixFold reports whether s begins with prefix, case ignored: key
// names and peer names are matched without case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
