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
		Long: `Print the module version, the commit keyrelay was built from and its time,
the build date and the Go version.

The Go toolchain records the commit when it builds from a git checkout with
VCS stamping on; the Makefile (make build, make dist, make install) stamps it
from git itself, so it is there even with GOFLAGS=-buildvcs=false. A build
that had neither (go build -buildvcs=false, go install from a source tree
without .git) says "commit unknown".`,
		Args: cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(stdio.Out, versionString())
		},
	}
}

// Set by the Makefile (-ldflags -X ...cmd.buildDate=...): the toolchain
// records the commit and its time only with VCS stamping on (off when
// GOFLAGS has -buildvcs=false, or git cannot be run), and never when it
// built. commit may end in "+dirty" (uncommitted changes).
var buildDate, commit, commitTime string

// versionString reports the module version, the commit and its time (the
// toolchain's record first, else the Makefile's stamp, else "commit
// unknown"), the build date the Makefile stamps, and the Go version.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "keyrelay (unknown version)"
	}
	return formatVersion(bi, stamp{commit: commit, commitTime: commitTime, buildDate: buildDate})
}

// stamp is what the Makefile's -ldflags set.
type stamp struct{ commit, commitTime, buildDate string }

func formatVersion(bi *debug.BuildInfo, st stamp) string {
	s := "keyrelay " + bi.Main.Version
	rev, at, dirty := "", "", ""
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
	switch {
	case rev != "":
		s += fmt.Sprintf(" commit %.12s%s %s", rev, dirty, at)
	case st.commit != "":
		s += " commit " + st.commit
		if st.commitTime != "" {
			s += " " + st.commitTime
		}
	default:
		s += " commit unknown"
	}
	if st.buildDate != "" {
		s += " built " + st.buildDate
	}
	return s + " " + bi.GoVersion
}
