package keygen

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = `"Linux Name","Linux Keycode","OS-X Keycode","USB Keycodes","Win32 Name","Win32 Keycode","X11 keysym name","X11 keysym","HTML code","XKB key name"` + "\n"

// TestDuplicateRule: one entry per usage, or per evdev code without one
// (EvdevBase + the code, PROTOCOL.md §3.1), chosen and merged as the package
// doc says.
func TestDuplicateRule(t *testing.T) {
	csv := header +
		"KEY_RESERVED,0,0xff,,,,,,,\n" + // no usage: skipped
		"KEY_A,30,0x00,4,VK_A,0x41,XK_A,0x0041,KeyA,AC01\n" +
		"KEY_A,30,0x00,4,VK_A,0x41,XK_a,0x0061,KeyA,AC01\n" + // shifted keysym; letters swap
		"KEY_FOO,200,,5,,,,,,\n" + // unnamed first row...
		"KEY_BAR,201,,5,VK_BAR,0x10,,,Bar,BAR1\n" + // ...loses to the first named one
		"KEY_BAZ,202,,5,,,,,Baz,\n" + // a later named row does not win
		"KEY_BACKSLASH,43,0x2a,49,VK_OEM_5,0xdc,XK_backslash,0x005c,Backslash,BKSL\n" +
		"KEY_BACKSLASH,43,0x2a,49,VK_OEM_5,0xdc,XK_bar,0x007c,Backslash,BKSL\n" +
		"KEY_BACKSLASH,43,0x2a,50,VK_OEM_5,0xdc,XK_backslash,0x005c,Backslash,BKSL\n" + // same name, higher usage: unnamed
		"KEY_BACKSLASH,43,,,,,,,,\n" + // no usage, but its evdev code has one: skipped
		"KEY_REDO,182,,,,,,,,I190\n" + // no usage: EvdevBase + 182
		"KEY_MAIL,155,,,,,XF86Mail,0x1008ff19,LaunchMail,I163\n" +
		"KEY_MAIL,155,,,,,XF86Mail,0x1008ff19,,I163\n" + // the same key again: merged
		",84,,,,,,,,\n" + // a code without a name (XKB's <LVL3>) is a key too
		"BTN_1,0x101,,,VK_RBUTTON,0x02,,,,\n" // evdev codes above 255 are in hex
	got, err := read(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{usage: 4, name: "KeyA", evdev: 30, evdevName: "KEY_A", x11: 'a', x11Name: "XK_a", x11Shift: 'A', x11ShiftName: "XK_A", mac: 0, win32: 0x41, win32Name: "VK_A", xkb: "AC01"},
		{usage: 5, name: "Bar", evdev: 201, evdevName: "KEY_BAR", mac: -1, win32: 0x10, win32Name: "VK_BAR", xkb: "BAR1"},
		{usage: 49, name: "Backslash", evdev: 43, evdevName: "KEY_BACKSLASH", x11: '\\', x11Name: "XK_backslash", x11Shift: '|', x11ShiftName: "XK_bar", mac: 0x2a, win32: 0xdc, win32Name: "VK_OEM_5", xkb: "BKSL"},
		{usage: 50, name: "", evdev: 43, evdevName: "KEY_BACKSLASH", x11: '\\', x11Name: "XK_backslash", mac: 0x2a, win32: 0xdc, win32Name: "VK_OEM_5", xkb: "BKSL"},
		{usage: EvdevBase + 84, evdev: 84, mac: -1},
		{usage: EvdevBase + 155, name: "LaunchMail", evdev: 155, evdevName: "KEY_MAIL", x11: 0x1008ff19, x11Name: "XF86Mail", mac: -1, xkb: "I163"},
		{usage: EvdevBase + 182, evdev: 182, evdevName: "KEY_REDO", mac: -1, xkb: "I190"},
		{usage: EvdevBase + 0x101, evdev: 0x101, evdevName: "BTN_1", mac: -1, win32: 0x02, win32Name: "VK_RBUTTON"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestReadErrors(t *testing.T) {
	for name, csv := range map[string]string{
		"missing column":           `"Linux Name","USB Keycodes"` + "\nKEY_A,4\n",
		"usage too big":            header + "KEY_A,30,,70000,,,,,KeyA,\n",
		"usage zero":               header + "KEY_A,30,,0,,,,,KeyA,\n",
		"usage of the evdev range": header + "KEY_A,30,,57344,,,,,KeyA,\n",
		"evdev too big":            header + "KEY_A,0x300,,,,,,,KeyA,\n",
		"bad evdev":                header + "KEY_A,x,,4,,,,,KeyA,\n",
		"bad keysym":               header + "KEY_A,30,,4,,,XK_a,zz,KeyA,\n",
		"bad win32":                header + "KEY_A,30,,4,VK_A,0x141,,,KeyA,\n",
		"short row":                header + "KEY_A,30\n",
	} {
		if _, err := read(strings.NewReader(csv)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGenerateRejectsNonIdentifierNames(t *testing.T) {
	dir := t.TempDir()
	s := Sources{CSV: filepath.Join(dir, "keymaps.csv"), License: filepath.Join(dir, "LICENSE"), Chromium: filepath.Join(dir, "dom.tsv"), Spec: filepath.Join(dir, "codes.tsv")}
	for path, text := range map[string]string{s.CSV: header + "KEY_A,30,,4,,,,,Key-A,\n", s.License: "licence\n", s.Chromium: "", s.Spec: "KeyA t\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Generate(s); err == nil || !strings.Contains(err.Error(), `"Key-A"`) {
		t.Errorf("Generate = %v, want an error naming Key-A", err)
	}
}

// FuzzRead: read takes any CSV without panicking, and what it accepts is
// one entry per code, in code order, each code a usage (1 to EvdevBase-1)
// or EvdevBase + the entry's evdev code (PROTOCOL.md §3.1).
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		header + "KEY_A,30,0x00,4,VK_A,0x41,XK_A,0x0041,KeyA,AC01\nKEY_A,30,0x00,4,VK_A,0x41,XK_a,0x0061,KeyA,AC01\n",
		header + "KEY_REDO,182,,,,,,,,I190\n,84,,,,,,,,\nBTN_1,0x101,,,VK_RBUTTON,0x02,,,,\n",
		header + "KEY_BACKSLASH,43,0x2a,49,VK_OEM_5,0xdc,XK_backslash,0x005c,Backslash,BKSL\nKEY_BACKSLASH,43,,,,,,,,\n",
		header + "KEY_A,0x300,,,,,,,KeyA,\n",
		header + "KEY_A,30\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		es, err := read(strings.NewReader(s))
		if err != nil {
			return
		}
		for i, e := range es {
			if i > 0 && es[i-1].usage >= e.usage {
				t.Fatalf("entry %d: code %#x after %#x", i, e.usage, es[i-1].usage)
			}
			if e.usage <= 0 || e.usage >= EvdevBase && e.usage != EvdevBase+e.evdev || e.usage >= EvdevBase && e.evdev == 0 {
				t.Fatalf("entry %d: code %#x for evdev %d", i, e.usage, e.evdev)
			}
		}
	})
}

const chromiumTSV = `# usage evdev code
0x070004	0x001e	KeyA
0x070092	0x005a	Lang3
0x070077	0x0084	Select
0x0c00b0	0x00cf	MediaPlay
0x0c0194	0x0090	LaunchApp1
0x0c01a2	0x0244	SelectTask
0x000012	0x0000	Fn
`

const specTSV = `# code table
KeyA	writing
Lang3	functional
Katakana	international
Select	legacy
LaunchApp1	media
Props	legacy
Fn	function
`

// TestNameRule: Chromium's name for the key of its evdev code wins;
// keycodemapdb's name it gives another key leaves its key unnamed; one
// replaced and named nowhere else is an old name of its key; a row without
// an evdev code, or whose evdev code keycodemapdb lacks, names nothing;
// Chromium's names the spec lacks are marked (package doc).
func TestNameRule(t *testing.T) {
	csv := header +
		"KEY_A,30,0x00,4,VK_A,0x41,XK_a,0x0061,KeyA,AC01\n" +
		"KEY_KATAKANA,90,,146,,,XK_Katakana,0xff26,Katakana,KATA\n" +
		"KEY_KATAKANA,90,,146,,,XK_Katakana,0xff26,Lang3,KATA\n" +
		"KEY_FRONT,132,,119,,,,,,FRNT\n" +
		"KEY_SELECT,0x161,,,VK_SELECT,0x29,XK_Select,0xff60,Select,SELE\n" +
		"KEY_PLAY,207,,,,,,,,I215\n" +
		"KEY_FILE,144,,,,,,,,I152\n" +
		"KEY_COMPUTER,157,,,,,,,LaunchApp1,I165\n" +
		"KEY_PROPS,130,,,,,,,Props,PROP\n"
	k, err := readCSV(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	chromium, err := readChromium(strings.NewReader(chromiumTSV))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := readSpec(strings.NewReader(specTSV))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := name(k, chromium, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		4:                 "KeyA",
		146:               "Lang3",      // Chromium's, where the CSV's first row says Katakana
		119:               "Select",     // KEY_FRONT, Chromium's Select
		EvdevBase + 0x161: "",           // KEY_SELECT: keycodemapdb's Select is 119's now
		EvdevBase + 207:   "MediaPlay",  // named by Chromium only
		EvdevBase + 144:   "LaunchApp1", // KEY_FILE
		EvdevBase + 157:   "",           // KEY_COMPUTER: keycodemapdb's LaunchApp1 is KEY_FILE's now
		EvdevBase + 130:   "Props",      // Chromium names no key KEY_PROPS: keycodemapdb's stays
	}
	got := map[int]string{}
	for _, e := range tab.entries {
		got[e.usage] = e.name
	}
	if !maps.Equal(got, want) {
		t.Errorf("names:\n got %v\nwant %v", got, want)
	}
	if !maps.Equal(tab.oldNames, map[string]int{"Katakana": 146}) {
		t.Errorf("old names %v, want Katakana for 146", tab.oldNames)
	}
	if !maps.Equal(tab.chromiumOnly, map[string]bool{"MediaPlay": true}) {
		t.Errorf("Chromium's names %v, want MediaPlay", tab.chromiumOnly)
	}
}

// TestNameRuleRefuses: sources that disagree are errors, not a table.
func TestNameRuleRefuses(t *testing.T) {
	for _, tc := range []struct{ name, csv, chromium, want string }{
		{"keyboard page usage differs", "KEY_A,30,,4,,,,,KeyA,\n", "0x070005 0x001e KeyA\n", "Chromium gives evdev code 0x1e usage 0x05, keycodemapdb 0x04"},
		{"a name outside the spec", "KEY_A,30,,4,,,,,Foo,\n", "", `keycodemapdb names 0x04 "Foo"`},
		{"an old name for a key left unnamed", "KEY_A,30,,4,,,,,KeyA,\nKEY_K,90,,146,,,,,Lang3,\nKEY_K,90,,146,,,,,Katakana,\n", "0x0c0001 0x001e Lang3\n", "Katakana: keycodemapdb's name for 0x92, which the browsers leave unnamed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := readCSV(strings.NewReader(header + tc.csv))
			if err != nil {
				t.Fatal(err)
			}
			chromium, err := readChromium(strings.NewReader(tc.chromium))
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := readSpec(strings.NewReader(specTSV))
			if _, err := name(k, chromium, spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("name: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestReadChromiumAndSpecRefuse: a bad line is an error naming it.
func TestReadChromiumAndSpecRefuse(t *testing.T) {
	for in, want := range map[string]string{
		"0x070004 0x001e\n":                            "line 1: 2 fields, want 3",
		"# c\n0x070004 0x001e KeyA extra\n":            "line 2: 4 fields",
		"0x1000000 0x001e KeyA\n":                      `usage "0x1000000"`,
		"0 0x001e KeyA\n":                              `usage "0"`,
		"0x070004 0x300 KeyA\n":                        `evdev code "0x300"`,
		"0x070004 x KeyA\n":                            `evdev code "x"`,
		"0x070004 0x001e keyA\n":                       `code "keyA" is not an exported Go identifier`,
		"0x070004 0x001e KeyA\n0x070005 0x0030 KeyA\n": "line 2: code KeyA listed twice",
		"0x070004 0x001e KeyA\n0x070005 0x001e KeyB\n": "line 2: evdev code 0x1e listed twice",
	} {
		if _, err := readChromium(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readChromium(%q): %v, want an error with %q", in, err, want)
		}
	}
	// Rows without an evdev code may share 0.
	if d, err := readChromium(strings.NewReader("0x000012 0 Fn\n0x000013 0x0 FnLock\n")); err != nil || len(d) != 2 {
		t.Errorf("readChromium of two codes without evdev: %v, %v", d, err)
	}
	for in, want := range map[string]string{
		"KeyA\n":                  "line 1: 1 fields, want 2",
		"Key-A t\n":               `code "Key-A"`,
		"KeyA t\n\n# x\nKeyA u\n": "line 4: code KeyA listed twice",
	} {
		if _, err := readSpec(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readSpec(%q): %v, want an error with %q", in, err, want)
		}
	}
}

// FuzzReadChromium: readChromium takes any text without panicking, and
// what it accepts has unique codes that are Go identifiers, unique nonzero
// evdev codes up to KEY_MAX, and usages up to 0xFFFFFF.
func FuzzReadChromium(f *testing.F) {
	f.Add(chromiumTSV)
	f.Add("0x070004 0x001e KeyA\n0x070005 0x001e KeyB\n")
	f.Add("0x000012\t0\tFn\n\n#\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := readChromium(strings.NewReader(s))
		if err != nil {
			return
		}
		names, evdevs := map[string]bool{}, map[int]bool{}
		for _, d := range rows {
			if names[d.name] || d.evdev != 0 && evdevs[d.evdev] || checkName(d.name) != nil || d.evdev > evdevMax || d.usage == 0 || d.usage > 0xFFFFFF {
				t.Fatalf("accepted %+v in %q", d, s)
			}
			names[d.name], evdevs[d.evdev] = true, true
		}
	})
}

// FuzzReadSpec: readSpec takes any text without panicking, and what it
// accepts are Go identifiers.
func FuzzReadSpec(f *testing.F) {
	f.Add(specTSV)
	f.Add("KeyA t\nKeyA u\n")
	f.Fuzz(func(t *testing.T, s string) {
		codes, err := readSpec(strings.NewReader(s))
		if err != nil {
			return
		}
		for c := range codes {
			if checkName(c) != nil {
				t.Fatalf("accepted %q in %q", c, s)
			}
		}
	})
}
