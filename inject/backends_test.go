package inject

import (
	"slices"
	"testing"
)

// host is a machine for auto's conditions: env its environment, files the
// device nodes that exist.
func host(goos string, env map[string]string, files ...string) Host {
	return Host{GOOS: goos, Getenv: func(k string) string { return env[k] }, Exists: func(p string) bool { return slices.Contains(files, p) }}
}

// TestAutoChoosesByRank: --inject auto takes the best-ranked injector
// whose condition holds on the machine, and says why each one ranked
// before it did not apply (recv --help, "Injectors").
func TestAutoChoosesByRank(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     Host
		want  string
		unmet []string
	}{
		{"X display", host("linux", map[string]string{"DISPLAY": ":0"}, DefaultUinputPath), "x11", nil},
		{"uinput without X", host("linux", nil, DefaultUinputPath), "uinput", []string{"no DISPLAY"}},
		{"nothing: the log", host("linux", nil), "log", []string{"no DISPLAY", "no " + DefaultUinputPath}},
		{"macOS: macos, not x11 nor robotgo", host("darwin", map[string]string{"DISPLAY": ":0"}), "macos", nil},
		{"Windows: windows, not robotgo", host("windows", nil), "windows", nil},
		{"another Unix: no uinput, no x11 there", host("freebsd", map[string]string{"DISPLAY": ":0"}, DefaultUinputPath), "log", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, unmet, ok := Choose(tc.h)
			if !ok || b.Name != tc.want || !slices.Equal(unmet, tc.unmet) {
				t.Errorf("Choose = %q %q %v, want %q %q", b.Name, unmet, ok, tc.want, tc.unmet)
			}
		})
	}
}

// TestBackendsAreComplete: every injector has what the commands and the
// README take from it, and no two share a name.
func TestBackendsAreComplete(t *testing.T) {
	seen := map[string]bool{"auto": true}
	for _, b := range Backends {
		if seen[b.Name] {
			t.Errorf("injector %q listed twice (or named auto)", b.Name)
		}
		seen[b.Name] = true
		if b.Short == "" || b.Help == "" || b.Layout.Key == "" || b.Layout.Char == "" || b.Needs == "" || b.New == nil {
			t.Errorf("injector %q lacks its short or long help, its layout cells, its needs or its constructor", b.Name)
		}
		if c := b.Check; c != nil && (c.What == "" || c.Run == nil) {
			t.Errorf("injector %q: doctor's check lacks its name or its run", b.Name)
		}
		if c := b.Check; c != nil && c.Fix == "" {
			t.Errorf("injector %q: doctor's check has no fix", b.Name)
		}
	}
	// robotgo turns physical keys into the US layout's characters: chosen
	// by name only; windows and macos are auto's on their systems.
	if b, _ := Lookup("robotgo"); b.Auto != nil {
		t.Error("robotgo has an auto rank: it must be named to be used")
	}
	if _, _, ok := Choose(host("plan9", nil)); !ok {
		t.Error("auto finds nothing on a bare machine: one injector must apply everywhere")
	}
}
