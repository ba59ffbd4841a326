// Command testsum reads `go test -json` on stdin and prints it as go test
// would, then a summary naming every skipped test with its reason (for
// example "needs tmux"), so a run on a machine without some tool says what
// it did not test. make unit and make e2e pipe through it.
//
//	go test -json ./... 2>&1 | go run ./internal/testsum [-v]
//
// Without -v it prints what go test prints without -v: each package's
// result line and the output of failing tests. With -v it prints every
// output line except the === RUN/PAUSE/CONT/NAME markers. Lines that are
// not JSON (a build error on stderr) are printed as they come. It exits 1
// if any test or package failed, else 0; the Makefile also sets pipefail,
// so go test's own status counts too.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// event is test2json's record (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ pkg, test, reason string }

func main() {
	verbose := flag.Bool("v", false, "print every test's output, as go test -v")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()

	// Output of each running test (package\x00test), kept until it ends:
	// printed if it fails (without -v), searched for the reason if skipped.
	pending := map[string][]string{}
	var skips []skip
	failed := false
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		line := in.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(out, line)
			continue
		}
		id := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output", "build-output":
			if isMarker(e.Output) {
				continue
			}
			if *verbose || e.Test == "" {
				if *verbose || !isNoise(e.Output) {
					fmt.Fprint(out, e.Output)
				}
			}
			if e.Test != "" {
				pending[id] = append(pending[id], e.Output)
			}
		case "fail", "build-fail":
			failed = true
			if !*verbose && e.Test != "" {
				for _, o := range pending[id] {
					fmt.Fprint(out, o)
				}
			}
			delete(pending, id)
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{e.Package, e.Test, reason(pending[id])})
			}
			delete(pending, id)
		case "pass":
			delete(pending, id)
		}
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(out, "testsum:", err)
		failed = true
	}
	if len(skips) > 0 {
		sort.SliceStable(skips, func(i, j int) bool {
			if skips[i].pkg != skips[j].pkg {
				return skips[i].pkg < skips[j].pkg
			}
			return skips[i].test < skips[j].test
		})
		fmt.Fprintf(out, "\nSKIPPED: %d tests, each with its reason (make deps installs the tools they need):\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(out, "  %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/keyrelay/keyrelay/"), s.test, s.reason)
		}
	}
	if failed {
		fmt.Fprintln(out, "FAILED (the failing tests' output is above)")
		out.Flush()
		os.Exit(1)
	}
}

// isMarker reports go test -v's progress lines, which say nothing the
// results do not.
func isMarker(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isNoise reports package-level lines that go test without -v does not
// print (json implies -v): the bare PASS before a package's ok line.
func isNoise(s string) bool { return s == "PASS\n" || s == "testing: warning: no tests to run\n" }

// reason is the last line a skipped test logged before its --- SKIP line
// (t.Skip's message), without the file:line prefix.
func reason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		l := strings.TrimSpace(out[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		if f, rest, ok := strings.Cut(l, ": "); ok && strings.Contains(f, ".go:") {
			return rest
		}
		return l
	}
	return "(no reason given)"
}
