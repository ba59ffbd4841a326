package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// NewCmdVersion builds `keyrelay version`.
func NewCmdVersion(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Example: versionExample,
		Short:   "Print the version",
		Args:    cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(stdio.Out, versionString())
		},
	}
}

// buildDate is set by the Makefile (-ldflags -X ...cmd.buildDate=...): the
// toolchain records the commit and its time, but not when it built.
var buildDate string

// versionString reports the module version and, for a build from a git
// checkout, the commit and its time, as the Go toolchain recorded them, and
// the build date the Makefile stamps.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "keyrelay (unknown version)"
	}
	s := "keyrelay " + bi.Main.Version
	var rev, at, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			at = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		s += fmt.Sprintf(" commit %.12s%s %s", rev, dirty, at)
	}
	if buildDate != "" {
		s += " built " + buildDate
	}
	return s + " " + bi.GoVersion
}
