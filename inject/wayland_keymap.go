package inject

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// charKeymapBase is a physical keymap's text cut where the character
// keymap's keys go (the end of its xkb_symbols section), and the XKB
// names of the writing keys (charKeys) a character may be put on.
type charKeymapBase struct {
	head, tail string
	names      map[uint32]string // evdev code -> XKB key name
	// own: cut from the physical keymap, so that every key but the
	// characters' types the same in both; false for the fallback.
	own bool
}

// fallbackKeymap is the character keymap's base when the physical keymap
// has no xkb_symbols section this can find: evdev keycodes and the US
// layout, resolved by the compositor.
const fallbackKeymap = "xkb_keymap {\n" +
	"\txkb_keycodes { include \"evdev+aliases(qwerty)\" };\n" +
	"\txkb_types { include \"complete\" };\n" +
	"\txkb_compat { include \"complete\" };\n" +
	"\txkb_symbols { include \"pc+us+inet(evdev)\" };\n" +
	"};\n"

// newCharKeymapBase cuts physical for the character keymap, or the
// fallback keymap if physical cannot be cut or names no writing key.
func newCharKeymapBase(physical string) charKeymapBase {
	if b, ok := cutSymbols(physical); ok && len(b.names) > 0 {
		b.own = true
		return b
	}
	b, _ := cutSymbols(fallbackKeymap)
	return b
}

// with is the character keymap: the base with each slot's character on
// its key, on the key's one level whatever the modifiers (ONE_LEVEL, so
// a held Shift or AltGr does not change the character).
func (b charKeymapBase) with(slots []charSlot) string {
	var s strings.Builder
	s.WriteString(b.head)
	for _, sl := range slots {
		if sl.r != 0 {
			// Uxxxx: xkbcommon's name for the keysym of any Unicode
			// character (Latin-1 ones are their own keysyms).
			fmt.Fprintf(&s, "\treplace key <%s> { type= \"ONE_LEVEL\", symbols[Group1]= [ U%04X ] };\n", sl.name, sl.r)
		}
	}
	s.WriteString(b.tail)
	return s.String()
}

var (
	// keycodeRE is a keycode's definition in xkb_keycodes: <AE01> = 10;
	keycodeRE = regexp.MustCompile(`<([A-Za-z0-9_+-]{1,16})>\s*=\s*([0-9]{1,3})\s*;`)
	// modmapRE is a modifier_map statement, whose keys set a modifier.
	modmapRE   = regexp.MustCompile(`modifier_map\s+[A-Za-z0-9_]+\s*\{([^}]*)\}`)
	keyNameRE  = regexp.MustCompile(`<([A-Za-z0-9_+-]{1,16})>`)
	symbolsRE  = regexp.MustCompile(`xkb_symbols\b[^{;]*\{`)
	evdevNames = func() map[uint32]string {
		m := make(map[uint32]string, len(charKeys))
		for i, ev := range charKeys {
			m[ev] = charKeyNames[i]
		}
		return m
	}()
)

// cutSymbols cuts km at the closing brace of its xkb_symbols section and
// names the writing keys a character may go on: those its xkb_keycodes
// define (all of them, by evdev's names, when it defines none itself but
// includes them), less any a modifier_map names (a character there would
// set the modifier too).
func cutSymbols(km string) (charKeymapBase, bool) {
	loc := symbolsRE.FindStringIndex(km)
	if loc == nil {
		return charKeymapBase{}, false
	}
	end := closingBrace(km, loc[1])
	if end < 0 {
		return charKeymapBase{}, false
	}
	byCode := map[uint32]string{}
	for _, m := range keycodeRE.FindAllStringSubmatch(km, -1) {
		if code, err := strconv.Atoi(m[2]); err == nil && code >= 8 {
			byCode[uint32(code-8)] = m[1]
		}
	}
	names := map[uint32]string{}
	for _, ev := range charKeys {
		if len(byCode) == 0 {
			names[ev] = evdevNames[ev]
		} else if n, ok := byCode[ev]; ok {
			names[ev] = n
		}
	}
	for _, m := range modmapRE.FindAllStringSubmatch(km, -1) {
		for _, n := range keyNameRE.FindAllStringSubmatch(m[1], -1) {
			for ev, name := range names {
				if name == n[1] {
					delete(names, ev)
				}
			}
		}
	}
	return charKeymapBase{head: km[:end], tail: km[end:], names: names}, true
}

// closingBrace is the index in s of the brace that closes the block
// opened just before from, -1 if none: strings and comments (// and #
// to the end of the line, as xkbcommon reads them) are skipped.
func closingBrace(s string, from int) int {
	depth := 1
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '#':
			i = lineEnd(s, i)
		case '/':
			if i+1 < len(s) && s[i+1] == '/' {
				i = lineEnd(s, i)
			}
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}
