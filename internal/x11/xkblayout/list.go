package xkblayout

import (
	"bufio"
	"io"
	"strings"
)

// ListFile is XKB's list of layouts and variants with their
// descriptions, which ParseList reads.
const ListFile = Dir + "/rules/evdev.lst"

// Entry is a layout or variant as recv --layout names it, with its
// description: {"de(nodeadkeys)", "German (no dead keys)"}.
type Entry struct{ Name, Desc string }

// ParseList reads the layouts and variants of an XKB rules list
// (evdev.lst): its "! layout" lines ("  de  German") and "! variant" lines
// ("  nodeadkeys  de: German (no dead keys)"), for shell completion. Lines
// it cannot read are skipped.
func ParseList(r io.Reader) ([]Entry, error) {
	var out []Entry
	section := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if s, ok := strings.CutPrefix(line, "!"); ok {
			section = strings.TrimSpace(s)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, desc := fields[0], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fields[0]))
		switch section {
		case "layout":
		case "variant":
			layout, d, ok := strings.Cut(desc, ":")
			if !ok || strings.ContainsAny(layout, " \t") {
				continue
			}
			name, desc = layout+"("+name+")", strings.TrimSpace(d)
		default:
			continue
		}
		if CheckName(name) != nil {
			continue
		}
		out = append(out, Entry{name, desc})
	}
	return out, sc.Err()
}
