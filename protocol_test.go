package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxProtocolBytes is the size PROTOCOL.md stays within: a specification
// (messages, state machines, the threat table, the rules a second
// implementation needs); measurements belong in BENCHMARKS.md and history in
// PROTOCOL.md's changes section.
const maxProtocolBytes = 50_000

var (
	// A numbered heading: "## 8. Security", "### 8.3 Transport: ...".
	sectionHeadingRE = regexp.MustCompile(`(?m)^#{2,4} (\d+(?:\.\d+)?)\.? `)
	// A line break and what continues a comment or a Markdown quote on the
	// next line, so a citation split over two lines reads as one.
	lineBreakRE = regexp.MustCompile(`\s*\n\s*(?:(?://|#|\*|>)\s*)?`)
	// "PROTOCOL.md §8.4", "PROTOCOL.md's §3.2", with what follows it:
	// "PROTOCOL.md §7.1, §8.2 and §8.4".
	citationRE = regexp.MustCompile(`PROTOCOL\.md(?:'s)?\)?:? §\d+(?:\.\d+)?(?:(?:,| and| or|;)? §\d+(?:\.\d+)?)*`)
	sectionRE  = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
)

// protocolSections is the set of section numbers PROTOCOL.md has headings
// for.
func protocolSections(t *testing.T, doc string) map[string]bool {
	t.Helper()
	have := map[string]bool{}
	for _, m := range sectionHeadingRE.FindAllStringSubmatch(doc, -1) {
		if have[m[1]] {
			t.Errorf("PROTOCOL.md has two headings numbered %s", m[1])
		}
		have[m[1]] = true
	}
	if len(have) < 10 {
		t.Fatalf("PROTOCOL.md has %d numbered headings, want its sections 1 to 10 at least", len(have))
	}
	return have
}

// TestProtocolCitationsResolve: every "PROTOCOL.md §N" or "§N.M" in the
// repository (code, tests, comments, documents; a citation may run over a
// comment's line break, or list several sections) names a heading
// PROTOCOL.md has, and so does every "§" reference inside PROTOCOL.md.
// Sections are cited by number from hundreds of places, so a section may
// shrink but is never renumbered.
func TestProtocolCitationsResolve(t *testing.T) {
	b, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	have := protocolSections(t, doc)

	cited := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > 4<<20 {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(text, 0) >= 0 || !bytes.Contains(text, []byte("PROTOCOL.md")) {
			return nil
		}
		flat := lineBreakRE.ReplaceAllString(string(text), " ")
		for _, c := range citationRE.FindAllString(flat, -1) {
			for _, s := range sectionRE.FindAllStringSubmatch(c, -1) {
				cited++
				if !have[s[1]] {
					t.Errorf("%s cites %q: PROTOCOL.md has no section %s", path, c, s[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The repository cites PROTOCOL.md by section from hundreds of places:
	// finding few means the pattern broke, not that all is well.
	t.Logf("%d citations", cited)
	if cited < 200 {
		t.Errorf("found %d citations of PROTOCOL.md sections, want the repository's hundreds: is citationRE still right?", cited)
	}

	for _, m := range sectionRE.FindAllStringSubmatch(doc, -1) {
		if !have[m[1]] {
			t.Errorf("PROTOCOL.md refers to §%s, which it does not have", m[1])
		}
	}
}

// TestProtocolIsASpecification: PROTOCOL.md stays within maxProtocolBytes,
// and it and BENCHMARKS.md render as Markdown: fences closed, and every
// table row has its header's number of cells.
func TestProtocolIsASpecification(t *testing.T) {
	b, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxProtocolBytes {
		t.Errorf("PROTOCOL.md is %d bytes, more than %d: it is a specification; measurements go in BENCHMARKS.md, history in its changes section", len(b), maxProtocolBytes)
	}
	for _, name := range []string{"PROTOCOL.md", "BENCHMARKS.md"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range markdownProblems(string(b)) {
			t.Errorf("%s: %s", name, problem)
		}
	}
}

var tableSeparatorRE = regexp.MustCompile(`^\|(?:\s*:?-+:?\s*\|)+\s*$`)

// markdownProblems finds what would render wrong: an unclosed code fence, a
// table row whose cell count differs from its header's.
func markdownProblems(md string) []string {
	var problems []string
	lines := strings.Split(md, "\n")
	fence := 0 // line of the open fence, from 1; 0: none open
	cells := func(row string) int {
		row = strings.TrimSpace(row)
		row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
		return len(strings.Split(strings.ReplaceAll(row, `\|`, ""), "|"))
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if fence == 0 {
				fence = i + 1
			} else {
				fence = 0
			}
			continue
		}
		if fence != 0 || i+1 >= len(lines) || !strings.HasPrefix(line, "|") || !tableSeparatorRE.MatchString(lines[i+1]) {
			continue
		}
		want := cells(line)
		if got := cells(lines[i+1]); got != want {
			problems = append(problems, fmt.Sprintf("line %d: the separator has %d cells, the header %d", i+2, got, want))
		}
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			if got := cells(lines[j]); got != want {
				problems = append(problems, fmt.Sprintf("line %d: a table row of %d cells under a header of %d", j+1, got, want))
			}
		}
		i = j - 1
	}
	if fence != 0 {
		problems = append(problems, fmt.Sprintf("line %d: a code fence never closed", fence))
	}
	return problems
}
