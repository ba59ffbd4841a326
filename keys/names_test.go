package keys

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests here read the generator's sources themselves, not through
// keys/internal/keygen, and check the generated table against them: the
// names are the browsers' (keys/testdata/chromium/SOURCE.md), the spec's
// (keys/testdata/uievents-code/SOURCE.md), and keycodemapdb's where those
// agree (keys/internal/keygen's package doc gives the rule).

// movedNames are the keycodemapdb names that Chromium, Firefox and the USB
// HID tables give another key than keycodemapdb does: the name now names
// the browsers' key, and keycodemapdb's key is unnamed (it prints as hex).
// Each: the browsers' key, keycodemapdb's key.
var movedNames = map[string][2]Code{
	"Select":      {0x77, 0xE161},   // KEY_FRONT (USB Keyboard Select), not KEY_SELECT
	"Eject":       {0xEC, 0xE0A2},   // KEY_EJECTCD (USB Consumer Eject), not KEY_EJECTCLOSECD
	"LaunchApp1":  {0xE090, 0xE09D}, // KEY_FILE (USB AL Local Machine Browser), not KEY_COMPUTER
	"MediaSelect": {0xE0AB, 0xE0E2}, // KEY_CONFIG (USB AL Consumer Control Config), not KEY_MEDIA
}

// renamedKeys are the keys keycodemapdb names otherwise than the browsers:
// its name stays an alias.
var renamedKeys = map[string]Code{"Katakana": 0x92, "Hiragana": 0x93} // Lang3, Lang4

// chromiumOnly are the names of keys the UI Events spec does not name,
// which keyrelay takes from Chromium's table.
var chromiumOnly = []string{
	"BrightnessDown", "BrightnessUp", "DisplayToggleIntExt", "MailForward", "MailReply",
	"MailSend", "MediaFastForward", "MediaPause", "MediaPlay", "MediaRecord",
	"MediaRewind", "ShowAllWindows", "ZoomToggle",
}

// notInChromium are the spec's names of keys with an X keycode that
// Chromium reports as "" (its table gives their evdev code no code):
// KEY_PROPS (Chromium's Props is USB 0x0700A3, which Linux does not map;
// Firefox reports X keycode 138 as Props) and KEY_SUSPEND.
var notInChromium = []string{"Props", "Suspend"}

// hex is c in hex, whatever its name.
func hex(c Code) string { return fmt.Sprintf("0x%02X", uint16(c)) }

// readTable reads a white-space separated table of n columns, skipping
// blank and "#" lines.
func readTable(t *testing.T, path string, n int) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if r := strings.Fields(l); len(r) == n {
			rows = append(rows, r)
		} else {
			t.Fatalf("%s: %q has %d fields, want %d", path, l, len(r), n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// chromiumCodes reads Chromium's code of each evdev code (Chromium's X11
// path maps X keycode E+8 to the row whose evdev code is E), and every name
// in its table.
func chromiumCodes(t *testing.T) (byEvdev map[uint16]string, names map[string]bool) {
	byEvdev, names = map[uint16]string{}, map[string]bool{}
	for _, r := range readTable(t, sources.Chromium, 3) {
		ev, err := strconv.ParseUint(r[1], 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		if ev != 0 {
			byEvdev[uint16(ev)] = r[2]
		}
		names[r[2]] = true
	}
	if len(byEvdev) < 150 {
		t.Fatalf("only %d evdev codes in %s", len(byEvdev), sources.Chromium)
	}
	return byEvdev, names
}

// TestNamesAreChromiums: a key Chromium names is named as Chromium names
// it: every key of the table that is the key of its evdev code (the one
// recv --inject x11 presses as X keycode evdev + 8, and uinput as the evdev
// code) has the code Chromium reports for that evdev code, where Chromium
// reports one. Of the keys with an X keycode, only notInChromium have a
// name Chromium does not report; the others Chromium does not name are
// unnamed here too.
func TestNamesAreChromiums(t *testing.T) {
	chromium, _ := chromiumCodes(t)
	withKeycode, same := 0, 0
	var extra []string
	for _, e := range All() {
		if c, _ := FromEvdev(e.Evdev); e.Evdev == 0 || c != e.Code {
			continue // no evdev code, or another key's (0x32 is 0x31's)
		}
		want, named := chromium[e.Evdev]
		if named && e.Name != want {
			t.Errorf("%v (evdev %d, X keycode %d) is named %q; Chromium reports %q", e.Code, e.Evdev, e.Evdev+8, e.Name, want)
		}
		if e.Evdev+8 > 255 {
			continue
		}
		if e.Name != "" {
			withKeycode++
		}
		switch {
		case named && e.Name == want:
			same++
		case !named && e.Name != "":
			extra = append(extra, e.Name)
		}
	}
	slices.Sort(extra)
	if !slices.Equal(extra, notInChromium) {
		t.Errorf("named keys with an X keycode that Chromium reports as \"\": %q, want %q", extra, notInChromium)
	}
	t.Logf("%d of the %d named keys with an X keycode have Chromium's code", same, withKeycode)
	if same < 170 {
		t.Errorf("only %d named keys with an X keycode have Chromium's code", same)
	}
}

// TestNamesAreW3C: every name is a code value of the UI Events spec, or
// Chromium's for a key the spec does not name (chromiumOnly, and no more).
func TestNamesAreW3C(t *testing.T) {
	spec := map[string]bool{}
	for _, r := range readTable(t, sources.Spec, 2) {
		spec[r[0]] = true
	}
	_, chromium := chromiumCodes(t)
	var notSpec []string
	for _, e := range All() {
		switch {
		case e.Name == "" || spec[e.Name]:
		case chromium[e.Name]:
			notSpec = append(notSpec, e.Name)
		default:
			t.Errorf("%v is named %q: neither a UI Events code value nor Chromium's", e.Code, e.Name)
		}
	}
	slices.Sort(notSpec)
	if !slices.Equal(notSpec, chromiumOnly) {
		t.Errorf("names from Chromium that the spec lacks: %q, want %q", notSpec, chromiumOnly)
	}
	for _, n := range []string{"Lang3", "Lang4", "Select", "Eject", "LaunchApp1", "MediaSelect"} {
		if !spec[n] {
			t.Errorf("%s is not in %s", n, sources.Spec)
		}
	}
}

// TestNamesAreKeycodemapdbs: every name keycodemapdb's CSV gives a key
// (its "HTML code" column) still parses, as that key, but for movedNames,
// which parse as the browsers' key; and it is that key's name, but for
// renamedKeys (an alias now) and a key that shares its evdev code with a
// lower usage, which the name belongs to (0x32, the ISO Backslash).
func TestNamesAreKeycodemapdbs(t *testing.T) {
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	checked := 0
	for _, r := range rows[1:] {
		name := r[col["HTML code"]]
		if name == "" {
			continue
		}
		ev, err := strconv.ParseUint(r[col["Linux Keycode"]], 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		key := EvdevBase + Code(ev)
		if u := r[col["USB Keycodes"]]; u != "" {
			v, err := strconv.ParseUint(u, 10, 16)
			if err != nil {
				t.Fatal(err)
			}
			key = Code(v)
		} else if c, _ := FromEvdev(uint16(ev)); !c.IsEvdev() {
			key = c // a row of a key listed with its usage elsewhere
		}
		checked++
		got, err := Parse(name)
		info, _ := Lookup(key)
		lowest, _ := FromEvdev(uint16(ev))
		switch moved, isMoved := movedNames[name]; {
		case err != nil:
			t.Errorf("keycodemapdb's %s (%v) does not parse: %v", name, key, err)
		case isMoved:
			if got != moved[0] || key != moved[1] || info.Name != "" {
				t.Errorf("%s: keycodemapdb's %s, parses as %s, and %s is named %q; want %s, and %s unnamed", name, hex(key), hex(got), hex(key), info.Name, hex(moved[0]), hex(moved[1]))
			}
		case got != key && lowest == got:
			if info.Name != "" {
				t.Errorf("%s: %v, which shares evdev %d with %v, is named %q", name, key, ev, got, info.Name)
			}
		case got != key:
			t.Errorf("keycodemapdb's %s parses as %v, want %v", name, got, key)
		case info.Name != name && renamedKeys[name] != key:
			t.Errorf("%v is named %q, keycodemapdb's %s", key, info.Name, name)
		}
	}
	if checked < 180 {
		t.Errorf("only %d named rows in %s", checked, csvPath)
	}
}

// TestOldNamesStillParse: the names keycodemapdb gives keys the browsers
// name otherwise stay aliases (scripts, tap, --hotkey and config files
// written with them mean the same key); the key prints as its new name.
func TestOldNamesStillParse(t *testing.T) {
	aliases := Aliases()
	for old, c := range renamedKeys {
		for _, s := range []string{old, strings.ToLower(old), strings.ToUpper(old)} {
			if got, err := Parse(s); err != nil || got != c {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, c)
			}
		}
		if aliases[old] != c {
			t.Errorf("Aliases()[%q] = %s, want %s", old, hex(aliases[old]), hex(c))
		}
	}
	if got := slices.Sorted(maps.Keys(oldNames)); !slices.Equal(got, []string{"Hiragana", "Katakana"}) {
		t.Errorf("oldNames = %q", got)
	}
	for _, tc := range []struct {
		c    Code
		want string
	}{{0x92, "Lang3"}, {0x93, "Lang4"}, {0x77, "Select"}, {0xEC, "Eject"}, {0xE0CF, "MediaPlay"}, {0xE0E1, "BrightnessUp"}, {0xE0E7, "MailSend"}, {0xE161, "0xE161"}, {0xE09D, "0xE09D"}} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%#x.String() = %q, want %q", uint16(tc.c), got, tc.want)
		}
	}
}
