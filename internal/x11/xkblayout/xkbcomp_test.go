package xkblayout

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/x11/keysym"
)

// TestAgreesWithXkbcomp cross-checks every character of the de, fr and
// us(intl) layouts against xkbcomp, X's own compiler of XKB data (package
// x11-xkb-utils), as the oracle: it resolves the includes and merges of
// pc+LAYOUT into one flat keymap, whose keys must put each character
// where Load's table does (the key and its level; for a dead-key
// character, a dead key there), and every character xkbcomp puts on a
// key at levels 1-4 must be in the table.
func TestAgreesWithXkbcomp(t *testing.T) {
	xkbcomp, err := exec.LookPath("xkbcomp")
	if err != nil {
		t.Skip("no xkbcomp (apt-get install x11-xkb-utils)")
	}
	codes, err := readKeycodes(os.DirFS(Dir))
	if err != nil {
		t.Skip(err)
	}
	for _, name := range []string{"de", "fr", "us(intl)", "gb"} {
		t.Run(name, func(t *testing.T) {
			l := load(t, name)
			dir := t.TempDir()
			src := filepath.Join(dir, "in.xkb")
			out := filepath.Join(dir, "out.xkb")
			keymap := `xkb_keymap {
	xkb_keycodes { include "evdev+aliases(qwerty)" };
	xkb_types { include "complete" };
	xkb_compat { include "complete" };
	xkb_symbols { include "pc+` + name + `" };
};
`
			if err := os.WriteFile(src, []byte(keymap), 0o644); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(xkbcomp, "-w0", "-I"+Dir, src, "-xkb", out).CombinedOutput(); err != nil {
				t.Fatalf("xkbcomp: %v: %s", err, b)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			// The flat keymap's xkb_symbols section, in the format
			// ParseSymbols reads, without the keymap around it.
			text := string(b)
			i := strings.Index(text, "xkb_symbols")
			j := strings.Index(text[i:], "\n};")
			if i < 0 || j < 0 {
				t.Fatalf("no xkb_symbols section in xkbcomp's output")
			}
			secs, err := ParseSymbols([]byte(text[i : i+j+3]))
			if err != nil || len(secs) != 1 {
				t.Fatalf("parsing xkbcomp's xkb_symbols: %v (%d sections)", err, len(secs))
			}
			oracle := map[string][]string{} // key name: keysyms by level
			keypad := map[string]bool{}
			for _, st := range secs[0].Stmts {
				oracle[st.Key] = st.Syms
				keypad[st.Key] = st.Keypad
			}
			types := keyTypes(text)
			// at is the keysym xkbcomp's keymap types for the key of
			// s pressed with the modifiers an injector holds for it
			// (Shift inverted for a letter under Caps Lock), by the
			// key's type: which modifiers give which level.
			at := func(s Stroke, caps bool) string {
				for k, c := range codes {
					if c != s.Key || oracle[k] == nil {
						continue
					}
					if s.CapsOff {
						caps = false // tapped off around it
					}
					mods := map[string]bool{"Shift": s.Shift != (s.Alpha && caps), "LevelThree": s.AltGr, "Lock": caps}
					lv := types.level(text, k, len(oracle[k]), mods)
					if syms := oracle[k]; lv < len(syms) && syms[lv] != "" {
						return syms[lv]
					}
				}
				return ""
			}
			// The Compose file's dead-key sequences: what xkbcomp's
			// keysyms for a dead-key character's two presses compose.
			composed := map[[2]uint32]string{}
			sym := func(name string) uint32 {
				ks, _ := keysym.Parse(name)
				return ks
			}
			f, err := os.Open(ComposeFile)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ParseCompose(f, func(seq []string, result string) {
				if len(seq) == 2 {
					composed[[2]uint32{sym(seq[0]), sym(seq[1])}] = result
				}
			})
			checked, viaDead := 0, 0
			for _, r := range l.Chars() {
				s, _ := l.Strokes(r)
				for _, caps := range []bool{false, true} {
					switch len(s) {
					case 1:
						if c, ok := symRune(at(s[0], caps)); !ok || c != r {
							t.Errorf("%q (Caps Lock %v): the table says %+v; xkbcomp types %q with it", r, caps, s[0], at(s[0], caps))
						}
					case 2:
						if !strings.HasPrefix(at(s[0], caps), "dead_") {
							t.Errorf("%q (Caps Lock %v): the table says dead key %+v; xkbcomp types %q with it", r, caps, s[0], at(s[0], caps))
						}
						if got, ok := composed[[2]uint32{sym(at(s[0], caps)), sym(at(s[1], caps))}]; !ok || got != string(r) {
							t.Errorf("%q (Caps Lock %v): xkbcomp's %s then %s compose %q (%v)", r, caps, at(s[0], caps), at(s[1], caps), got, ok)
						}
					}
				}
				checked++
				if len(s) == 2 {
					viaDead++
				}
			}
			// Every character xkbcomp has on a key, the table has.
			missing := 0
			for k, syms := range oracle {
				if keypad[k] || strings.HasPrefix(k, "KP") || codes[k] == 0 {
					continue
				}
				for lv, sym := range syms {
					if lv >= maxLevels {
						break
					}
					if c, ok := symRune(sym); ok {
						if _, have := l.Strokes(c); !have {
							missing++
							t.Errorf("xkbcomp has %q (%s) on <%s> level %d; the table lacks it", c, sym, k, lv+1)
						}
					}
				}
			}
			t.Logf("%s: %d characters (%d through a dead key) checked against xkbcomp, Caps Lock off and on; %d of xkbcomp's missing", name, checked, viaDead, missing)
			if checked < 100 {
				t.Errorf("only %d characters: the table is too small to be %s", checked, name)
			}
		})
	}
}

// keyType is an XKB key type as xkbcomp writes it: the modifiers it looks
// at and the level each combination of them gives (Level1 otherwise).
type keyType struct {
	mods []string
	maps map[string]int // "LevelThree+Shift" (sorted): level, 0-based
}

type keyTypeSet map[string]keyType

var (
	typeRE    = regexp.MustCompile(`(?s)type "([^"]+)" \{(.*?)\n\s*\};`)
	typeModRE = regexp.MustCompile(`modifiers= ([^;]+);`)
	typeMapRE = regexp.MustCompile(`map\[([^\]]+)\]= Level(\d+);`)
)

// keyTypes reads the xkb_types of xkbcomp's keymap.
func keyTypes(keymap string) keyTypeSet {
	out := keyTypeSet{}
	for _, m := range typeRE.FindAllStringSubmatch(keymap, -1) {
		kt := keyType{maps: map[string]int{}}
		if mm := typeModRE.FindStringSubmatch(m[2]); mm != nil && mm[1] != "none" {
			kt.mods = strings.Split(mm[1], "+")
		}
		for _, mp := range typeMapRE.FindAllStringSubmatch(m[2], -1) {
			n, _ := strconv.Atoi(mp[2])
			ms := strings.Split(mp[1], "+")
			slices.Sort(ms)
			kt.maps[strings.Join(ms, "+")] = n - 1
		}
		out[m[1]] = kt
	}
	return out
}

// level is the level key (with n levels) gives with mods held: its type's
// (xkbcomp names it when it is not the one XKB picks by itself; else
// ONE_LEVEL, TWO_LEVEL or ALPHABETIC, FOUR_LEVEL... by the keysyms, which
// agree on Shift and LevelThree).
func (ts keyTypeSet) level(keymap, key string, n int, mods map[string]bool) int {
	name := ""
	re := regexp.MustCompile(`key <` + regexp.QuoteMeta(key) + `> \{\s*type(?:\[Group1\])?= "([^"]+)"`)
	if m := re.FindStringSubmatch(keymap); m != nil {
		name = m[1]
	}
	kt, ok := ts[name]
	if !ok {
		// XKB's automatic types: the level is Shift's and LevelThree's,
		// Lock shifting only a letter's (not known here: none of the
		// keys without a named type in de, fr, gb or us(intl) is a
		// letter's under Caps Lock, or the test fails on it).
		lv := 0
		if mods["Shift"] {
			lv++
		}
		if mods["LevelThree"] && n > 2 {
			lv += 2
		}
		return lv
	}
	var held []string
	for _, m := range kt.mods {
		if mods[m] {
			held = append(held, m)
		}
	}
	slices.Sort(held)
	return kt.maps[strings.Join(held, "+")]
}
