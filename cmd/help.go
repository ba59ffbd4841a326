package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
)

// A command's --help fits a screen (80 lines of 80 columns): what it does
// (its Long), its usage, two or three examples and its common flags; the
// other flags are named in one line. Its man page (internal/manpage) has
// the whole reference: the full description, kept in the command's
// ManDescription annotation, and every flag with its usage. So the man
// pages stay generated from the commands, and --help stays short.

// ManDescription is the annotation of a command that holds the
// description of its man page, when --help shows a shorter Long (the same
// key as manpage.Description, which cannot be imported here: its tests
// import cmd).
const ManDescription = "keyrelay.man.description"

// HelpWidth and HelpLines bound a command's --help: what an 80x24
// terminal shows in three or four screens, and no line it must wrap.
const (
	HelpWidth = 80
	HelpLines = 80
)

// flagMore marks a flag that --help names without its usage (its man page
// has it); flagBrief holds the shorter usage --help shows for a flag.
const (
	flagMore  = "keyrelay-help-more"
	flagBrief = "keyrelay-help-brief"
)

// manual gives c the full description its man page shows (--help shows
// the shorter Long).
func manual(c *cobra.Command, text string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[ManDescription] = text
}

// commonFlags makes --help list with their usage only the flags of c
// named (and --help); the others it names in one line.
func commonFlags(c *cobra.Command, names ...string) {
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || slices.Contains(names, f.Name) {
			return
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[flagMore] = []string{"true"}
	})
}

// briefly gives flags of c the shorter usage --help shows (flag name to
// usage); the man page keeps the full one.
func briefly(c *cobra.Command, usage map[string]string) {
	for name, u := range usage {
		f := c.Flags().Lookup(name)
		if f == nil {
			panic("briefly: no flag --" + name + " in " + c.Name()) // a programming error in this package
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[flagBrief] = []string{u}
	}
}

// usageTemplate is cobra's, but for its flag sections (flagSection).
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{flagSection .LocalFlags .CommandPath}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{flagSection .InheritedFlags .CommandPath}}{{end}}{{if .HasHelpSubCommands}}

Additional help topics:{{range .Commands}}{{if .IsAdditionalHelpTopicCommand}}
  {{rpad .CommandPath .CommandPathPadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

// setHelp gives root (and so every command) the usage template above.
func setHelp(root *cobra.Command) {
	cobra.AddTemplateFunc("flagSection", flagSection)
	root.SetUsageTemplate(usageTemplate)
}

// flagSection lists the flags of fs that --help shows, their usage
// wrapped at HelpWidth, and names the others in a line of their own,
// with the man page that has them (path: the command's path).
func flagSection(fs *pflag.FlagSet, path string) string {
	shown := pflag.NewFlagSet("shown", pflag.ContinueOnError)
	var more []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if _, ok := f.Annotations[flagMore]; ok {
			more = append(more, "--"+f.Name)
			return
		}
		if brief, ok := f.Annotations[flagBrief]; ok {
			g := *f
			g.Usage = brief[0]
			f = &g
		}
		shown.AddFlag(f)
	})
	out := strings.TrimRight(shown.FlagUsagesWrapped(HelpWidth), " \n")
	if len(more) > 0 {
		page := strings.ReplaceAll(path, " ", "-")
		out += "\n" + hangingIndent("  More (man "+page+"): ", strings.Join(more, " "), HelpWidth)
	}
	return out
}

// sourceShortHelp is send --help's list of key sources, one line each.
func sourceShortHelp() string {
	var list []string
	for _, b := range capture.Sources {
		name := b.Name
		for _, a := range b.Aliases {
			name += ", " + a
		}
		list = append(list, hangingIndent(fmt.Sprintf("  %-14s ", name), b.Short, HelpWidth-2))
	}
	return strings.Join(list, "\n")
}

// injectorShortHelp is recv --help's list of injectors, one line each.
func injectorShortHelp() string {
	list := []string{hangingIndent(fmt.Sprintf("  %-8s ", "auto"), autoShort+" (the default)", HelpWidth-2)}
	for _, b := range inject.Backends {
		list = append(list, hangingIndent(fmt.Sprintf("  %-8s ", b.Name), b.Short, HelpWidth-2))
	}
	return strings.Join(list, "\n")
}

// layoutInjectors names the injectors that take recv's --layout, as
// flags.
func layoutInjectors() []string {
	var out []string
	for _, b := range inject.WithLayout() {
		out = append(out, "--inject "+b.Name)
	}
	return out
}

// completionHelp gives cobra's completion command and its shells' commands
// descriptions and examples of keyrelay's own: cobra's name other
// systems' paths and write to /etc, and its examples could not run here
// as written (every example of --help runs in a test).
func completionHelp(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Long = `Write keyrelay's completion script for a shell: commands, flags and the
values of --input, --inject, --role, --log-format, --hotkey and --to (the
names of the paired machines) complete. make install puts the scripts where
each shell finds them, for every user.`
		c.Example = completionExample
		for _, sh := range c.Commands() {
			switch sh.Name() {
			case "bash":
				sh.Long = `Write keyrelay's completion script for bash. It needs the bash-completion
package (apt-get install bash-completion): without it, loading the script
fails with "_get_comp_words_by_ref: command not found".`
				sh.Example = completionExample
			case "zsh":
				sh.Long = `Write keyrelay's completion script for zsh, to save as _keyrelay in a
directory of $fpath, with compinit run from ~/.zshrc.`
				sh.Example = zshExample
			case "fish":
				sh.Long = `Write keyrelay's completion script for fish, to save in
~/.config/fish/completions.`
				sh.Example = fishExample
			case "powershell":
				sh.Long = `Write keyrelay's completion script for PowerShell, to load from your
PowerShell profile.`
				sh.Example = powershellExample
			}
		}
	}
}

// scriptSummary is what 'keyrelay help script' shows of the key script
// format (format: its Markdown, whole in keyrelay-script(5)): the text up
// to the end of its first table, the commands, and where the rest is.
func scriptSummary(format string) string {
	lines := strings.Split(strings.TrimSpace(format), "\n")
	end, inTable := len(lines), false
	for i, l := range lines {
		if strings.HasPrefix(l, "|") {
			inTable = true
		} else if inTable {
			end = i
			break
		}
	}
	return strings.Join(lines[:end], "\n") + `

KEY is a key's name (keyrelay keys lists them: KeyA, ShiftLeft, Enter), an
X name (Return, ctrl) or one character in double quotes ("é"); DURATION is
like 250ms or 1.5s. Every rule, with examples: man 5 keyrelay-script.`
}
