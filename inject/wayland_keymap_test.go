package inject

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// compiledKeymap is the shape of a keymap xkbcommon serialises (what a
// wlroots seat sends): keycodes by number, here with Backquote named FOO
// and IntlBackslash a modifier, and braces inside a string and comments.
const compiledKeymap = `xkb_keymap {
xkb_keycodes "evdev+aliases(qwerty)" {
	minimum = 8;
	maximum = 255;
	<ESC>                = 9;
	<AE01>               = 10;
	<AE02>               = 11;
	<FOO>                = 49;
	<LSGT>               = 94;
	alias <AC12>         = <BKSL>;
};
xkb_types "complete" {
	type "ONE_LEVEL" { modifiers= none; level_name[Level1]= "Any"; };
};
xkb_compatibility "complete" {
	interpret Any+AnyOf(all) { action= SetMods(modifiers=modMapMods,clearLocks); };
};
xkb_symbols "pc+us+inet(evdev)" {
	name[group1]="English {US} // not a comment";
	key <AE01> { [ 1, exclam ] }; // a } in a comment
	# and another }
	key <LSGT> { [ ISO_Level3_Shift ] };
	modifier_map Mod5 { <LSGT> };
};
};
`

// TestCharKeymapGoesIntoSymbols: the characters go at the end of the
// physical keymap's xkb_symbols section, each replacing its key's symbols
// with one level; everything else is the physical keymap's.
func TestCharKeymapGoesIntoSymbols(t *testing.T) {
	for _, tc := range []struct {
		name, physical string
	}{
		{"compiled", compiledKeymap},
		{"includes", fallbackKeymap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newCharKeymapBase(tc.physical)
			if b.head+b.tail != tc.physical {
				t.Fatalf("the cut loses text:\n%s|%s", b.head, b.tail)
			}
			km := b.with([]charSlot{{ev: 2, name: b.names[2], r: 'ü'}, {ev: 3, name: b.names[3]}})
			line := "\treplace key <AE01> { type= \"ONE_LEVEL\", symbols[Group1]= [ U00FC ] };\n"
			i := strings.Index(km, line)
			if i < 0 || strings.Count(km, "replace key") != 1 {
				t.Fatalf("the keymap does not have ü on <AE01> alone:\n%s", km)
			}
			sym := strings.Index(km, "xkb_symbols")
			if end := closingBrace(km, strings.Index(km[sym:], "{")+sym+1); i < sym || i > end || km[:i]+km[i+len(line):] != tc.physical {
				t.Errorf("ü is not inside xkb_symbols, or the rest changed:\n%s", km)
			}
		})
	}
}

// TestCharKeymapKeyNames: the writing keys are named as the keymap's
// keycodes name them; where it defines none (it includes them), by
// evdev's names; a key in a modifier_map is left out, and a keycode the
// keymap does not define is not used.
func TestCharKeymapKeyNames(t *testing.T) {
	b := newCharKeymapBase(compiledKeymap)
	want := map[uint32]string{2: "AE01", 3: "AE02", 41: "FOO"}
	if len(b.names) != len(want) {
		t.Errorf("names %v, want %v (LSGT is Mod5's)", b.names, want)
	}
	for ev, n := range want {
		if b.names[ev] != n {
			t.Errorf("evdev %d named %q, want %q", ev, b.names[ev], n)
		}
	}
	inc := newCharKeymapBase(fallbackKeymap)
	if len(inc.names) != len(charKeys) || inc.names[86] != "LSGT" || inc.names[41] != "TLDE" {
		t.Errorf("an including keymap's names: %v", inc.names)
	}
}

// TestCharKeymapFallback: a physical keymap without an xkb_symbols
// section to add to, or whose keycodes name no writing key, gets the US
// keymap as the character keymap's base.
func TestCharKeymapFallback(t *testing.T) {
	noWritingKeys := "xkb_keymap { xkb_keycodes { <ESC> = 9; }; xkb_symbols { key <ESC> { [ Escape ] }; }; };"
	for _, km := range []string{"", "xkb_keymap { };", "xkb_symbols { never closed", `xkb_symbols { "}`, noWritingKeys} {
		b := newCharKeymapBase(km)
		if b.head+b.tail != fallbackKeymap {
			t.Errorf("base of %q is not the fallback keymap", km)
		}
	}
}

// FuzzCutSymbols: any text either cuts inside an xkb_symbols block (the
// two halves are the text) or does not cut; never a panic.
func FuzzCutSymbols(f *testing.F) {
	f.Add(compiledKeymap)
	f.Add(fallbackKeymap)
	f.Add(`xkb_symbols { "\"}" # }` + "\n}")
	f.Fuzz(func(t *testing.T, km string) {
		b, ok := cutSymbols(km)
		if !ok {
			return
		}
		if b.head+b.tail != km || !strings.HasPrefix(b.tail, "}") {
			t.Fatalf("cut %q into %q and %q", km, b.head, b.tail)
		}
		for ev, n := range b.names {
			if n == "" || strings.ContainsAny(n, "<>{};\" \n") {
				t.Fatalf("evdev %d named %q", ev, n)
			}
		}
	})
}

// TestCharKeymapOfSeatKeymap: a German keymap as sway 1.7 sends it to a
// client (the fuzz corpus's seat-keymap) names all 48 writing keys, none
// in a modifier_map, and the characters go into its xkb_symbols.
func TestCharKeymapOfSeatKeymap(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzCutSymbols/seat-keymap")
	if err != nil {
		t.Fatal(err)
	}
	_, quoted, _ := strings.Cut(string(raw), "string(")
	km, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(quoted), ")"))
	if err != nil {
		t.Fatalf("the corpus file: %v", err)
	}
	b, ok := cutSymbols(km)
	if !ok || len(b.names) != len(charKeys) {
		t.Fatalf("cut %v, %d writing keys named, want %d", ok, len(b.names), len(charKeys))
	}
	if !strings.HasPrefix(b.tail, "};\n\n};") {
		t.Errorf("cut at %q, not at the end of xkb_symbols", b.tail[:min(len(b.tail), 20)])
	}
}
