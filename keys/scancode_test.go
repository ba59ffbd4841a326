package keys

import (
	"bytes"
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
	"github.com/keyrelay/keyrelay/keys/internal/scangen"
)

// TestWindowsScanCodesMatchCSV: every key keycodemapdb gives a set 1 code
// has that Windows scan code, but for the three Windows sends its own way
// (keys/internal/scangen), and reading the code back gives the key (or,
// where two keys share a code, the lower usage).
func TestWindowsScanCodesMatchCSV(t *testing.T) {
	f, err := os.Open(csvPath)
	if err != nil {
		t.Skipf("keycodemapdb not beside the repository: %v", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	windows := map[Code]uint16{Pause: 0x45, NumLock: 0xe045, PrintScreen: 0xe037}
	checked := 0
	for _, r := range recs[1:] {
		u, s := r[col["USB Keycodes"]], r[col["AT set1 keycode"]]
		if u == "" || s == "" {
			continue
		}
		usage, err1 := strconv.ParseUint(u, 10, 16)
		set1, err2 := strconv.ParseUint(s, 0, 16)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %v: unreadable usage or set 1 code", r)
		}
		c := Code(usage)
		want := uint16(set1)
		if w, ok := windows[c]; ok {
			want = w
		}
		scan, ext, ok := WindowsScanCode(c)
		got := uint16(scan)
		if ext {
			got |= 0xe000
		}
		if !ok || got != want {
			t.Errorf("WindowsScanCode(%v) = %#04x, %v; want %#04x", c, got, ok, want)
			continue
		}
		back, ok := FromWindowsScanCode(scan, ext)
		if !ok || back > c {
			t.Errorf("FromWindowsScanCode(%#04x) = %v, %v; want %v or a lower usage", want, back, ok, c)
		}
		if back != c {
			if s2, e2, _ := WindowsScanCode(back); s2 != scan || e2 != ext {
				t.Errorf("%v and %v share %#04x, but %v has another code", c, back, want, back)
			}
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d rows checked: is the CSV's set 1 column there?", checked)
	}
}

// TestWindowsScanCodes: the keys the Windows backends meet most, as
// Microsoft's scan code tables give them (extended = an 0xE0 prefix).
func TestWindowsScanCodes(t *testing.T) {
	for _, tc := range []struct {
		code Code
		scan uint8
		ext  bool
	}{
		{KeyA, 0x1e, false}, {Enter, 0x1c, false}, {NumpadEnter, 0x1c, true},
		{ControlLeft, 0x1d, false}, {ControlRight, 0x1d, true},
		{AltLeft, 0x38, false}, {AltRight, 0x38, true},
		{ArrowUp, 0x48, true}, {Numpad8, 0x48, false},
		{MetaLeft, 0x5b, true}, {CapsLock, 0x3a, false},
		{NumLock, 0x45, true}, {Pause, 0x45, false}, {PrintScreen, 0x37, true},
		{IntlBackslash, 0x56, false}, {ShiftRight, 0x36, false},
	} {
		scan, ext, ok := WindowsScanCode(tc.code)
		if !ok || scan != tc.scan || ext != tc.ext {
			t.Errorf("WindowsScanCode(%v) = %#02x ext %v %v; want %#02x ext %v", tc.code, scan, ext, ok, tc.scan, tc.ext)
		}
		if back, ok := FromWindowsScanCode(tc.scan, tc.ext); !ok || back != tc.code {
			t.Errorf("FromWindowsScanCode(%#02x, %v) = %v, %v; want %v", tc.scan, tc.ext, back, ok, tc.code)
		}
	}
	if c, ok := FromWindowsScanCode(0x00, false); ok {
		t.Errorf("scan code 0 is a key: %v", c)
	}
}

// TestScanTableIsGenerated: scancode_gen.go is what the generator makes
// from the CSV now, its comments labelled as table_gen.go names the keys.
func TestScanTableIsGenerated(t *testing.T) {
	if _, err := os.Stat(csvPath); err != nil {
		t.Skipf("keycodemapdb not beside the repository: %v", err)
	}
	committed, err := os.ReadFile("scancode_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	names, err := keygen.Load(sources)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scangen.Generate(csvPath, sources.License, names.Labels())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Error("scancode_gen.go is stale: run go generate ./keys")
	}
}
