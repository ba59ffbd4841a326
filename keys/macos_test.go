package keys

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

// TestMacOSKeycodesFollowTheCSV checks the macOS virtual keycode table
// against keycodemapdb's own rows (PROTOCOL.md §3.1: a key is its usage, or
// EvdevBase + its evdev code): every row with an "OS-X Keycode" is a key
// that FromMacOS gives back for that keycode or one sharing it, and that
// MacOSKeycode presses with the same keycode.
func TestMacOSKeycodesFollowTheCSV(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "keycodemapdb", "keymaps.csv"))
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
	hasUsage := map[uint64]bool{}
	for _, r := range rows[1:] {
		if r[col["USB Keycodes"]] != "" {
			ev, _ := strconv.ParseUint(r[col["Linux Keycode"]], 0, 16)
			hasUsage[ev] = true
		}
	}
	seen := map[uint16]bool{}
	for _, r := range rows[1:] {
		macText, usageText := r[col["OS-X Keycode"]], r[col["USB Keycodes"]]
		ev, err := strconv.ParseUint(r[col["Linux Keycode"]], 0, 16)
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		if macText == "" || ev == 0 || (usageText == "" && hasUsage[ev]) {
			continue // no keycode, KEY_RESERVED, or a key listed with its usage elsewhere
		}
		mac64, err := strconv.ParseUint(macText, 0, 16)
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		mac := uint16(mac64)
		var code Code
		if usageText == "" {
			code = EvdevBase + Code(ev)
		} else {
			u, _ := strconv.ParseUint(usageText, 10, 16)
			code = Code(u)
		}
		seen[mac] = true
		if got, ok := MacOSKeycode(code); !ok || got != mac {
			t.Errorf("%s (%v): MacOSKeycode = %#x, %v; the CSV says %#x", r[col["Linux Name"]], code, got, ok, mac)
		}
		back, ok := FromMacOS(mac)
		if !ok {
			t.Errorf("FromMacOS(%#x) (%s) = none", mac, r[col["OS-X Name"]])
			continue
		}
		if back > code {
			t.Errorf("FromMacOS(%#x) = %v, above %v which shares it: the lowest wins", mac, back, code)
		}
		if got, _ := MacOSKeycode(back); got != mac {
			t.Errorf("FromMacOS(%#x) = %v, which MacOSKeycode presses as %#x", mac, back, got)
		}
	}
	for vk := range uint16(0x100) {
		if _, ok := FromMacOS(vk); ok != seen[vk] {
			t.Errorf("FromMacOS(%#x) ok = %v, but the CSV lists it: %v", vk, ok, seen[vk])
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d macOS keycodes in the CSV: the column was not read", len(seen))
	}
}

// TestMacOSKeycodesOfNamedKeys pins keys whose macOS virtual keycodes
// Apple's Events.h names (kVK_*), so that a CSV read wrong shows here in
// words: the keys the macOS source and injector depend on most.
func TestMacOSKeycodesOfNamedKeys(t *testing.T) {
	for _, tc := range []struct {
		vk   uint16
		code Code
	}{
		{0x00, KeyA}, {0x24, Enter}, {0x30, Tab}, {0x31, Space}, {0x33, Backspace},
		{0x35, Escape}, {0x37, MetaLeft}, {0x36, MetaRight}, {0x38, ShiftLeft},
		{0x3C, ShiftRight}, {0x3A, AltLeft}, {0x3D, AltRight}, {0x3B, ControlLeft},
		{0x3E, ControlRight}, {0x39, CapsLock}, {0x3F, EvdevBase + 464}, // KEY_FN
		{0x7E, ArrowUp}, {0x75, Delete}, {0x0A, IntlBackslash}, {0x48, AudioVolumeUp},
	} {
		if got, ok := FromMacOS(tc.vk); !ok || got != tc.code {
			t.Errorf("FromMacOS(%#x) = %v, %v; want %v", tc.vk, got, ok, tc.code)
		}
		if got, ok := MacOSKeycode(tc.code); !ok || got != tc.vk {
			t.Errorf("MacOSKeycode(%v) = %#x, %v; want %#x", tc.code, got, ok, tc.vk)
		}
	}
	if _, ok := MacOSKeycode(Power); ok {
		t.Error("MacOSKeycode(Power) is ok; keycodemapdb gives Power no macOS keycode")
	}
	if _, ok := FromMacOS(0x80); ok {
		t.Error("FromMacOS(0x80) is ok; virtual keycodes end at 0x7F")
	}
}

// TestMacOSTableIsGenerated: macos_gen.go is what its //go:generate line
// makes from the CSV (its comments naming the keys as table_gen.go does),
// byte for byte.
func TestMacOSTableIsGenerated(t *testing.T) {
	committed, err := os.ReadFile("macos_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	got, err := keygen.GenerateMacOS(sources)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Error("macos_gen.go is stale: run go generate ./keys")
	}
	if testing.Short() {
		return
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip(err)
	}
	src, err := os.ReadFile("macos.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, "//go:generate go "); ok {
			args = strings.Fields(rest)
		}
	}
	i := len(args) - 2
	if i < 0 || args[i] != "-out" || args[i+1] != "macos_gen.go" {
		t.Fatalf("go:generate line %q does not end in -out macos_gen.go", args)
	}
	args[i+1] = filepath.Join(t.TempDir(), "macos_gen.go")
	if b, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	if got, err := os.ReadFile(args[i+1]); err != nil || !bytes.Equal(got, committed) {
		t.Errorf("the go:generate line makes another macos_gen.go (%v): run go generate ./keys", err)
	}
}
