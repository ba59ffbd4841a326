// Package manpage writes keyrelay's man pages in roff: one per command from
// the cobra command tree (section 1), so they never drift from --help, and
// pages from the Markdown of a help topic (the key script format, section
// 5).
//
// Not cobra/doc's generator: it goes through Markdown (go-md2man), where a
// flag's "HOST[:PORT] (repeatable...)" becomes a link and loses its
// [:PORT], its text runs past 80 columns, and its examples sit 10 columns
// in. Here text is escaped for roff and nothing else, paragraphs
// are filled by the formatter, the indented lists of --help become tagged
// paragraphs that wrap at any width, and pre-formatted lines (examples)
// are indented 2 columns, so that a line of at most ExampleWidth fits
// MANWIDTH=80.
package manpage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ExampleWidth is the longest line of a command's Example (with its 2
// leading spaces, as --help shows it) that fits a man page read at 80
// columns: the page's 7-column indent and the 2 of a pre-formatted block
// leave 71 for the text after those 2 spaces.
const ExampleWidth = 73

// Description is the annotation of a command that holds its page's
// description, when its Long (what --help shows) is a shorter one.
const Description = "keyrelay.man.description"

// Page is one man page: its file name (keyrelay-send.1) and its roff text.
type Page struct {
	File string
	Text []byte
}

// Header is what every page's .TH line carries besides its name and
// section.
type Header struct {
	Source, Manual string
}

// Tree makes a section 1 page for root and each command below it that is
// neither hidden nor cobra's help command, and a section 5 page from the
// Markdown of each of root's help topics (a command with neither Run nor
// subcommands: `keyrelay help script`, the key script format).
func Tree(root *cobra.Command, h Header) []Page {
	var pages []Page
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.IsAdditionalHelpTopicCommand() {
			text := c.Long
			if d, ok := c.Annotations[Description]; ok {
				text = d
			}
			pages = append(pages, Markdown(pageName(c), "5", c.Short, text, h))
			return
		}
		pages = append(pages, command(c, h))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return pages
}

// pageName is a command's page name: its path joined with '-'.
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

func command(c *cobra.Command, h Header) Page {
	var b bytes.Buffer
	name := pageName(c)
	th(&b, name, "1", h)
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", esc(name), esc(c.Short))
	b.WriteString(".SH SYNOPSIS\n")
	fmt.Fprintf(&b, ".B %s\n", esc(c.CommandPath()))
	if rest := strings.TrimSpace(strings.TrimPrefix(c.UseLine(), c.CommandPath())); rest != "" {
		b.WriteString(esc(rest) + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString(".br\n")
		fmt.Fprintf(&b, ".B %s\n.I COMMAND\n", esc(c.CommandPath()))
	}
	b.WriteString(".SH DESCRIPTION\n")
	text := c.Long
	if d, ok := c.Annotations[Description]; ok {
		text = d
	}
	if text == "" {
		text = c.Short
	}
	writeText(&b, text)
	if c.HasAvailableSubCommands() {
		b.WriteString(".SH COMMANDS\n")
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(&b, ".TP\n.B %s\n%s (see \\fB%s\\fR(1))\n", esc(sub.Name()), esc(sub.Short), esc(pageName(sub)))
		}
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		writeFlags(&b, fs)
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS INHERITED FROM PARENT COMMANDS\n")
		writeFlags(&b, fs)
	}
	if c.Example != "" {
		b.WriteString(".SH EXAMPLES\n")
		writeVerbatim(&b, strings.Split(strings.TrimRight(c.Example, "\n"), "\n"))
	}
	var also []string
	if c.HasParent() {
		also = append(also, pageName(c.Parent())+"(1)")
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			also = append(also, pageName(sub)+"(1)")
		}
	}
	if !c.HasParent() {
		for _, t := range c.Commands() {
			if t.IsAdditionalHelpTopicCommand() {
				also = append(also, pageName(t)+"(5)")
			}
		}
	}
	if len(also) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		for i, a := range also {
			n, sec, _ := strings.Cut(a, "(")
			sep := ","
			if i == len(also)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, ".BR %s (%s%s\n", esc(n), sec, sep)
		}
	}
	return Page{File: name + ".1", Text: b.Bytes()}
}

// th writes the title line and turns off hyphenation and justification:
// a hyphenated flag or key name cannot be copied, and stretched spaces
// help no one in a terminal.
func th(b *bytes.Buffer, name, section string, h Header) {
	fmt.Fprintf(b, ".TH \"%s\" %s \"\" \"%s\" \"%s\"\n.nh\n.ad l\n", esc(strings.ToUpper(name)), section, esc(h.Source), esc(h.Manual))
}

// writeFlags writes one tagged paragraph per flag: its names, its value's
// name and its default as --help shows them, then its usage, filled.
func writeFlags(b *bytes.Buffer, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		tag := "\\fB\\-\\-" + esc(f.Name) + "\\fR"
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			tag = "\\fB\\-" + esc(f.Shorthand) + "\\fR, " + tag
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" {
			tag += " \\fI" + esc(varname) + "\\fR"
		}
		if def := defaultOf(f); def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", tag, esc(usage))
	})
}

// defaultOf is a flag's default as --help shows it, "" for a zero value.
func defaultOf(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "[]", "0s":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// listItem is the first line of an item of an indented list as --help
// writes them: "  tag   text", the text starting at a column of its own.
var listItem = regexp.MustCompile(`^( +)(\S(?:.*?\S)?)( {2,})(\S.*)$`)

// writeText writes the text of a command's Long: paragraphs (lines that
// start in the first column) are filled; a block of indented lines is a
// list of tagged paragraphs when it is laid out as one (each item's text
// in one column, continued in that column), else pre-formatted.
func writeText(b *bytes.Buffer, text string) {
	for _, block := range blocks(text) {
		if block[0] != "" && block[0][0] != ' ' {
			b.WriteString(".PP\n")
			for _, l := range block {
				b.WriteString(escLine(strings.TrimSpace(l)) + "\n")
			}
			continue
		}
		if items, ok := list(block); ok {
			for _, it := range items {
				fmt.Fprintf(b, ".TP\n%s\n%s\n", escLine(it.tag), escLine(it.text))
			}
			continue
		}
		writeVerbatim(b, block)
	}
}

// blocks splits text at blank lines, and where lines go from the first
// column to indented or back.
func blocks(text string) [][]string {
	var out [][]string
	var cur []string
	indented := func(l string) bool { return strings.HasPrefix(l, " ") }
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if cur != nil {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		if cur != nil && indented(cur[0]) != indented(l) {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, l)
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

type item struct{ tag, text string }

// maxTextColumn is the furthest column an indented list's text starts at
// in --help (send's sources: 18).
const maxTextColumn = 24

// list reads a block as an indented list, if it is one: every line an
// item's first line ("  tag   text", the text at one column for all) or
// the continuation of an item's text (spaces up to that column).
func list(block []string) ([]item, bool) {
	m := listItem.FindStringSubmatch(block[0])
	if m == nil {
		return nil, false
	}
	indent, col := len(m[1]), len(m[1])+len(m[2])+len(m[3])
	// --help's lists have short tags and their text starts early; a block
	// of commands with comments aligned after them is not a list.
	if col > maxTextColumn {
		return nil, false
	}
	var items []item
	for _, l := range block {
		lead := len(l) - len(strings.TrimLeft(l, " "))
		if lead == col && len(items) > 0 {
			items[len(items)-1].text += " " + strings.TrimSpace(l)
			continue
		}
		m := listItem.FindStringSubmatch(l)
		if m == nil || len(m[1]) != indent || utf8.RuneCountInString(m[1]+m[2]+m[3]) != col {
			return nil, false
		}
		items = append(items, item{tag: m[2], text: m[4]})
	}
	return items, len(items) > 1
}

// writeVerbatim writes lines as they are, less their common indent, 2
// columns in.
func writeVerbatim(b *bytes.Buffer, lines []string) {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); common < 0 || n < common {
			common = n
		}
	}
	b.WriteString(".PP\n.RS 2\n.nf\n")
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		b.WriteString(escLine(l) + "\n")
	}
	b.WriteString(".fi\n.RE\n")
}

// esc makes text safe inside a roff line: a backslash is printed as one,
// and '-' stays an ASCII hyphen-minus (copied flags and key names work).
func esc(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// escLine is esc for a whole line, which must not start with a control
// character ('.' or '\”) either.
func escLine(s string) string {
	s = esc(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// Write writes the pages into dir, made if need be, and removes the
// keyrelay pages in it that are not among them (a command removed).
func Write(dir string, pages []Page) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unable to make the man page directory: %w", err)
	}
	var names []string
	for _, p := range pages {
		names = append(names, p.File)
		if err := os.WriteFile(filepath.Join(dir, p.File), p.Text, 0o644); err != nil {
			return fmt.Errorf("unable to write a man page: %w", err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "keyrelay*.[0-9]"))
	for _, o := range old {
		if !slices.Contains(names, filepath.Base(o)) {
			if err := os.Remove(o); err != nil {
				return fmt.Errorf("unable to remove a stale man page: %w", err)
			}
		}
	}
	return nil
}
