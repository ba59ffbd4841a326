package cmd

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
)

// NewCmdConfig builds `keyrelay config`: the effective settings of send,
// recv and doctor and where each came from, printed as a config file.
func NewCmdConfig(stdio IO) *cobra.Command {
	c := &cobra.Command{
		Use:     "config [send|recv|doctor]",
		Example: configExample,
		Short:   "Print the effective settings and where each came from",
		Long: `Print the settings send, recv and doctor would run with and, for each, where
it came from. The first of these wins:

  1. the command-line flag             keyrelay send --to desk
  2. the environment:                  KEYRELAY_SEND_TO=desk,pi:7000
     KEYRELAY_<COMMAND>_<FLAG> (lists
     are separated by commas)
  3. the config file: the flag's name  [send]
     in the command's table            to = ["desk", "pi:7000"]
  4. the flag's default

key-file, insecure, log-format and quiet mean the same for every command:
they may also be set once, at the top of the file or as KEYRELAY_<FLAG>
(KEYRELAY_KEY_FILE); a command's own setting wins. So may identity and peers
(KEYRELAY_IDENTITY, KEYRELAY_PEERS), the files 'keyrelay id' and 'keyrelay
peers' use. insecure = true is refused from the file and the environment:
--insecure only on the command line. doctor checks what recv
and send will use: after [doctor] it reads [recv], then [send].

The config file is TOML, at --config FILE, else $` + config.Env + `, else
` + config.DisplayDefaultPath() + ` (optional). In it, durations are
strings ("100ms"), key-file and script may start with "~/" and a relative
path is relative to the file's directory. A mistake anywhere in the file
stops every command with its place and the fix. Where a command-line flag
overrides a setting, the settings that went with it go too: --script or
--input terminal over the file's input = "x11" takes its grab = true with it.

The output is itself a valid config file: 'keyrelay config > FILE' writes one
to start from (unset settings are commented out).`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"send", "recv", "doctor"},
		RunE: func(c *cobra.Command, args []string) error {
			names := []string{"send", "recv", "doctor"}
			if len(args) == 1 {
				if !slices.Contains(names, args[0]) {
					return config.Usagef("no command %q has settings (choose send, recv or doctor)", args[0])
				}
				names = args[:1]
			}
			cf, err := loadConfig(c)
			if err != nil {
				return err
			}
			out := stdio.Out
			fmt.Fprintln(out, "# keyrelay's effective settings; each comes from the first of: flag, environment, config file, default.")
			switch {
			case cf.Found:
				fmt.Fprintf(out, "# config file: %s\n", cf.Path)
			case cf.Path != "":
				fmt.Fprintf(out, "# config file: %s (not there; it is optional)\n", cf.Path)
			default:
				fmt.Fprintln(out, "# config file: none (no home directory)")
			}
			for _, name := range names {
				c := newConfigurable(name, stdio)
				settings, err := cf.Apply(c.Name(), c.Flags())
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "\n[%s]\n", name)
				width := 0
				for _, s := range settings {
					width = max(width, len(s.Name+" = "+config.TOMLValue(s.Flag)))
				}
				for _, s := range settings {
					line := s.Name + " = " + config.TOMLValue(s.Flag)
					if config.IsUnset(s.Flag) {
						line = "# " + line
					}
					fmt.Fprintf(out, "%-*s  # %s\n", width+2, line, s.Source)
				}
			}
			known := configSchema().KnownEnv()
			var unknown []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(k, "KEYRELAY_") && !known[k] {
					unknown = append(unknown, k)
				}
			}
			slices.Sort(unknown)
			for _, k := range unknown {
				hint := "a typo? 'keyrelay config --help' explains the names"
				if s := spell.Closest(k, slices.Sorted(maps.Keys(known))); s != "" {
					hint = "did you mean $" + s + "?"
				}
				fmt.Fprintf(out, "\n# ignored: $%s is no setting of keyrelay (%s)", k, hint)
			}
			if len(unknown) > 0 {
				fmt.Fprintln(out)
			}
			return nil
		},
	}
	config.AddFlag(c.Flags())
	return c
}
