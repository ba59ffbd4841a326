package keys

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

func TestParseStringRoundTrip(t *testing.T) {
	named := 0
	for _, e := range All() {
		if e.Name == "" {
			continue
		}
		named++
		for _, s := range []string{e.Name, strings.ToLower(e.Name), strings.ToUpper(e.Name)} {
			c, err := Parse(s)
			if err != nil || c != e.Code {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, c, err, e.Code)
			}
		}
		if e.Code.String() != e.Name {
			t.Errorf("%#x.String() = %q, want %q", uint16(e.Code), e.Code.String(), e.Name)
		}
	}
	if named < 140 {
		t.Errorf("only %d named keys", named)
	}
}

// TestEveryCodeRoundTrips: String and Parse agree on all 65535 nonzero codes,
// named, unnamed and unknown to the table.
func TestEveryCodeRoundTrips(t *testing.T) {
	for v := 1; v <= 0xFFFF; v++ {
		c := Code(v)
		if got, err := Parse(c.String()); err != nil || got != c {
			t.Fatalf("Parse(%q) = %v, %v; want %#x", c.String(), got, err, v)
		}
	}
}

func TestParseCaseInsensitive(t *testing.T) {
	for s, want := range map[string]Code{"keya": KeyA, "SHIFTLEFT": ShiftLeft, "Enter": Enter, "arrowup": ArrowUp, "f5": F5, "NumpadEnter": NumpadEnter, "0X04": KeyA, "0xe1": ShiftLeft} {
		if c, err := Parse(s); err != nil || c != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, c, err, want)
		}
	}
}

func TestKnownValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		code Code
	}{{"KeyA", 0x04}, {"Enter", 0x28}, {"ShiftLeft", 0xE1}, {"ArrowUp", 0x52}, {"F5", 0x3E}, {"Backslash", 0x31}, {"ControlRight", 0xE4}} {
		if c, err := Parse(tc.name); err != nil || c != tc.code {
			t.Errorf("Parse(%q) = %#x, %v; want %#x", tc.name, uint16(c), err, uint16(tc.code))
		}
	}
	a, ok := Lookup(KeyA)
	want := Info{Code: 0x04, Name: "KeyA", Evdev: 30, EvdevName: "KEY_A", X11Keysym: 0x61, X11Name: "XK_a", X11Shifted: 0x41, X11ShiftedName: "XK_A", MacOS: 0, Win32VK: 0x41, Win32Name: "VK_A", XKB: "AC01"}
	if !ok || a != want {
		t.Errorf("Lookup(KeyA) =\n %+v, want\n %+v", a, want)
	}
	if e, _ := Lookup(Enter); e.Evdev != 28 || e.X11Keysym != 0xff0d || e.Win32VK != 0x0d || e.MacOS != 0x24 {
		t.Errorf("Lookup(Enter) = %+v", e)
	}
	if m, _ := Lookup(AudioVolumeMute); m.Evdev != 113 {
		t.Errorf("AudioVolumeMute evdev = %d, want 113 (KEY_MUTE)", m.Evdev)
	}
	// Missing columns hold their sentinels, not a valid zero.
	if p, _ := Lookup(Power); p.MacOS != -1 || p.Win32VK != 0 || p.X11Keysym != 0 {
		t.Errorf("Lookup(Power) = %+v, want MacOS -1, no VK, no keysym", p)
	}
	if _, ok := Lookup(0); ok {
		t.Error("Lookup(0) found a key")
	}
}

func TestAllInUsageOrder(t *testing.T) {
	all := All()
	for i := 1; i < len(all); i++ {
		if all[i-1].Code >= all[i].Code {
			t.Fatalf("All()[%d] = %v after %v", i, all[i].Code, all[i-1].Code)
		}
	}
	all[0].Name = "changed"
	if All()[0].Name == "changed" {
		t.Error("All returns the table itself")
	}
}

func TestParseHexAndErrors(t *testing.T) {
	// 0x32 (the ISO key also called Backslash) has no name of its own;
	// 0x03 and 0x1FF are not in the table. All print and parse as hex.
	for s, want := range map[string]Code{"0x04": KeyA, "0x32": 0x32, "0x03": 0x03, "0x1FF": 0x1FF, "0xFFFF": 0xFFFF, "0x4": KeyA} {
		if c, err := Parse(s); err != nil || c != want {
			t.Errorf("Parse(%q) = %v, %v; want %#x", s, c, err, uint16(want))
		}
	}
	for c, want := range map[Code]string{0x32: "0x32", 0x03: "0x03", 0x1FF: "0x1FF", 0: "0x00"} {
		if s := c.String(); s != want {
			t.Errorf("Code(%#x).String() = %q, want %q", uint16(c), s, want)
		}
	}
	for _, s := range []string{"", "Foo", "0x", "0x0", "0x00", "0x10000", "0xZZ", "0x-1", "0x+4", "0x_4", "0x0x4", "Key A", " KeyA", "KeyA ", "Keyİ", "\u212Aeyk", "ſpace"} {
		if c, err := Parse(s); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnknownKey", s, c, err)
		}
	}
	_, err := Parse("Foo")
	want := `unknown key "Foo" (use a W3C KeyboardEvent.code name such as KeyA`
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "'keyrelay keys'") {
		t.Errorf("Parse(Foo) error = %v, want it to start %q and point to 'keyrelay keys'", err, want)
	}
	_, err = Parse("Retrun")
	want = `unknown key "Retrun" (did you mean Return? use a W3C`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Parse(Foo) error = %v, want it to start %q and point to 'keyrelay keys'", err, want)
	}
}

func TestForRuneUSLayout(t *testing.T) {
	chars := []rune{'\n', '\t'}
	for r := rune(0x20); r <= 0x7E; r++ {
		chars = append(chars, r)
	}
	seen := map[usKey]rune{}
	for _, r := range chars {
		c, shift, ok := ForRune(r)
		if !ok || c == 0 {
			t.Errorf("no key for %q", r)
			continue
		}
		if other, dup := seen[usKey{c, shift}]; dup {
			t.Errorf("%q and %q both map to %v shift=%v", r, other, c, shift)
		}
		seen[usKey{c, shift}] = r
	}
	if len(seen) != 97 {
		t.Errorf("%d distinct keys for 97 characters", len(seen))
	}
	for r, want := range map[rune]usKey{'a': {KeyA, false}, 'A': {KeyA, true}, 'z': {KeyZ, false}, '0': {Digit0, false}, ')': {Digit0, true}, '!': {Digit1, true}, '"': {Quote, true}, '~': {Backquote, true}, '|': {Backslash, true}, '\n': {Enter, false}, '\t': {Tab, false}, ' ': {Space, false}} {
		if c, shift, _ := ForRune(r); c != want.code || shift != want.shift {
			t.Errorf("ForRune(%q) = %v %v, want %v %v", r, c, shift, want.code, want.shift)
		}
	}
	for _, r := range []rune{'é', '\r', 0x7F, 0, '€'} {
		if _, _, ok := ForRune(r); ok {
			t.Errorf("ForRune(%q) found a key on the US layout", r)
		}
	}
}

// TestForRuneMatchesKeysyms checks the hand-written US layout against the
// CSV's US keysyms: printable ASCII keysyms equal their code points.
func TestForRuneMatchesKeysyms(t *testing.T) {
	for r := rune(0x20); r <= 0x7E; r++ {
		c, shift, _ := ForRune(r)
		info, ok := Lookup(c)
		sym := info.X11Keysym
		if shift {
			sym = info.X11Shifted
		}
		if !ok || sym != uint32(r) {
			t.Errorf("ForRune(%q) = %v shift=%v, whose keysym is %#x", r, c, shift, sym)
		}
	}
}

// csvPath is the copy of keycodemapdb the table is generated from.
const csvPath = "testdata/keycodemapdb/keymaps.csv"

// sources are the generator's inputs, as the //go:generate lines name them.
var sources = keygen.Sources{
	CSV:      csvPath,
	License:  "testdata/keycodemapdb/LICENSE.BSD",
	Chromium: "testdata/chromium/dom_codes.tsv",
	Spec:     "testdata/uievents-code/codes.tsv",
}

// TestTableIsGenerated: the committed table is what the generator makes from
// the CSV, Chromium's code table and the spec's code values checked in
// beside it.
func TestTableIsGenerated(t *testing.T) {
	committed, err := os.ReadFile("table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("in process", func(t *testing.T) {
		got, err := keygen.Generate(sources)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Error("table_gen.go is stale: run go generate ./keys")
		}
	})
	// The //go:generate line itself, run into a temporary file: its paths
	// and flags work from this directory.
	t.Run("go generate line", func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs the go command")
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			t.Skip(err)
		}
		src, err := os.ReadFile("keys.go")
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, l := range strings.Split(string(src), "\n") {
			if rest, ok := strings.CutPrefix(l, "//go:generate go "); ok {
				args = strings.Fields(rest)
			}
		}
		out := filepath.Join(t.TempDir(), "table_gen.go")
		i := len(args) - 2
		if i < 0 || args[i] != "-out" || args[i+1] != "table_gen.go" {
			t.Fatalf("go:generate line %q does not end in -out table_gen.go", args)
		}
		args[i+1] = out
		if b, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Error("table_gen.go is stale: run go generate ./keys")
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"KeyA", "shiftleft", "0x04", "0x32", "", "Foo", "Return", "ctrl_l", "KP_Page_Up"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrUnknownKey", s, err)
			}
			return
		}
		if c == 0 {
			t.Fatalf("Parse(%q) = 0 without error", s)
		}
		if c2, err := Parse(c.String()); err != nil || c2 != c {
			t.Fatalf("Parse(%q) = %v, but Parse(String()) = %v, %v", s, c, c2, err)
		}
		// A name is the table's or an alias, up to ASCII case; anything
		// else is hex.
		if info, ok := Lookup(c); ok && strings.EqualFold(s, info.Name) && isASCII(s) {
			return
		}
		for a, ac := range Aliases() {
			if strings.EqualFold(s, a) && isASCII(s) {
				if ac != c {
					t.Fatalf("Parse(%q) = %v, but the alias %s names %v", s, c, a, ac)
				}
				return
			}
		}
		if len(s) < 3 || !strings.EqualFold(s[:2], "0x") {
			t.Fatalf("Parse(%q) = %v: neither a name nor hex", s, c)
		}
	})
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestLocks: the lock byte of PROTOCOL.md §3.2: lock and epoch bits only
// with known, no other bits.
func TestLocks(t *testing.T) {
	for _, tc := range []struct {
		l     Locks
		valid bool
		s     string
	}{
		{0, true, "unknown"},
		{LocksKnown, true, "none"},
		{LocksKnown | LockCaps, true, "caps"},
		{LocksKnown | LockNum | LockEpoch, true, "num"},
		{LocksKnown | LockCaps | LockNum, true, "caps,num"},
		{LockCaps, false, "unknown"},
		{LockEpoch, false, "unknown"},
		{LocksKnown | 1<<2, false, "none"},
	} {
		if tc.l.Valid() != tc.valid || tc.l.String() != tc.s {
			t.Errorf("Locks(%#02x): valid %v %q, want %v %q", uint8(tc.l), tc.l.Valid(), tc.l, tc.valid, tc.s)
		}
	}
}

// csvEvdevCodes reads every evdev code keycodemapdb lists (but 0,
// KEY_RESERVED), and which of them some row gives a USB HID usage.
func csvEvdevCodes(t *testing.T) (codes []uint16, usage map[uint16]bool) {
	t.Helper()
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
	usage = map[uint16]bool{}
	for _, r := range rows[1:] {
		ev, err := strconv.ParseUint(r[col["Linux Keycode"]], 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		if ev == 0 {
			continue
		}
		if !slices.Contains(codes, uint16(ev)) {
			codes = append(codes, uint16(ev))
		}
		if r[col["USB Keycodes"]] != "" {
			usage[uint16(ev)] = true
		}
	}
	return codes, usage
}

// TestEveryEvdevCodeIsAKey (PROTOCOL.md §3.1): every evdev code keycodemapdb
// lists is a key, read from the CSV itself and not through the generator:
// its USB HID usage where it has one, else EvdevBase + the code; and that
// key's evdev code is the code again (what the receiver presses).
func TestEveryEvdevCodeIsAKey(t *testing.T) {
	codes, usage := csvEvdevCodes(t)
	if len(codes) < 450 {
		t.Fatalf("only %d evdev codes in %s", len(codes), csvPath)
	}
	for _, ev := range codes {
		c, ok := FromEvdev(ev)
		if !ok {
			t.Errorf("evdev %d: no key", ev)
			continue
		}
		if c.IsEvdev() == usage[ev] || usage[ev] && c > 0xFF || !usage[ev] && c != EvdevBase+Code(ev) {
			t.Errorf("evdev %d (a usage: %v): key %v", ev, usage[ev], c)
		}
		if info, _ := Lookup(c); info.Evdev != ev {
			t.Errorf("evdev %d: key %v has evdev %d", ev, c, info.Evdev)
		}
		if got, err := Parse(c.String()); err != nil || got != c {
			t.Errorf("evdev %d: Parse(%q) = %v, %v", ev, c, got, err)
		}
	}
	for _, tc := range []struct {
		ev   uint16
		want Code
	}{{30, KeyA}, {43, Backslash}, {100, AltRight}, {84, 0xE054}, {182, 0xE0B6}, {210, 0xE0D2}, {155, LaunchMail}} {
		if c, _ := FromEvdev(tc.ev); c != tc.want {
			t.Errorf("FromEvdev(%d) = %v, want %v", tc.ev, c, tc.want)
		}
	}
	for _, ev := range []uint16{0, 0x2FF} {
		if c, ok := FromEvdev(ev); ok {
			t.Errorf("FromEvdev(%#x) = %v, a key keycodemapdb does not list", ev, c)
		}
	}
}
