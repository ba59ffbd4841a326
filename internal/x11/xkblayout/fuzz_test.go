package xkblayout

import (
	"strings"
	"testing"
)

// FuzzParseSymbols: any bytes parse or fail with an error, never panic or
// loop, and a parsed key has at most the levels written.
func FuzzParseSymbols(f *testing.F) {
	f.Add([]byte(`default xkb_symbols "basic" { include "latin(type4)" name[Group1]="German"; key <AE02> { [ 2, quotedbl, twosuperior, oneeighth ] }; };`))
	f.Add([]byte(`xkb_symbols "x" { key <AE11> {type[Group1]="FOUR_LEVEL_PLUS_LOCK", symbols[Group1]= [ssharp, question, backslash, questiondown, 0x1001E9E ]}; augment "level3(ralt_switch)" replace key <A> { [ { a, b }, NoSymbol ] }; };`))
	f.Add([]byte("xkb_symbols \"k\" { key <KP1> { type= \"KEYPAD\", [ KP_End, KP_1 ] }; modifier_map Mod5 { <LVL3> }; // c\n};"))
	f.Add([]byte(`xkb_symbols "u" { key <A> { [`))
	f.Fuzz(func(t *testing.T, src []byte) {
		secs, err := ParseSymbols(src)
		if err != nil {
			return
		}
		for _, s := range secs {
			for _, st := range s.Stmts {
				if len(st.Syms) > strings.Count(string(src), ",")+1 {
					t.Fatalf("key <%s>: %d levels from %d commas", st.Key, len(st.Syms), strings.Count(string(src), ","))
				}
			}
		}
	})
}

// FuzzParseCompose: any Compose text reads without panicking, and each
// sequence has keysyms and a result.
func FuzzParseCompose(f *testing.F) {
	f.Add("<dead_acute> <e> : \"é\" eacute # LATIN SMALL LETTER E WITH ACUTE\n")
	f.Add("include \"%L\"\n<Multi_key> <quotedbl> <backslash> : \"\\\"\\\\\"\n<a> : \"\\342\\202\\254\"\n")
	f.Add("<dead_x> : \"unterminated\n<a> <b> \"x\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		ParseCompose(strings.NewReader(src), func(seq []string, result string) {
			if len(seq) == 0 || result == "" {
				t.Fatalf("sequence %q -> %q", seq, result)
			}
		})
	})
}
