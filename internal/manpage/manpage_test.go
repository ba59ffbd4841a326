package manpage

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/cmd"
)

func keyrelayTree() *cobra.Command {
	root := cmd.NewRootCmd(cmd.IO{})
	root.InitDefaultCompletionCmd()
	return root
}

// TestTreeHasEveryPage: a section 1 page per
// command, completion and its shells included, cobra's help and the hidden
// __complete left out, and keyrelay-script(5) from the help topic.
func TestTreeHasEveryPage(t *testing.T) {
	var files []string
	for _, p := range Tree(keyrelayTree(), Header{}) {
		files = append(files, p.File)
	}
	for _, want := range []string{"keyrelay.1", "keyrelay-send.1", "keyrelay-recv.1", "keyrelay-keygen.1", "keyrelay-impair.1",
		"keyrelay-id.1", "keyrelay-peers.1", "keyrelay-peers-add.1", "keyrelay-peers-remove.1", "keyrelay-pair.1",
		"keyrelay-doctor.1", "keyrelay-config.1", "keyrelay-keys.1", "keyrelay-version.1",
		"keyrelay-completion.1", "keyrelay-completion-bash.1", "keyrelay-script.5"} {
		if !slices.Contains(files, want) {
			t.Errorf("no %s among %q", want, files)
		}
	}
	for _, not := range []string{"keyrelay-help.1", "keyrelay-__complete.1", "keyrelay-script.1"} {
		if slices.Contains(files, not) {
			t.Errorf("%s made", not)
		}
	}
}

// TestExamplesFit: no line of a command's Example is wider than
// ExampleWidth, the widest a man page read at 80 columns shows whole (a
// pre-formatted line is never wrapped, so it would run past the edge).
func TestExamplesFit(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for i, l := range strings.Split(c.Example, "\n") {
			if n := utf8.RuneCountInString(l); n > ExampleWidth {
				t.Errorf("%s: line %d of its example is %d columns, more than %d (break it with \\ or |, or move its comment above it):\n%s",
					c.CommandPath(), i+1, n, ExampleWidth, l)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(keyrelayTree())
}

// TestManPagesFit80Columns: every page, rendered
// as `MANWIDTH=80 man -l` renders it (or by groff at 80 columns, without
// man), has no line wider than 80 columns and no formatter warning, and
// the flag text comes through as written: send's --to keeps its
// "HOST[:PORT] (repeatable" (go-md2man made a link of it), and its dashes
// are ASCII (a hyphenated or Unicode-dashed flag cannot be copied).
func TestManPagesFit80Columns(t *testing.T) {
	render := renderer(t)
	dir := t.TempDir()
	pages := Tree(keyrelayTree(), Header{Source: "keyrelay", Manual: "keyrelay manual"})
	if err := Write(dir, pages); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		out, warnings := render(filepath.Join(dir, p.File))
		if warnings != "" {
			t.Errorf("%s: the formatter warns:\n%s", p.File, warnings)
		}
		lines := strings.Split(out, "\n")
		if len(lines) < 10 {
			t.Errorf("%s renders as %d lines:\n%s", p.File, len(lines), out)
		}
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%s: rendered line %d is %d columns:\n%s", p.File, i+1, n, l)
			}
		}
		if p.File == "keyrelay-send.1" {
			flat := strings.Join(strings.Fields(out), " ")
			// The whole reference, which --help leaves to the page: the
			// full description and every flag.
			for _, want := range []string{"--to DEST", "receiver address HOST[:PORT] (repeatable", "--script FILE",
				"Delivery: with feedback (the default) each receiver acknowledges", "--outage duration", "--queue int"} {
				if !strings.Contains(flat, want) {
					t.Errorf("keyrelay-send.1 lacks %q as written", want)
				}
			}
		}
		if strings.ContainsAny(out, "\u2010\u2212") {
			t.Errorf("%s renders a Unicode hyphen or minus: flags copied from it would not work", p.File)
		}
	}
}

// renderer returns a function rendering a page as plain text at 80
// columns, with the formatter's warnings apart; the test is skipped without
// man or groff.
func renderer(t *testing.T) func(path string) (text, warnings string) {
	sgr := regexp.MustCompile("\x1b\\[[0-9;]*m|.\b")
	run := func(c *exec.Cmd) (string, string) {
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", c.Args, err, errb.String())
		}
		return sgr.ReplaceAllString(out.String(), ""), errb.String()
	}
	if _, err := exec.LookPath("man"); err == nil {
		return func(path string) (string, string) {
			c := exec.Command("man", "--warnings", "-l", path)
			c.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LANG=C.UTF-8", "MAN_KEEP_FORMATTING=")
			return run(c)
		}
	}
	if _, err := exec.LookPath("groff"); err == nil {
		return func(path string) (string, string) {
			return run(exec.Command("groff", "-man", "-Tutf8", "-ww", "-rLL=80n", "-P-cbou", path))
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("man and groff missing in CI: .ci/run must install man-db (make deps)")
	}
	t.Skip("needs man or groff to render the pages (apt-get install man-db)")
	return nil
}

// TestEscape: text reaches the page as written: a backslash is printed, a
// dash stays ASCII, and a line starting with '.' or '\” is text, not a
// request.
func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`--to HOST`, `\-\-to HOST`},
		{`type "a\n"`, `type "a\en"`},
		{`.keys file`, `\&.keys file`},
		{`'quoted' first`, `\&'quoted' first`},
		{`plain`, `plain`},
	} {
		if got := escLine(tc.in); got != tc.want {
			t.Errorf("escLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWriteText: --help's layouts become roff that wraps: paragraphs are
// filled, an indented list with its text in one column becomes tagged
// paragraphs, and any other indented block (commands with their comments)
// stays as written.
func TestWriteText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"paragraph", "one\ntwo", ".PP\none\ntwo\n"},
		{"list", "  a      first\n         more\n  bb     second", ".TP\na\nfirst more\n.TP\nbb\nsecond\n"},
		{"list with a two-word tag", "  both roles  x\n  recv        y", ".TP\nboth roles\nx\n.TP\nrecv\ny\n"},
		{"commands", "  keyrelay keygen\n  keyrelay recv   # here", ".PP\n.RS 2\n.nf\nkeyrelay keygen\nkeyrelay recv   # here\n.fi\n.RE\n"},
		{"aligned comments are no list", "  keyrelay keygen --out k.key  # once\n  keyrelay recv --key-file k  # here",
			".PP\n.RS 2\n.nf\nkeyrelay keygen \\-\\-out k.key  # once\nkeyrelay recv \\-\\-key\\-file k  # here\n.fi\n.RE\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeText(&b, tc.in)
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestMarkdown: the subset of Markdown the script format uses becomes
// roff: the title dropped for NAME, a table's rows tagged paragraphs
// (header and rule dropped), list items, code and bold spans, fenced
// blocks as written.
func TestMarkdown(t *testing.T) {
	md := "## Key scripts\n\nA `tap` line.\n\n| command | does |\n|---|---|\n| `tap KEY` | press and release |\n\n- **KEY** is a key,\n  any key\n\n```\ntap KeyA\n```\n\n### Names\n"
	got := string(Markdown("keyrelay-script", "5", "The key script format", md, Header{Source: "keyrelay", Manual: "keyrelay manual"}).Text)
	want := ".TH \"KEYRELAY\\-SCRIPT\" 5 \"\" \"keyrelay\" \"keyrelay manual\"\n.nh\n.ad l\n" +
		".SH NAME\nkeyrelay\\-script \\- The key script format\n.SH DESCRIPTION\n" +
		".PP\nA \\fBtap\\fR line.\n" +
		".TP\n\\fBtap KEY\\fR\npress and release\n" +
		".IP \\(bu 2\n\\fBKEY\\fR is a key,\nany key\n" +
		".PP\n.RS 2\n.nf\ntap KeyA\n.fi\n.RE\n" +
		".SS Names\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestDescriptionAnnotation: a command's man page takes its description
// from the Description annotation (cmd's ManDescription) when it has one,
// its Long (what --help shows) otherwise.
func TestDescriptionAnnotation(t *testing.T) {
	if cmd.ManDescription != Description {
		t.Fatalf("cmd.ManDescription %q, manpage.Description %q: one key", cmd.ManDescription, Description)
	}
	c := &cobra.Command{Use: "x", Short: "s", Long: "the short help", Run: func(*cobra.Command, []string) {}}
	if p := string(command(c, Header{}).Text); !strings.Contains(p, "the short help") {
		t.Errorf("no annotation: the page lacks the Long:\n%s", p)
	}
	c.Annotations = map[string]string{Description: "the whole reference"}
	if p := string(command(c, Header{}).Text); !strings.Contains(p, "the whole reference") || strings.Contains(p, "the short help") {
		t.Errorf("with the annotation: the page has\n%s", p)
	}
}
