package keys

//go:generate go run gen.go -kind scancode -in testdata/keycodemapdb/keymaps.csv -license testdata/keycodemapdb/LICENSE.BSD -chromium testdata/chromium/dom_codes.tsv -spec testdata/uievents-code/codes.tsv -out scancode_gen.go

// Windows scan codes (set 1) are what the Windows backends speak: a
// low-level keyboard hook reports a key's scan code and whether it is
// extended (an 0xE0 prefix), and SendInput with KEYEVENTF_SCANCODE presses
// one. Here an extended code is written 0xe0XX. The table is generated
// from keycodemapdb (keys/internal/scangen, which names the three keys
// where Windows's code is not the CSV's).

var (
	codeToScan = map[Code]uint16{}
	scanToCode = map[uint16]Code{}
)

func init() {
	for _, e := range winScanTable {
		codeToScan[e.Code] = e.Scan
		if _, dup := scanToCode[e.Scan]; !dup {
			scanToCode[e.Scan] = e.Code // the lowest usage, as the table is in usage order
		}
	}
}

// WindowsScanCode returns the Windows scan code of a physical key: the low
// byte, and whether it is extended (sent with an 0xE0 prefix).
func WindowsScanCode(c Code) (scan uint8, extended bool, ok bool) {
	s, ok := codeToScan[c]
	return uint8(s), s>>8 == 0xe0, ok
}

// FromWindowsScanCode returns the physical key of a Windows scan code (the
// lowest usage where two share one).
func FromWindowsScanCode(scan uint8, extended bool) (Code, bool) {
	s := uint16(scan)
	if extended {
		s |= 0xe000
	}
	c, ok := scanToCode[s]
	return c, ok
}
