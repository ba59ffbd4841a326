package cmd

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/internal/autostart"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/spf13/cobra"
)

// autostartCommands are the commands autostart starts at sign-in.
var autostartCommands = []string{"recv", "send"}

// NewCmdAutostart builds `keyrelay autostart`: recv or send started when the
// user signs in to Windows, as contrib/systemd's user units start them with
// a Linux desktop session and contrib/launchd's agents on a Mac. Hidden
// elsewhere (no help, no man page): it says there what to use instead.
func NewCmdAutostart(stdio IO) *cobra.Command {
	c := &cobra.Command{
		Use:    "autostart",
		Short:  "Start recv or send when you sign in to Windows",
		Hidden: runtime.GOOS != "windows",
		Long: `Start keyrelay recv or send when you sign in to Windows, in your own desktop
session: a value of the per-user Run key (HKCU\Software\Microsoft\Windows\
CurrentVersion\Run, which Task Manager's Startup apps lists), so no
administrator is needed. The entry runs this keyrelay.exe, where it is now:
move it, and add the entry again.

The entry starts 'keyrelay autostart run', which closes the console window
Windows opened for it and runs the command with its output, and errors, in
%LOCALAPPDATA%\keyrelay\recv.log (send.log), kept to about 1 MB. Settings
come from %APPDATA%\keyrelay\config.toml and the flags given after --.
Linux and macOS start keyrelay with the session through systemd user units
and launchd agents instead (contrib/ in the source, and the release
archives).`,
		Example: `  keyrelay autostart add recv
  keyrelay autostart add send -- --input windows --to mediapc
  keyrelay autostart list
  keyrelay autostart remove send`,
	}
	c.AddCommand(&cobra.Command{
		Use:   "add recv|send [-- FLAGS...]",
		Short: "Start recv or send, with these flags, at every sign-in",
		Long: `Start recv or send, with the flags after --, when you sign in. The flags are
checked now (a flag recv or send does not have is refused); the entry
replaces one the command had. It starts at the next sign-in: start it now
yourself, or sign out and in again.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, flags, err := autostartArgs(c, args)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("unable to find keyrelay.exe's own path: %w", err)
			}
			line := autostart.Line(exe, name, flags)
			if err := autostart.Set(runEntryName(name), line); err != nil {
				return fmt.Errorf("unable to add the Run entry: %w", err)
			}
			log, _ := autostart.LogPath(name)
			fmt.Fprintf(stdio.Err, "keyrelay autostart: %s starts at your next sign-in: %s\n(log: %s; keyrelay autostart remove %s takes it away)\n", name, line, log, name)
			return nil
		},
	}, &cobra.Command{
		Use:   "remove recv|send",
		Short: "No longer start recv or send at sign-in",
		Long:  `Remove the Run entry of recv or send. A keyrelay it started keeps running until you sign out (or end it in Task Manager).`,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !slices.Contains(autostartCommands, args[0]) {
				return config.Usagef("keyrelay autostart remove: %q is not recv or send", args[0])
			}
			found, err := autostart.Delete(runEntryName(args[0]))
			if err != nil {
				return fmt.Errorf("unable to remove the Run entry: %w", err)
			}
			if !found {
				return fmt.Errorf("%s does not start at sign-in (keyrelay autostart list shows what does)", args[0])
			}
			fmt.Fprintf(stdio.Err, "keyrelay autostart: %s no longer starts at sign-in\n", args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "list",
		Short: "Show what starts at sign-in",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			for _, name := range autostartCommands {
				line, found, err := autostart.Get(runEntryName(name))
				if err != nil {
					return fmt.Errorf("unable to read the Run entries: %w", err)
				}
				if found {
					log, _ := autostart.LogPath(name)
					fmt.Fprintf(stdio.Out, "%s\t%s\tlog %s\n", name, line, log)
				}
			}
			return nil
		},
	}, &cobra.Command{
		Use:                "run recv|send [FLAGS...]",
		Short:              "What the Run entry starts: the command, logging to a file",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !slices.Contains(autostartCommands, args[0]) {
				return config.Usagef("keyrelay autostart run: %q is not recv or send", args[0])
			}
			path, err := autostart.LogPath(args[0])
			if err != nil {
				return err
			}
			log, err := autostart.OpenLog(path)
			if err != nil {
				return err
			}
			defer log.Close()
			// The console Windows made for the entry: nobody reads it.
			autostart.DetachConsole()
			fmt.Fprintf(log, "keyrelay autostart: %s starting: keyrelay %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
			code := Run(args, IO{In: strings.NewReader(""), Out: log, Err: log})
			fmt.Fprintf(log, "keyrelay autostart: %s %s exited %d\n", time.Now().Format(time.RFC3339), args[0], code)
			if code != ExitOK {
				return fmt.Errorf("%s exited %d (log: %s)", args[0], code, path)
			}
			return nil
		},
	})
	return c
}

// autostartArgs checks add's arguments: recv or send, then flags after
// --, which that command's own flag set must take.
func autostartArgs(c *cobra.Command, args []string) (name string, flags []string, err error) {
	name = args[0]
	if !slices.Contains(autostartCommands, name) {
		return "", nil, config.Usagef("keyrelay autostart add: %q is not recv or send", name)
	}
	if dash := c.ArgsLenAtDash(); dash > 1 || (dash < 0 && len(args) > 1) {
		return "", nil, config.Usagef("keyrelay autostart add: give %s's flags after --: keyrelay autostart add %s -- %s", name, name, strings.Join(args[1:], " "))
	}
	flags = args[1:]
	if slices.Contains(flags, "-h") || slices.Contains(flags, "--help") {
		return "", nil, config.Usagef("keyrelay autostart add %s: --help is not a flag to start %s with", name, name)
	}
	if err := checkFlags(name, flags); err != nil {
		return "", nil, config.Usagef("keyrelay autostart add %s: %v", name, err)
	}
	return name, flags, nil
}

// checkFlags parses flags as keyrelay's command name parses them (the
// root's persistent flags, --config and --peers, included) and runs
// nothing: a flag it lacks, a value of the wrong type or an argument that
// is not a flag is an error.
func checkFlags(name string, flags []string) error {
	sub, _, err := NewRootCmd(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}).Find([]string{name})
	if err != nil {
		return err
	}
	if err := sub.ParseFlags(flags); err != nil {
		return err
	}
	if rest := sub.Flags().Args(); len(rest) > 0 {
		return fmt.Errorf("%s takes flags only, not %q", name, rest)
	}
	return nil
}

// runEntryName is the Run key's value for command name.
func runEntryName(name string) string { return "keyrelay " + name }
