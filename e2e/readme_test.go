//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// shellBlock is one ```sh, ```bash, ```shell or ```console block of a
// Markdown text.
type shellBlock struct {
	line   int      // of the opening fence, from 1
	lang   string   // sh, bash, shell or console
	text   string   // as written, dedented to the fence
	script string   // what bash runs: the text, or a console block's "$ " lines
	notRun string   // the reason given by a <!-- not run: REASON --> just before it
	needs  []string // the tools named by a <!-- needs: TOOL... --> just before it
}

var (
	fenceRE  = regexp.MustCompile("^( *)```\\s*(\\w*)")
	notRunRE = regexp.MustCompile(`^\s*<!-- not run: (.*?) -->\s*$`)
	needsRE  = regexp.MustCompile(`^\s*<!-- needs: (.*?) -->\s*$`)
)

// shellBlocks finds the shell blocks of a Markdown text. A "not run"
// comment must stand on the line just before a shell block and give a
// reason: one anywhere else, or an unclosed fence, is an error, so that a
// block cannot leave the test unnoticed. So must a "needs" comment, which
// names the programs a block runs beyond keyrelay and bash (Xvfb).
func shellBlocks(markdown string) ([]shellBlock, error) {
	lines := strings.Split(markdown, "\n")
	var blocks []shellBlock
	for i := 0; i < len(lines); i++ {
		if m := needsRE.FindStringSubmatch(lines[i]); m != nil {
			if i+1 >= len(lines) || fenceRE.FindStringSubmatch(lines[i+1]) == nil || !isShell(fenceRE.FindStringSubmatch(lines[i+1])[2]) || len(strings.Fields(m[1])) == 0 {
				return nil, fmt.Errorf("line %d: a <!-- needs: TOOL... --> comment must name programs and stand just before a ```sh, ```bash or ```console block", i+1)
			}
			continue
		}
		if m := notRunRE.FindStringSubmatch(lines[i]); m != nil {
			f := []string(nil)
			if i+1 < len(lines) {
				f = fenceRE.FindStringSubmatch(lines[i+1])
			}
			if f == nil || !isShell(f[2]) || strings.TrimSpace(m[1]) == "" {
				return nil, fmt.Errorf("line %d: a <!-- not run: REASON --> comment must give a reason and stand just before a ```sh, ```bash or ```console block", i+1)
			}
			continue
		}
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, open := m[1], i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the ``` block is not closed", open+1)
		}
		if !isShell(m[2]) {
			continue
		}
		b := shellBlock{line: open + 1, lang: m[2], text: strings.Join(body, "\n")}
		b.script = b.text
		if b.lang == "console" {
			var cmds []string
			for _, l := range body {
				if c, ok := strings.CutPrefix(l, "$ "); ok {
					cmds = append(cmds, c)
				}
			}
			b.script = strings.Join(cmds, "\n")
		}
		if open > 0 {
			if n := notRunRE.FindStringSubmatch(lines[open-1]); n != nil {
				b.notRun = n[1]
			}
			if n := needsRE.FindStringSubmatch(lines[open-1]); n != nil {
				b.needs = strings.Fields(n[1])
			}
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func isShell(lang string) bool {
	switch lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// TestShellBlocks: the README's shell blocks are found, with their lines,
// languages and "not run" reasons; a misplaced or empty "not run" comment
// and an unclosed fence are errors.
func TestShellBlocks(t *testing.T) {
	t.Parallel()
	md := strings.Join([]string{
		"# x", //  1
		"```sh",
		"keyrelay version",
		"```",
		"<!-- not run: two machines -->", //  5
		"```bash",
		"ssh other keyrelay recv",
		"```",
		"- a list item:",
		"", // 10
		"  ```console",
		"  $ keyrelay keys | head -1",
		"  Escape",
		"  ```",
		"```toml", // 15
		"[send]",
		"```",
		"```",
		"not a shell block",
		"```", // 20
		"<!-- needs: Xvfb xdotool -->",
		"```sh",
		"Xvfb &",
		"```",
	}, "\n")
	got, err := shellBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []shellBlock{
		{line: 2, lang: "sh", text: "keyrelay version", script: "keyrelay version"},
		{line: 6, lang: "bash", text: "ssh other keyrelay recv", script: "ssh other keyrelay recv", notRun: "two machines"},
		{line: 11, lang: "console", text: "$ keyrelay keys | head -1\nEscape", script: "keyrelay keys | head -1"},
		{line: 22, lang: "sh", text: "Xvfb &", script: "Xvfb &", needs: []string{"Xvfb", "xdotool"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shellBlocks =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []string{
		"<!-- not run: a reason -->\n\n```sh\nx\n```", // not just before
		"<!-- not run: a reason -->\n```toml\nx\n```", // not a shell block
		"<!-- not run:  -->\n```sh\nx\n```",           // no reason
		"```sh\nkeyrelay version\n",                   // not closed
		"<!-- needs:  -->\n```sh\nx\n```",             // names nothing
		"<!-- needs: Xvfb -->\n```toml\nx\n```",       // not a shell block
	} {
		if _, err := shellBlocks(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// docFiles are the Markdown files a reader of the README is led through,
// relative to the repository root: README.md, then docs/*.md in name order.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md: the README's \"where the rest lives\" points there")
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(d, "../")))
	}
	slices.Sort(files[1:])
	return files
}

// TestREADMEShellExamples (the README's and every --help example run as
// written): every ```sh, ```bash or ```console block of
// README.md and of docs/*.md runs in bash -e, as TestHelpExamples runs
// --help's examples (an empty directory as HOME, no KEYRELAY_* settings,
// the built keyrelay on PATH, and as bin/keyrelay when a block names that
// path), and exits 0. Only a block marked <!-- not run: REASON --> just
// before it (two machines, apt-get, a synopsis) is left out, so a new
// block runs unless someone says why it cannot. A block marked <!-- needs:
// TOOL... --> (the CI recipe: Xvfb, xterm, xdotool) is skipped where a tool
// is missing, except in CI, where .ci/run installs them and a skip would
// hide that. A block that writes recv.log must leave it ending in recv's
// summary.
func TestREADMEShellExamples(t *testing.T) {
	holdFixedPorts(t) // the examples listen on 7575, 17575 and 17576
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := shellBlocks(string(text))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ran := 0
		for _, b := range blocks {
			where := fmt.Sprintf("%s:%d", file, b.line)
			if b.notRun != "" {
				t.Logf("%s: not run: %s", where, b.notRun)
				continue
			}
			ran++
			t.Run(where, func(t *testing.T) { runShellBlock(t, where, b) })
		}
		if file == "README.md" && ran == 0 {
			t.Errorf("README.md has %d shell blocks and none runs: the examples go untested", len(blocks))
		}
	}
}

// runShellBlock runs one shell block as TestREADMEShellExamples says.
func runShellBlock(t *testing.T, where string, b shellBlock) {
	for _, tool := range b.needs {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing in CI: .ci/run must install it (make deps)", tool)
			}
			t.Skipf("needs %s (make deps installs it)", tool)
		}
	}
	dir := t.TempDir()
	if strings.Contains(b.script, "bin/keyrelay") {
		if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(bin, filepath.Join(dir, "bin", "keyrelay")); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := runBash(dir, b.script); err != nil {
		t.Errorf("%s: the ```%s block failed (%v); fix it, or mark it <!-- not run: REASON --> if it cannot run on one machine:\n%s\noutput:\n%s", where, b.lang, err, b.text, out)
	}
	// A block that logs its receiver (the CI recipe's recv.log) stops it
	// as a passing job should: the log ends with recv's summary, not with
	// its display gone from under it.
	if log, err := os.ReadFile(filepath.Join(dir, "recv.log")); err == nil {
		lines := strings.Split(strings.TrimSpace(string(log)), "\n")
		last := lines[len(lines)-1]
		if strings.Contains(string(log), "went away") || !strings.HasPrefix(last, "keyrelay recv: ") || !strings.Contains(last, " packets (") {
			t.Errorf("%s: recv.log does not end with recv's summary (a clean stop):\n%s", where, log)
		}
	}
}

// maxREADME is the README's size limit in bytes: a front door (what
// keyrelay is, installing, pairing, the first relay, the config file,
// several machines, CI, where the rest lives), with the reference in the
// man pages and docs/ (issue "A newcomer finds the way": at most 20 KB).
const maxREADME = 20_000

// TestREADMEIsAFrontDoor: README.md stays at most maxREADME bytes.
func TestREADMEIsAFrontDoor(t *testing.T) {
	t.Parallel()
	fi, err := os.Stat("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxREADME {
		t.Errorf("README.md is %d bytes, over %d: move the reference to docs/ (one file per topic) or the man pages, and link it from \"Where the rest lives\"", fi.Size(), maxREADME)
	}
}

var (
	mdLinkRE     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	headingRE    = regexp.MustCompile(`^(#{1,6}) +(.*?) *#*$`)
	mdInlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
)

// mdProse is text with its fenced blocks blanked and its code spans
// dropped, line for line: where links and headings are.
func mdProse(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trim := strings.TrimSpace(l)
		switch {
		case fence != "":
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trim, "```"), strings.HasPrefix(trim, "~~~"):
			fence = trim[:3]
			lines[i] = ""
		}
	}
	return lines
}

// mdAnchors are the anchors GitHub gives the headings of a Markdown text:
// the heading's text as rendered (code spans' text kept, link targets
// and emphasis dropped), lower case, every character but letters, digits,
// '-' and '_' dropped, spaces as '-'; a repeated anchor gets -1, -2, ...
func mdAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range mdProse(text) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		h := mdInlineLink.ReplaceAllString(m[2], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// TestDocLinks: every relative link of the README, docs/*.md and the
// other Markdown files of the repository names a file that exists and,
// with a #fragment into Markdown, a heading there (GitHub's anchor of it),
// so that "where the rest lives" leads somewhere. Links into the web are
// not followed.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	files := docFiles(t)
	for _, f := range []string{"DESIGN.md", "PROTOCOL.md", "BENCHMARKS.md", "capture/SCRIPT_FORMAT.md", "contrib/launchd/README.md"} {
		if _, err := os.Stat(filepath.Join("..", f)); err == nil {
			files = append(files, f)
		}
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(file string) (map[string]bool, error) {
		if a, ok := anchorsOf[file]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			return nil, err
		}
		anchorsOf[file] = mdAnchors(string(text))
		return anchorsOf[file], nil
	}
	links := 0
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range mdProse(string(text)) {
			l = codeSpanRE.ReplaceAllString(l, "")
			for _, m := range mdLinkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d", file, i+1)
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s: link %q leads out of the repository", where, target)
						continue
					}
					if _, err := os.Stat(filepath.Join("..", dest)); err != nil {
						t.Errorf("%s: link %q: no file %s", where, target, dest)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchors(dest)
				if err != nil {
					t.Errorf("%s: link %q: %v", where, target, err)
					continue
				}
				if !a[frag] {
					t.Errorf("%s: link %q: %s has no heading whose anchor is #%s", where, target, dest, frag)
				}
			}
		}
	}
	if links == 0 {
		t.Error("found no relative links: the link pattern no longer matches")
	}
	t.Logf("%d relative links in %d files", links, len(files))
}

// TestMDAnchors: headings get GitHub's anchors (github-slugger: lower case,
// punctuation and symbols dropped, each space a '-', repeats numbered).
func TestMDAnchors(t *testing.T) {
	t.Parallel()
	got := mdAnchors("# keyrelay\n## On a Mac: `--input macos` and `--inject macos`\n" +
		"```sh\n# not a heading\n```\n## Try it (Debian/Ubuntu, Go ≥ 1.26)\n### send\n## send\n" +
		"## [Keys](keys.md) and layouts\n## KEYRELAY_SEND_TO, Grüße\n")
	want := []string{"keyrelay", "on-a-mac---input-macos-and---inject-macos", "try-it-debianubuntu-go--126",
		"send", "send-1", "keys-and-layouts", "keyrelay_send_to-grüße"}
	if !slices.Equal(slices.Sorted(func(yield func(string) bool) {
		for a := range got {
			if !yield(a) {
				return
			}
		}
	}), slices.Sorted(slices.Values(want))) {
		t.Errorf("mdAnchors = %v, want %v", got, want)
	}
}

// TestMakeDemo: the README's first command on a fresh machine, make demo
// (make build, then scripts/demo.sh), relays the demo script over a clean
// link and again at 30 % loss, and ends saying both delivered the same key
// events in the same order, as the README quotes it. The built binary
// stands in for make build's.
func TestMakeDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, "bash", "scripts/demo.sh")
	demo.Dir = ".."
	demo.Env = append(append(os.Environ(), runtimeEnv(t)...), "BIN="+bin, "HOME="+t.TempDir(), noExitSleep)
	demo.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	demo.Cancel = func() error { return syscall.Kill(-demo.Process.Pid, syscall.SIGKILL) }
	demo.WaitDelay = 2 * time.Second
	out, err := demo.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	m := regexp.MustCompile(`^demo: clean link delivered (\d+) key events, 30 % loss delivered (\d+): identical, in the same order$`).FindStringSubmatch(last)
	if err != nil || m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("scripts/demo.sh: %v; last line %q, want the README's \"demo: clean link delivered N key events, 30 %% loss delivered N: identical, in the same order\"\n%s", err, last, out)
	}
}
