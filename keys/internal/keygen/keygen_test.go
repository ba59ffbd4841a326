package keygen

import (
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
	csv, lic := filepath.Join(dir, "keymaps.csv"), filepath.Join(dir, "LICENSE")
	if err := os.WriteFile(csv, []byte(header+"KEY_A,30,,4,,,,,Key-A,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lic, []byte("licence\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(csv, lic); err == nil || !strings.Contains(err.Error(), `"Key-A"`) {
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
