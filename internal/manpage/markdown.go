package manpage

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Markdown makes a page of section from a help topic written in the
// Markdown subset keyrelay's topics use (the key script format, shared with
// the README): ## and ### headings, paragraphs, "- " lists, tables of two
// or more columns, ``` blocks, `code`, **bold** and [links](url). The
// topic's first heading is its title, given as the page's NAME instead.
func Markdown(name, section, short, md string, h Header) Page {
	var b bytes.Buffer
	th(&b, name, section, h)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n.SH DESCRIPTION\n", esc(name), esc(short))
	lines := strings.Split(strings.TrimSpace(md), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	para := false // inside a paragraph or list item, to be continued
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " ")
		switch {
		case l == "":
			para = false
		case strings.HasPrefix(l, "```"):
			var pre []string
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				pre = append(pre, lines[i])
			}
			writeVerbatim(&b, pre)
			para = false
		case strings.HasPrefix(l, "### "):
			fmt.Fprintf(&b, ".SS %s\n", inline(strings.TrimPrefix(l, "### ")))
			para = false
		case strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "# "):
			fmt.Fprintf(&b, ".SH %s\n", strings.ToUpper(inline(strings.TrimLeft(l, "# "))))
			para = false
		case strings.HasPrefix(l, "|"):
			cells := tableRow(l)
			if tableRule.MatchString(l) || (i+1 < len(lines) && tableRule.MatchString(lines[i+1])) {
				continue // the header row and the rule under it
			}
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", inline(cells[0]), inline(strings.Join(cells[1:], "; ")))
			para = false
		case strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* "):
			fmt.Fprintf(&b, ".IP \\(bu 2\n%s\n", inline(l[2:]))
			para = true
		case para:
			b.WriteString(inline(strings.TrimSpace(l)) + "\n")
		default:
			fmt.Fprintf(&b, ".PP\n%s\n", inline(strings.TrimSpace(l)))
			para = true
		}
	}
	return Page{File: name + "." + section, Text: b.Bytes()}
}

var (
	tableRule = regexp.MustCompile(`^\|[\s:|-]+\|$`)
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	boldSpan  = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	linkSpan  = regexp.MustCompile(`\[([^\]]+)\]\(([^)]+)\)`)
)

// tableRow is a table line's cells, trimmed.
func tableRow(l string) []string {
	cells := strings.Split(strings.Trim(l, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// inline escapes a line for roff and turns code and bold spans bold, and a
// link into its text and address.
func inline(s string) string {
	s = escLine(s)
	s = codeSpan.ReplaceAllString(s, `\fB$1\fR`)
	s = boldSpan.ReplaceAllString(s, `\fB$1\fR`)
	return linkSpan.ReplaceAllString(s, `$1 <$2>`)
}
