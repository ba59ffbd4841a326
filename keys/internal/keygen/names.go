package keygen

import (
	"bufio"
	"fmt"
	"go/token"
	"io"
	"strconv"
	"strings"
)

// domCode is one row of Chromium's code table: a USB usage (page << 16 |
// id: 0x070004 is KeyA, 0x0C00B0 MediaPlay), the Linux evdev code Chromium
// reads the key as (0: none) and its KeyboardEvent.code.
type domCode struct {
	usage uint32
	evdev int
	name  string
}

// usbKeyboardPage is the USB HID usage page of keyboard keys, the page of
// keyrelay's codes below EvdevBase.
const usbKeyboardPage = 0x07

// readChromium reads keys/testdata/chromium/dom_codes.tsv: "#" comment
// lines, and lines of three fields separated by white space: the usage and
// the evdev code in hex, and the code. A code is an exported Go identifier
// (it becomes a constant of package keys), no code or nonzero evdev code
// appears twice (Chromium maps an X keycode, evdev + 8, to one code).
func readChromium(r io.Reader) ([]domCode, error) {
	var out []domCode
	names, evdevs := map[string]bool{}, map[int]bool{}
	err := eachLine(r, 3, func(line int, f []string) error {
		u, err := strconv.ParseUint(f[0], 0, 32)
		if err != nil || u == 0 || u > 0xFFFFFF {
			return fmt.Errorf("line %d: usage %q is not in 1..0xFFFFFF", line, f[0])
		}
		ev, err := strconv.ParseUint(f[1], 0, 16)
		if err != nil || ev > evdevMax {
			return fmt.Errorf("line %d: evdev code %q is not in 0..%#x", line, f[1], evdevMax)
		}
		if err := checkName(f[2]); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if names[f[2]] {
			return fmt.Errorf("line %d: code %s listed twice", line, f[2])
		}
		if ev != 0 && evdevs[int(ev)] {
			return fmt.Errorf("line %d: evdev code %#x listed twice", line, ev)
		}
		names[f[2]], evdevs[int(ev)] = true, true
		out = append(out, domCode{usage: uint32(u), evdev: int(ev), name: f[2]})
		return nil
	})
	return out, err
}

// readSpec reads keys/testdata/uievents-code/codes.tsv: "#" comment lines,
// and lines of a code value and the id of the spec table that lists it.
// It returns the set of codes.
func readSpec(r io.Reader) (map[string]bool, error) {
	codes := map[string]bool{}
	err := eachLine(r, 2, func(line int, f []string) error {
		if err := checkName(f[0]); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if codes[f[0]] {
			return fmt.Errorf("line %d: code %s listed twice", line, f[0])
		}
		codes[f[0]] = true
		return nil
	})
	return codes, err
}

// eachLine calls fn with each line of r that is neither blank nor a "#"
// comment, split at white space into exactly n fields.
func eachLine(r io.Reader, n int, fn func(line int, fields []string) error) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) != n {
			return fmt.Errorf("line %d: %d fields, want %d", line, len(f), n)
		}
		if err := fn(line, f); err != nil {
			return err
		}
	}
	return sc.Err()
}

// checkName refuses a code that cannot be a constant of package keys.
func checkName(s string) error {
	if !token.IsIdentifier(s) || !token.IsExported(s) {
		return fmt.Errorf("code %q is not an exported Go identifier", s)
	}
	return nil
}

// name names the CSV's keys as the package doc says: Chromium's name for
// the key of each evdev code, else keycodemapdb's unless Chromium gives it
// to another key. Every name must be a spec code or Chromium's, and name
// one key; keycodemapdb's names that no key keeps become old names.
func name(k csvKeys, chromium []domCode, spec map[string]bool) (*Table, error) {
	entries := append([]entry(nil), k.entries...)
	// The key each evdev code is relayed as: the lowest code that has it
	// (entries is in code order), as keys.FromEvdev finds it.
	lowest := map[int]int{}
	for i, e := range entries {
		if _, ok := lowest[e.evdev]; !ok && e.evdev != 0 {
			lowest[e.evdev] = i
		}
	}
	browser := map[int]string{} // entry index -> Chromium's name
	claimed := map[string]bool{}
	for _, d := range chromium {
		if d.evdev == 0 {
			continue // Chromium never reports it from an X keycode
		}
		i, ok := lowest[d.evdev]
		if !ok {
			continue // keycodemapdb does not list the evdev code: no key
		}
		if d.usage>>16 == usbKeyboardPage && entries[i].usage != int(d.usage&0xFFFF) {
			return nil, fmt.Errorf("%s: Chromium gives evdev code %#x usage %#02x, keycodemapdb %#02x", d.name, d.evdev, d.usage&0xFFFF, entries[i].usage)
		}
		browser[i] = d.name
		claimed[d.name] = true
	}
	t := &Table{entries: entries, oldNames: map[string]int{}, chromiumOnly: map[string]bool{}}
	final := map[string]int{}
	for i := range entries {
		e := &entries[i]
		if n, ok := browser[i]; ok {
			e.name = n
		} else if claimed[e.name] {
			e.name = ""
		}
		if e.name == "" {
			continue
		}
		if err := checkName(e.name); err != nil {
			return nil, fmt.Errorf("usage %#02x: %w", e.usage, err)
		}
		if c, dup := final[e.name]; dup {
			return nil, fmt.Errorf("%s names both %#02x and %#02x", e.name, c, e.usage)
		}
		final[e.name] = e.usage
		switch {
		case spec[e.name]:
		case claimed[e.name]:
			t.chromiumOnly[e.name] = true
		default:
			return nil, fmt.Errorf("keycodemapdb names %#02x %q, which is not a UI Events code value", e.usage, e.name)
		}
	}
	named := t.Names()
	for code, names := range k.names {
		for _, n := range names {
			if _, ok := final[n]; ok || claimed[n] {
				continue
			}
			if named[code] == "" {
				// An alias names a key that has a name to print.
				return nil, fmt.Errorf("%s: keycodemapdb's name for %#02x, which the browsers leave unnamed", n, code)
			}
			if c, dup := t.oldNames[n]; dup && c != code {
				return nil, fmt.Errorf("%s: keycodemapdb's name for both %#02x and %#02x", n, c, code)
			}
			t.oldNames[n] = code
		}
	}
	return t, nil
}
