package xkblayout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
			at := func(s Stroke) string {
				for k, c := range codes {
					if c != s.Key {
						continue
					}
					syms := oracle[k]
					lv := 0
					if s.Shift {
						lv++
					}
					if s.AltGr {
						lv += 2
					}
					if lv < len(syms) && syms[lv] != "" {
						return syms[lv]
					}
				}
				return ""
			}
			checked := 0
			for _, r := range l.Chars() {
				s, _ := l.Strokes(r)
				switch len(s) {
				case 1:
					if c, ok := symRune(at(s[0])); !ok || c != r {
						t.Errorf("%q: the table says %+v; xkbcomp has %q there", r, s[0], at(s[0]))
					}
				case 2:
					if !strings.HasPrefix(at(s[0]), "dead_") {
						t.Errorf("%q: the table says dead key %+v; xkbcomp has %q there", r, s[0], at(s[0]))
					}
				}
				checked++
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
			t.Logf("%s: %d characters checked against xkbcomp, %d of xkbcomp's missing", name, checked, missing)
			if checked < 100 {
				t.Errorf("only %d characters: the table is too small to be %s", checked, name)
			}
		})
	}
}
