package cmd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/routing"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the generated backend tables of README.md and docs/ from inject.Backends and capture.Sources (make readme)")

// osNames are the operating systems as the README and docs/ name them.
var osNames = map[string]string{"linux": "Linux", "darwin": "macOS", "windows": "Windows"}

func describeGOOS(goos []string) string {
	if goos == nil {
		return "any"
	}
	var out []string
	for _, g := range goos {
		out = append(out, osNames[g])
	}
	return strings.Join(out, ", ")
}

// words lists the names whose condition holds, "—" for none.
func words(pairs ...any) string {
	var out []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i].(bool) {
			out = append(out, pairs[i+1].(string))
		}
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// docTable is a table generated from the backend lists: the name of the
// block that holds it, the file (from the repository root) the block is in,
// and the table.
type docTable struct{ name, file, text string }

// docOSes are the systems the README's status lines cover, in its order.
var docOSes = []string{"linux", "windows", "darwin"}

// runsOn says whether a backend listed for goos (nil: every system) runs on sys.
func runsOn(goos []string, sys string) bool { return goos == nil || slices.Contains(goos, sys) }

// readmeTables renders the generated tables of the README and docs/: the
// README's status line per system, docs/keys.md's table of what each
// injector does with layouts and docs/platforms.md's table of every source
// and injector.
func readmeTables() []docTable {
	var status strings.Builder
	for _, sys := range docOSes {
		var srcs, injs, auto []string
		for _, b := range capture.Sources {
			if runsOn(b.GOOS, sys) {
				srcs = append(srcs, "`"+b.Name+"`")
			}
		}
		for _, b := range inject.Backends {
			if runsOn(b.GOOS, sys) {
				injs = append(injs, "`"+b.Name+"`")
			}
		}
		for _, b := range inject.Ranked(sys) {
			auto = append(auto, "`"+b.Name+"`")
		}
		if n := len(auto); n > 1 {
			auto[n-1] = "then " + auto[n-1]
		}
		fmt.Fprintf(&status, "- **%s**: `send` reads %s; `recv` types into %s (`--inject auto` tries %s)\n",
			osNames[sys], strings.Join(srcs, ", "), strings.Join(injs, ", "), strings.Join(auto, ", "))
	}
	var layouts strings.Builder
	layouts.WriteString("| `--inject` | a physical key | a character |\n|---|---|---|\n")
	for _, b := range inject.Backends {
		fmt.Fprintf(&layouts, "| `%s` | %s | %s |\n", b.Name, b.Layout.Key, b.Layout.Char)
	}
	var all strings.Builder
	all.WriteString("| backend | runs on | sends or types | can | needs | `auto` picks it | doctor checks |\n|---|---|---|---|---|---|---|\n")
	for _, b := range capture.Sources {
		c := b.Caps
		can := words(c.Releases, "key releases", c.Characters, "characters", c.Locks, "lock state", c.Grab, "grab and hotkey", c.Repeat, "relays auto-repeat", c.Devices, "`--device`")
		check := "—"
		if b.Check != nil {
			check = strings.TrimSpace(b.Check.What + " " + b.Check.When)
		}
		name := "`--input " + b.Name + "`"
		for _, a := range b.Aliases {
			name += " (`" + a + "`)"
		}
		fmt.Fprintf(&all, "| %s | %s | %s | %s | %s | — | %s |\n", name, describeGOOS(b.GOOS), b.Layout, can, b.Needs, check)
	}
	for _, b := range inject.Backends {
		c := b.Caps
		can := words(c.Characters, "characters", b.NamedLayout != nil, "characters with `--layout`", c.Locks, "lock state", c.Repeat, "key repeat", b.Device != nil, "`--device`")
		auto, check := "never", "—"
		if a := b.Auto; a != nil {
			n := slices.IndexFunc(inject.Ranked(""), func(r inject.Backend) bool { return r.Name == b.Name }) + 1
			auto = fmt.Sprintf("%d. %s", n, a.Desc)
			if a.When == nil && a.GOOS == nil {
				auto = fmt.Sprintf("%d. when none before it applies", n)
			}
		}
		if b.Check != nil {
			check = b.Check.What
		}
		fmt.Fprintf(&all, "| `--inject %s` | %s | as [Keys and layouts](keys.md#keys-and-layouts) says | %s | %s | %s | %s |\n", b.Name, describeGOOS(b.GOOS), can, b.Needs, auto, check)
	}
	return []docTable{
		{"platforms", "README.md", status.String()},
		{"inject-layouts", "docs/keys.md", layouts.String()},
		{"backends", "docs/platforms.md", all.String()},
	}
}

// TestREADMEBackendTables: the generated tables of the README and docs/
// (the status line per system, the injectors' layouts, every source and
// injector) are what their lists (capture.Sources, inject.Backends) say,
// so that a backend described once is described the same everywhere; it
// fails when they drift. make readme (-update-readme) rewrites them.
func TestREADMEBackendTables(t *testing.T) {
	texts := map[string]string{} // file -> its text, as rewritten so far
	var files []string
	for _, tab := range readmeTables() {
		text, ok := texts[tab.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", tab.file))
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
			files = append(files, tab.file)
		}
		begin := "<!-- begin generated: " + tab.name + " (make readme; edit inject/backends.go or capture/backends.go) -->\n"
		end := "<!-- end generated: " + tab.name + " -->"
		i := strings.Index(text, begin)
		j := strings.Index(text, end)
		if i < 0 || j < i {
			t.Errorf("%s has no block %q...%q", tab.file, begin, end)
			texts[tab.file] = text
			continue
		}
		if got := text[i+len(begin) : j]; got != tab.text {
			if !*updateREADME {
				t.Errorf("%s's %s table differs from what the backend lists render (run make readme):\n got:\n%s\nwant:\n%s", tab.file, tab.name, got, tab.text)
			}
			text = text[:i+len(begin)] + tab.text + text[j:]
		}
		texts[tab.file] = text
	}
	if !*updateREADME {
		return
	}
	for _, f := range files {
		path := filepath.Join("..", f)
		if old, err := os.ReadFile(path); err == nil && string(old) == texts[f] {
			continue
		}
		if err := os.WriteFile(path, []byte(texts[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeSource plays nothing: a source for TestNewBackendIsOneEntry.
type fakeSource struct{}

func (fakeSource) Play(context.Context, func(keys.Key, bool) error) error { return nil }

// TestNewBackendIsOneEntry: a source and an injector added to the lists,
// and nothing else, appear in send's and recv's help, their flags'
// completion, doctor's checks and help (DESIGN.md, "Backends"); auto's
// choice of it: package relay's TestAutoChoosesANewInjector.
func TestNewBackendIsOneEntry(t *testing.T) {
	isolate(t)
	savedInj, savedSrc := inject.Backends, capture.Sources
	t.Cleanup(func() { inject.Backends, capture.Sources = savedInj, savedSrc })
	// What the commands said before the fakes: the fakes come last.
	injNames, srcNames := strings.Join(relay.InjectorNames(), "|"), capture.SourceNames(false)
	first := strings.TrimSpace(inject.Ranked("")[0].Name + " " + inject.Ranked("")[0].Auto.Desc)
	var grabbers []string // as send's errors name them
	for _, b := range capture.Sources {
		if b.Caps.Grab {
			grabbers = append(grabbers, "--input "+b.Name)
		}
	}
	inject.Backends = append(slices.Clone(savedInj), inject.Backend{
		Name: "fakekbd", Short: "a fake keyboard for tests", Help: "types into a fake keyboard that only this test sees",
		Layout: inject.Layout{Key: "the same key", Char: "that character"}, Needs: "nothing",
		Check: &inject.Check{What: "fake keyboard", Run: func(inject.Options) (string, error) { return "the fake keyboard answers", nil }, Fix: "none"},
		Auto: &inject.Auto{Rank: 1, When: func(h inject.Host) bool { return h.Getenv("KEYRELAY_TEST_FAKEKBD") != "" },
			Desc: "when $KEYRELAY_TEST_FAKEKBD is set", Unmet: "no KEYRELAY_TEST_FAKEKBD"},
		New: func(o inject.Options) (inject.Injector, error) { return &inject.Log{W: o.Out}, nil },
	})
	capture.Sources = append(slices.Clone(savedSrc), capture.SourceBackend{
		Name: "fakesrc", Short: "a fake keyboard to read", Help: "reads a fake keyboard that only this test has", Needs: "nothing",
		Check: &capture.SourceCheck{What: "fake source", Run: func(capture.SourceOptions) (string, error) { return "the fake source opens", nil }, Fix: "none"},
		New:   func(capture.SourceOptions) (capture.Source, error) { return fakeSource{}, nil },
	})

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"recv", "--help"}, []string{"where keys go: " + strings.ReplaceAll(injNames, "|", ", ") + ", fakekbd", "fakekbd a fake keyboard for tests"}},
		{[]string{"man", "recv"}, []string{"fakekbd types into a fake keyboard", "works here: fakekbd when $KEYRELAY_TEST_FAKEKBD is set, else " + first}},
		{[]string{"send", "--help"}, []string{"fakesrc a fake keyboard to read", spell.JoinOr(append(srcNames, "fakesrc"))}},
		{[]string{"man", "send"}, []string{"fakesrc reads a fake keyboard"}},
		{[]string{"man", "doctor"}, []string{"fake keyboard (--inject fakekbd)", "fake source (--input fakesrc)"}},
		{[]string{"__complete", "recv", "--inject", ""}, []string{"fakekbd\ta fake keyboard for tests"}},
		{[]string{"__complete", "send", "--input", ""}, []string{"fakesrc\ta fake keyboard to read"}},
		{[]string{"doctor", "--insecure", "--role", "both", "--inject", "fakekbd", "--input", "fakesrc", "--listen", "127.0.0.1:0"},
			[]string{"ok    fake keyboard (--inject fakekbd): the fake keyboard answers", "ok    fake source (--input fakesrc): the fake source opens"}},
	} {
		code, out, errs := run(tc.args...)
		if tc.args[0] == "man" {
			code, out, errs = 0, manDescription(tc.args[1]), ""
		}
		// Help is wrapped: words, not lines, are compared.
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range tc.want {
			if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%q (exit %d) does not say %q:\n%s%s", tc.args, code, w, out, errs)
			}
		}
	}

	// send takes the new source as any other: validated, made.
	o := &SendOptions{To: []string{"127.0.0.1:9"}, Input: "fakesrc", Feedback: true, Hotkey: capture.DefaultHotkey, LogFormat: "text",
		Queue: 16, Interval: 100e6, Timeout: 2e9, Outage: 5e9}
	if err := o.Check(); err != nil {
		t.Errorf("send --input fakesrc: %v", err)
	}
	o.Grab = true
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--grab needs "+spell.JoinOr(grabbers)+" (--input fakesrc has no keyboard to own)") {
		t.Errorf("send --input fakesrc --grab: %v, want --grab refused (it has no grab)", err)
	}
}

// manDescription is the description of the command name's man page
// (what manual gave it).
func manDescription(name string) string {
	for _, c := range NewRootCmd(IO{}).Commands() {
		if c.Name() == name {
			return c.Annotations[ManDescription]
		}
	}
	return ""
}

// TestEveryBackendInHelpAndCompletion: each real source and injector is
// in its command's help (its short line) and man page (its help), and its
// flag's completion, with the words its entry gives.
func TestEveryBackendInHelpAndCompletion(t *testing.T) {
	isolate(t)
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	_, recvHelp, _ := run("recv", "--help")
	_, sendHelp, _ := run("send", "--help")
	recvMan, sendMan := manDescription("recv"), manDescription("send")
	_, injComp, _ := run("__complete", "recv", "--inject", "")
	_, srcComp, _ := run("__complete", "send", "--input", "")
	for _, b := range inject.Backends {
		if !strings.Contains(flat(recvHelp), flat(b.Name+" "+b.Short)) {
			t.Errorf("recv --help lacks injector %s's short line", b.Name)
		}
		if !strings.Contains(flat(recvMan), flat(b.Name+" "+b.Help)) {
			t.Errorf("recv's man page lacks injector %s's help", b.Name)
		}
		if !strings.Contains(injComp, b.Name+"\t"+b.Short+"\n") {
			t.Errorf("--inject's completion lacks %s", b.Name)
		}
	}
	for _, b := range capture.Sources {
		named := strings.Contains(flat(sendHelp), " "+b.Name+" ") || strings.Contains(flat(sendHelp), " "+b.Name+", ")
		if !strings.Contains(flat(sendHelp), flat(b.Short)) || !named {
			t.Errorf("send --help lacks source %s's short line", b.Name)
		}
		if !strings.Contains(flat(sendMan), flat(b.Name+" "+b.Help)) {
			t.Errorf("send's man page lacks source %s's help", b.Name)
		}
		for _, n := range append([]string{b.Name}, b.Aliases...) {
			if !strings.Contains(srcComp, n+"\t") {
				t.Errorf("--input's completion lacks %s", n)
			}
		}
	}
}

// TestDoctorChecksBackendsOfThisSystem: doctor runs the checks of the
// injectors and sources that work on this system, and another system's
// only when named (then it fails, saying where it works); hidg's checks the
// device recv would open, [recv] device or KEYRELAY_RECV_DEVICE, never
// doctor's own --device, which is send's (README "keyrelay doctor").
func TestDoctorChecksBackendsOfThisSystem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lists' Linux backends are checked here")
	}
	missing := filepath.Join(t.TempDir(), "hidg7")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
		not  []string
	}{
		{"Linux: wayland and hidg checked, not windows nor macos", nil,
			[]string{"--inject", "x11"},
			[]string{"Wayland compositor with zwp_virtual_keyboard_v1 (--inject wayland)", "USB keyboard gadget's device (--inject hidg)"},
			[]string{"--inject windows", "--inject macos", "--input windows", "--input macos"}},
		{"hidg: recv's device, with the gadget's fix", map[string]string{"KEYRELAY_RECV_DEVICE": missing},
			[]string{"--inject", "hidg"},
			[]string{"FAIL  USB keyboard gadget's device (--inject hidg): USB keyboard gadget unavailable: no " + missing, "keyrelay gadget setup"}, nil},
		{"macos named on Linux", nil,
			[]string{"--inject", "macos"},
			[]string{"FAIL  macOS Accessibility permission (--inject macos)", "presses keys on a Mac"}, nil},
		{"wayland named without WAYLAND_DISPLAY", map[string]string{"WAYLAND_DISPLAY": ""},
			[]string{"--inject", "wayland"},
			[]string{"FAIL  Wayland compositor with zwp_virtual_keyboard_v1 (--inject wayland)", "WAYLAND_DISPLAY is not set"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, out, errs := run(append([]string{"doctor", "--insecure", "--role", "recv", "--listen", "127.0.0.1:0"}, tc.args...)...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("doctor %q does not say %q:\n%s%s", tc.args, w, out, errs)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("doctor %q says %q, another system's check:\n%s", tc.args, n, out)
				}
			}
		})
	}
}

// TestRecvLayoutFlag: --layout is taken by the injectors that declare it
// (inject.Backend.NamedLayout), refused with the others and when it names
// no layout, as usage errors (exit 2) that say what to write.
func TestRecvLayoutFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--inject", "x11", "--layout", "de"}, "--layout de is for injectors whose target's layout cannot be asked (--inject uinput or --inject hidg); --inject x11 types characters on its own"},
		{[]string{"--inject", "log", "--layout", "fr"}, "drop --layout, or use --inject uinput or --inject hidg"},
		{[]string{"--inject", "hidg", "--layout", "../de"}, `"../de" is not a layout name: write it as XKB names layouts, LAYOUT or LAYOUT(VARIANT)`},
		{[]string{"--inject", "hidg", "--device", "/does/not/exist", "--layout", "xx"}, `--layout: no such XKB layout "xx"`},
		{[]string{"--inject", "uinput", "--layout", "de(nosuch)"}, `has no variant "nosuch"`},
	} {
		if strings.Contains(tc.msg, "XKB layout") || strings.Contains(tc.msg, "variant") {
			if _, err := os.Stat("/usr/share/X11/xkb/symbols/de"); err != nil {
				t.Skip("no XKB data (apt-get install xkb-data)")
			}
		}
		args := append([]string{"recv", "--insecure", "--listen", "127.0.0.1:0"}, tc.args...)
		var out, errb bytes.Buffer
		code := Run(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitUsage || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errb.String(), ExitUsage, tc.msg)
		}
	}
}

// TestRecvLayoutCheckedFirst: a layout XKB lacks is refused before recv
// says anything else (its identity, its peers), so the usage error is the
// whole of what a sealed recv prints.
func TestRecvLayoutCheckedFirst(t *testing.T) {
	if _, err := os.Stat("/usr/share/X11/xkb/symbols/de"); err != nil {
		t.Skip("no XKB data (apt-get install xkb-data)")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	var out, errb bytes.Buffer
	code := Run([]string{"recv", "--listen", "127.0.0.1:0", "--inject", "uinput", "--layout", "qq"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != ExitUsage || !strings.HasPrefix(errb.String(), `keyrelay: --layout: no such XKB layout "qq"`) {
		t.Errorf("exit %d, stderr %q; want %d and only the layout's error", code, errb.String(), ExitUsage)
	}
}

// TestGrabbingSourcesTakeRouting: every source that owns the keyboard
// with --grab (x11, evdev, windows, macos) is a routing.RoutingSource, so
// that with named destinations (README "Switching") a destination's local
// keys act here and its hotkey works in local use: a source without
// SetRouting would swallow local keys silently.
func TestGrabbingSourcesTakeRouting(t *testing.T) {
	n := 0
	for _, b := range capture.Sources {
		if !b.Caps.Grab {
			continue
		}
		n++
		src, err := b.New(capture.SourceOptions{Grab: true})
		if err != nil {
			t.Logf("%s: %v (not made here)", b.Name, err)
			continue
		}
		if _, ok := src.(routing.RoutingSource); !ok {
			t.Errorf("--input %s grabs but is not a routing.RoutingSource (%T)", b.Name, src)
		}
	}
	if n < 4 {
		t.Errorf("%d sources grab, want x11, evdev, windows and macos at least", n)
	}
	// The Windows hook keeps a copy of which keys act here: a switch it
	// did not make must tell it.
	var win any = &capture.Windows{}
	if _, ok := win.(routing.RetargetSource); !ok {
		t.Error("capture.Windows is not a routing.RetargetSource: after keyrelay switch its hook would judge local keys by the old target")
	}
}

// TestKeymapIsTheSourcesCapability: whether send's characters mode needs
// --layout is asked of the source's entry (capture.SourceKeymap), not of
// its name: a new source with a keymap takes --keys characters without
// --layout, and doctor reports its keymap through the entry's check; the
// same source without one is refused, and doctor names the sources that
// read one (DESIGN.md, "Backends").
func TestKeymapIsTheSourcesCapability(t *testing.T) {
	isolate(t)
	if _, err := os.Stat(xkblayout.ComposeFile); err != nil {
		t.Skipf("no Compose file (apt-get install libx11-data): %v", err)
	}
	saved := capture.Sources
	t.Cleanup(func() { capture.Sources = saved })
	keymap := &capture.SourceKeymap{
		What:   "the fake keyboard's keymap",
		Where:  func() string { return "the fake keyboard" },
		Read:   func(io.Reader) (*charmode.Table, error) { return &charmode.Table{}, nil },
		Follow: func(ctx context.Context, _ *charmode.Table, _ func(*charmode.Table)) error { <-ctx.Done(); return nil },
		Check:  func(io.Reader) (string, error) { return "through the fake keyboard's keymap", nil },
		Fix:    "none",
	}
	fake := capture.SourceBackend{Name: "fakemap", Short: "a fake keyboard with a keymap", Help: "reads a fake keyboard", Needs: "nothing",
		New: func(capture.SourceOptions) (capture.Source, error) { return fakeSource{}, nil }}
	opts := func() *SendOptions {
		return &SendOptions{To: []string{"127.0.0.1:9"}, Input: "fakemap", Keys: "characters", Feedback: true, Hotkey: capture.DefaultHotkey,
			LogFormat: "text", Queue: 16, Interval: 100e6, Timeout: 2e9, Outage: 5e9}
	}

	withKeymap := fake
	withKeymap.Keymap = keymap
	capture.Sources = append(slices.Clone(saved), withKeymap)
	if err := opts().Check(); err != nil {
		t.Errorf("send --input fakemap --keys characters, a source with a keymap: %v, want no --layout needed", err)
	}
	_, out, errs := run("doctor", "--insecure", "--role", "send", "--input", "fakemap", "--keys", "characters")
	if want := "ok    characters mode: every destination (--keys characters): through the fake keyboard's keymap"; !strings.Contains(out, want) {
		t.Errorf("doctor with a keymap source does not say %q:\n%s%s", want, out, errs)
	}

	capture.Sources = append(slices.Clone(saved), fake)
	if err := opts().Check(); err == nil || !strings.Contains(err.Error(), "characters mode with --input fakemap needs this keyboard's layout") {
		t.Errorf("send --input fakemap --keys characters, a source without a keymap: %v, want --layout asked for", err)
	}
	_, out, errs = run("doctor", "--insecure", "--role", "send", "--input", "fakemap", "--keys", "characters")
	if want := "--input fakemap cannot tell this keyboard's layout"; !strings.Contains(out, want) || !strings.Contains(out, "or use --input x11, which reads this X display's keymap") {
		t.Errorf("doctor with a source without a keymap does not say %q, naming the sources with one:\n%s%s", want, out, errs)
	}
}
