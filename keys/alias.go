package keys

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/internal/spell"
)

// aliases are other names people know for physical keys, as they are
// usually written (Parse ignores ASCII case): the X keysym names xdotool
// takes (Return, BackSpace, Prior, Control_L, ISO_Level3_Shift, KP_Enter),
// short forms (ctrl, alt, super, esc), and, added from table_gen.go's
// oldNames, keycodemapdb's names for keys the browsers name otherwise
// (Katakana for Lang3, Hiragana for Lang4), so that scripts written with
// them keep working. Each
// names the key that has that keysym on a US keyboard, as a W3C name names
// the key by its US label: they are physical keys, and the receiver's
// layout decides what they type.
//
// A name is here only where it is unambiguous and changes no script that
// was valid before: none equals a W3C name in any case (TestAliases), and a
// single letter or digit is not one (KeyA is a key; "a" in quotes is the
// character a, whatever the layout). Keysyms that name characters (plus,
// at, exclam) are left out: on another layout they are on other keys, or
// need Shift, and a character in quotes says what is meant.
var aliases = map[string]Code{
	"Return":     Enter,
	"esc":        Escape,
	"del":        Delete,
	"ins":        Insert,
	"Prior":      PageUp,
	"Page_Up":    PageUp,
	"pgup":       PageUp,
	"Next":       PageDown,
	"Page_Down":  PageDown,
	"pgdn":       PageDown,
	"Left":       ArrowLeft,
	"Right":      ArrowRight,
	"Up":         ArrowUp,
	"Down":       ArrowDown,
	"Print":      PrintScreen,
	"Menu":       ContextMenu,
	"Caps_Lock":  CapsLock,
	"Num_Lock":   NumLock,
	"apostrophe": Quote,
	"grave":      Backquote,

	"Scroll_Lock": ScrollLock,

	"ctrl":      ControlLeft,
	"control":   ControlLeft,
	"ctrl_l":    ControlLeft,
	"Control_L": ControlLeft,
	"ctrl_r":    ControlRight,
	"Control_R": ControlRight,
	"shift":     ShiftLeft,
	"Shift_L":   ShiftLeft,
	"Shift_R":   ShiftRight,
	"alt":       AltLeft,
	"Alt_L":     AltLeft,
	"option":    AltLeft,
	"Alt_R":     AltRight,
	"altgr":     AltRight,
	// AltGr: what xdotool presses for it on a layout that has one.
	"ISO_Level3_Shift": AltRight,
	"super":            MetaLeft,
	"Super_L":          MetaLeft,
	"Super_R":          MetaRight,
	"meta":             MetaLeft,
	"Meta_L":           MetaLeft,
	"Meta_R":           MetaRight,
	"win":              MetaLeft,
	"cmd":              MetaLeft,
	"command":          MetaLeft,

	"KP_0":         Numpad0,
	"KP_1":         Numpad1,
	"KP_2":         Numpad2,
	"KP_3":         Numpad3,
	"KP_4":         Numpad4,
	"KP_5":         Numpad5,
	"KP_6":         Numpad6,
	"KP_7":         Numpad7,
	"KP_8":         Numpad8,
	"KP_9":         Numpad9,
	"KP_Enter":     NumpadEnter,
	"KP_Add":       NumpadAdd,
	"KP_Subtract":  NumpadSubtract,
	"KP_Multiply":  NumpadMultiply,
	"KP_Divide":    NumpadDivide,
	"KP_Decimal":   NumpadDecimal,
	"KP_Equal":     NumpadEqual,
	"KP_Insert":    Numpad0,
	"KP_End":       Numpad1,
	"KP_Down":      Numpad2,
	"KP_Next":      Numpad3,
	"KP_Page_Down": Numpad3,
	"KP_Left":      Numpad4,
	"KP_Begin":     Numpad5,
	"KP_Right":     Numpad6,
	"KP_Home":      Numpad7,
	"KP_Up":        Numpad8,
	"KP_Prior":     Numpad9,
	"KP_Page_Up":   Numpad9,
	"KP_Delete":    NumpadDecimal,
}

// aliasByLower indexes aliases by their lower-case name.
var aliasByLower = map[string]Code{}

func init() {
	for a, c := range oldNames {
		aliases[a] = c
	}
	for a, c := range aliases {
		aliasByLower[strings.ToLower(a)] = c
	}
}

// Aliases returns the other names Parse takes (in any ASCII case) and the
// key each names. The map is the caller's.
func Aliases() map[string]Code {
	return maps.Clone(aliases)
}

// Suggest returns the key names closest to a name Parse does not know, best
// first, at most three: W3C names and aliases a few edits away, in any case
// ("Retrun" → Return, "ctl" → ctrl), or for one character the key that
// types it on a US keyboard ("a" → KeyA, "?" → Slash). Nil if none is close.
func Suggest(s string) []string {
	if r, n := utf8.DecodeRuneInString(s); n == len(s) && n > 0 {
		if c, _, ok := ForRune(r); ok && r > ' ' {
			return []string{c.String()}
		}
		return nil
	}
	lower, ok := asciiLower(s)
	if !ok || lower == "" {
		return nil
	}
	// A name within about a third of its length, so that a short word
	// matches only a near twin.
	limit := max(1, len(lower)/3)
	type cand struct {
		name  string
		code  Code
		alias bool
		d     int
	}
	var best []cand
	consider := func(name string, code Code, alias bool) {
		d := spell.Distance(lower, strings.ToLower(name))
		if d <= limit {
			best = append(best, cand{name, code, alias, d})
		}
	}
	for i := range table {
		if table[i].Name != "" {
			consider(table[i].Name, table[i].Code, false)
		}
	}
	for a, c := range aliases {
		consider(a, c, true)
	}
	// Nearest first; of one key's names (ScrollLock, Scroll_Lock) only
	// the nearest, its W3C name at a tie.
	slices.SortFunc(best, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		if a.alias != b.alias {
			if a.alias {
				return 1
			}
			return -1
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	var named []Code
	for _, c := range best {
		if len(out) == 3 {
			break
		}
		if slices.Contains(named, c.code) {
			continue
		}
		named = append(named, c.code)
		out = append(out, c.name)
	}
	return out
}

// unknownKey is Parse's error for s, with the names closest to it.
func unknownKey(s string) error {
	hint := ""
	if near := Suggest(s); len(near) > 0 {
		hint = "did you mean " + strings.Join(near, " or ") + "? "
	}
	return fmt.Errorf("%w %q (%suse a W3C KeyboardEvent.code name such as KeyA, ShiftLeft, Enter, ArrowUp, F5, an X name such as Return, ctrl, Page_Up, or a usage such as 0x04; see 'keyrelay keys')", ErrUnknownKey, s, hint)
}
