package main

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// The layers of keyrelay's packages (DESIGN.md, Packages), lowest first.
// A package's layer decides what it may import; TestLayers fails on any
// import that runs up the stack.
const (
	// layerLow: below the protocol: sockets and the poller (internal/netio),
	// a lossy network (netsim: keyrelay impair's and the tests'), name
	// suggestions (internal/spell). They import only each other.
	layerLow = iota
	// layerPlatform: bindings to one platform (internal/x11, linux,
	// wayland, usb, darwin, windows): their own platform's packages, keys
	// and the low layer only.
	layerPlatform
	// layerCore: the protocol core, from the key and the queue to the
	// sender and the receiver; it knows no source, injector, platform,
	// command or test support.
	layerCore
	// layerAbove: sources, routing, injectors, the commands and what they
	// are made of. Anything but tools.
	layerAbove
	// layerTest: test support (internal/testutil, control/controltest),
	// imported by tests only.
	layerTest
	// layerTool: programs of the build (man pages, archives, reports),
	// imported by nothing.
	layerTool
)

const module = "github.com/keyrelay/keyrelay"

// corePackages are the protocol core (DESIGN.md's data path from the
// balanced queue to the receiver, with the types they share).
var corePackages = []string{
	"eventqueue", "wire", "handshake", "replay", "identity", "peers", "pair",
	"transport", "sender", "receiver", "keys", "sink", "secret",
}

// platforms are the platform groups under internal/.
var platforms = []string{"x11", "linux", "wayland", "usb", "darwin", "windows"}

// layerOf is the layer of a package (its path within the module) and,
// for a platform binding, its platform.
func layerOf(pkg string) (layer int, platform string) {
	switch {
	case slices.Contains(corePackages, pkg) || strings.HasPrefix(pkg, "keys/internal/"):
		return layerCore, ""
	case strings.HasPrefix(pkg, "internal/netio/") || pkg == "internal/spell" || pkg == "netsim":
		return layerLow, ""
	case strings.HasPrefix(pkg, "internal/testutil/") || strings.HasSuffix(path.Base(pkg), "test") || pkg == "e2e":
		// Test support: internal/testutil, a ...test package beside what
		// it fakes (control/controltest), and the test-only e2e, vmtest.
		return layerTest, ""
	case strings.HasPrefix(pkg, "internal/tools/") || pkg == "cmd/mangen" || pkg == "":
		return layerTool, ""
	}
	for _, p := range platforms {
		if pkg == "internal/"+p || strings.HasPrefix(pkg, "internal/"+p+"/") {
			return layerPlatform, p
		}
	}
	return layerAbove, ""
}

// listed is one package as go list describes it for one system.
type listed struct {
	pkg     string   // path within the module ("" for the module's root)
	imports []string // its non-test imports within the module
	tests   []string // its tests' imports within the module
}

// list lists every package of the module as built for goos, with its
// imports within the module.
func list(t *testing.T, goos string) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}|{{if .Error}}{{.Error}}{{end}}`, "./...")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list for %s: %v\n%s", goos, err, stderr.Bytes())
	}
	var ps []listed
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("go list for %s: unexpected line %q", goos, line)
		}
		if f[3] != "" {
			t.Fatalf("go list for %s: %s: %s", goos, f[0], f[3])
		}
		ps = append(ps, listed{pkg: rel(f[0]), imports: ours(f[1]), tests: ours(f[2])})
	}
	return ps
}

// rel is an import path within the module, relative to it; "-" for one
// outside it.
func rel(path string) string {
	if path == module {
		return ""
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return "-"
}

// ours is the paths of a space-separated import list within the module,
// relative to it.
func ours(imports string) []string {
	var r []string
	for p := range strings.FieldsSeq(imports) {
		if q := rel(p); q != "-" {
			r = append(r, q)
		}
	}
	return r
}

// importBreaks says why pkg may not import dep in its non-test code, or "".
func importBreaks(pkg, dep string) string {
	pl, pp := layerOf(pkg)
	dl, dp := layerOf(dep)
	switch {
	case dl == layerTool:
		return "a tool is imported by nothing"
	case dep == "cmd" && pkg != "" && pkg != "cmd/mangen":
		return "only main (and cmd/mangen, which renders its help) imports cmd"
	case dl == layerTest && pl != layerTest:
		return "test support is for tests only"
	case pl == layerLow && dl != layerLow:
		return "the low layer (internal/netio, netsim, internal/spell) imports only itself"
	case pl == layerPlatform && !(dl == layerLow || dep == "keys" || dl == layerPlatform && dp == pp):
		return "a platform binding imports its own platform's packages, keys and the low layer only"
	case pl == layerCore && dl != layerCore && dl != layerLow:
		return "the protocol core imports only the core and the low layer"
	}
	return ""
}

// TestLayers checks the layers of DESIGN.md (Packages) on the imports of
// every package, as built for Linux, Windows and macOS: the protocol core
// imports no source, routing, injector, platform binding, command or test
// support; platform bindings import no other platform's and nothing above
// them; test support is imported by tests only; nothing but main imports
// cmd. And the two ends are tested apart: the sender's tests do not build
// on the receiver, nor the receiver's on the sender (the relay's tests,
// which run both, are internal/testutil/relaytest's).
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list three times")
	}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		ps := list(t, goos)
		imports := map[string][]string{}
		for _, p := range ps {
			imports[p.pkg] = p.imports
		}
		for _, p := range ps {
			for _, dep := range p.imports {
				if why := importBreaks(p.pkg, dep); why != "" {
					t.Errorf("%s: %s imports %s: %s", goos, show(p.pkg), dep, why)
				}
			}
			pl, _ := layerOf(p.pkg)
			if pl != layerCore {
				continue
			}
			for _, dep := range closure(imports, p.tests) {
				dl, _ := layerOf(dep)
				switch {
				case p.pkg == "sender" && dep == "receiver", p.pkg == "receiver" && dep == "sender":
					t.Errorf("%s: %s's tests build on %s: the two ends are tested together in internal/testutil/relaytest", goos, p.pkg, dep)
				case dep == "internal/testutil/relaytest":
					t.Errorf("%s: %s's tests build on %s, which runs both ends: such a test belongs there", goos, p.pkg, dep)
				case dl != layerCore && dl != layerLow && dl != layerTest:
					t.Errorf("%s: %s's tests build on %s: the core's tests build on the core and test support only", goos, p.pkg, dep)
				}
			}
		}
	}
}

// TestLayersCatch checks that importBreaks refuses what TestLayers is for:
// a check that cannot fail would pass an import running up as well.
func TestLayersCatch(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"sender", "internal/charmode", false},
		{"sender", "capture", false},
		{"receiver", "inject", false},
		{"sender", "routing", false},
		{"receiver", "internal/x11/keysym", false},
		{"sender", "internal/testutil/fake", false},
		{"internal/x11/xkblayout", "internal/wayland/wlwire", false},
		{"internal/usb/hidkbd", "sender", false},
		{"internal/netio/dgram", "keys", false},
		{"internal/charmode", "cmd", false},
		{"capture", "internal/tools/report", false},
		{"inject", "internal/testutil/xvfbtest", false},
		{"sender", "internal/netio/dgram", true},
		{"receiver", "sink", true},
		{"internal/x11/xkblayout", "internal/x11/keysym", true},
		{"internal/usb/gadget", "internal/usb/hidkbd", true},
		{"internal/darwin", "keys", true},
		{"routing", "sender", true},
		{"inject", "internal/x11/xrecord", true},
		{"", "cmd", true},
		{"cmd/mangen", "cmd", true},
		{"internal/manpage", "cmd", false},
		{"internal/testutil/relaytest", "receiver", true},
		{"cmd", "control/controltest", false},
	} {
		why := importBreaks(c.pkg, c.dep)
		if (why == "") != c.ok {
			t.Errorf("%s importing %s: allowed %v, want %v (%s)", show(c.pkg), c.dep, why == "", c.ok, why)
		}
	}
}

// closure is pkgs and every package they import, transitively, in
// imports (a package's imports within the module); sorted, without
// repeats.
func closure(imports map[string][]string, pkgs []string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, q := range imports[p] {
			visit(q)
		}
	}
	for _, p := range pkgs {
		visit(p)
	}
	var r []string
	for p := range seen {
		r = append(r, p)
	}
	slices.Sort(r)
	return r
}

// show names a package for a message ("main" for the module's root).
func show(pkg string) string {
	if pkg == "" {
		return "main"
	}
	return pkg
}
