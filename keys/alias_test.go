package keys

import (
	"slices"
	"strings"
	"testing"
)

// TestAliases: every alias names a key of the table that has a W3C name,
// in any ASCII case; none is a W3C name in another case (it would change
// what a valid script means) nor a single character (a character is
// quoted in a script); no two differ only in case; and where the table
// gives a key the alias as its US X keysym (XK_Return), the alias names
// that key, so a typo in the hand-written list shows.
func TestAliases(t *testing.T) {
	w3c := map[string]bool{}
	for _, e := range All() {
		if e.Name != "" {
			w3c[strings.ToLower(e.Name)] = true
		}
	}
	seen := map[string]string{}
	for a, c := range Aliases() {
		info, ok := Lookup(c)
		if !ok || info.Name == "" {
			t.Errorf("alias %s names %v, which has no W3C name", a, c)
		}
		if w3c[strings.ToLower(a)] {
			t.Errorf("alias %s shadows the W3C name %s", a, a)
		}
		if len(a) < 2 {
			t.Errorf("alias %q is one character: a script quotes characters", a)
		}
		if o, dup := seen[strings.ToLower(a)]; dup {
			t.Errorf("aliases %s and %s differ only in case", a, o)
		}
		seen[strings.ToLower(a)] = a
		for _, s := range []string{a, strings.ToLower(a), strings.ToUpper(a)} {
			if got, err := Parse(s); err != nil || got != c {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, c)
			}
		}
		for _, e := range All() {
			if e.X11Name == "XK_"+a && e.Code != c {
				t.Errorf("alias %s names %v, but the table gives XK_%s to %v", a, c, a, e.Code)
			}
		}
	}
	if len(seen) < 60 {
		t.Errorf("only %d aliases", len(seen))
	}
}

// TestAliasExamples: the names xdotool users type, and the failures the
// W3C names alone gave (tap Return, tap ctrl_l, tap LEFT).
func TestAliasExamples(t *testing.T) {
	for s, want := range map[string]Code{
		"Return": Enter, "BackSpace": Backspace, "Tab": Tab, "Escape": Escape, "space": Space,
		"Delete": Delete, "Home": Home, "End": End, "Prior": PageUp, "Page_Up": PageUp,
		"Next": PageDown, "Page_Down": PageDown, "LEFT": ArrowLeft, "Right": ArrowRight,
		"up": ArrowUp, "Down": ArrowDown, "F1": F1, "f24": F24, "ctrl": ControlLeft,
		"control": ControlLeft, "ctrl_l": ControlLeft, "Control_L": ControlLeft, "ctrl_r": ControlRight,
		"shift": ShiftLeft, "Shift_L": ShiftLeft, "Shift_R": ShiftRight, "alt": AltLeft,
		"Alt_L": AltLeft, "alt_r": AltRight, "ISO_Level3_Shift": AltRight, "altgr": AltRight,
		"super": MetaLeft, "Super_L": MetaLeft, "meta": MetaLeft, "win": MetaLeft,
		"Caps_Lock": CapsLock, "Num_Lock": NumLock, "Scroll_Lock": ScrollLock, "Print": PrintScreen,
		"Menu": ContextMenu, "Insert": Insert, "KP_Enter": NumpadEnter, "KP_7": Numpad7,
		"KP_Home": Numpad7, "kp_add": NumpadAdd,
	} {
		if c, err := Parse(s); err != nil || c != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, c, err, want)
		}
	}
	for _, s := range []string{"a", "A", "1", "+", "plus", "Hyper_L", "KP_Separator"} {
		if c, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error (not an unambiguous key)", s, c)
		}
	}
}

// TestSuggest: an unknown name gets the nearest names, any case; one
// character gets the US key that types it.
func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"Retrun", []string{"Return"}},
		{"ctl", []string{"ctrl"}},
		{"SHIFTLFT", []string{"ShiftLeft"}},
		{"ArowUp", []string{"ArrowUp"}},
		{"ScrolLock", []string{"ScrollLock"}},
		{"Scrol_Lock", []string{"ScrollLock"}},
		{"Caps_Lok", []string{"Caps_Lock"}},
		{"a", []string{"KeyA"}},
		{"A", []string{"KeyA"}},
		{"1", []string{"Digit1"}},
		{"?", []string{"Slash"}},
		{"é", nil},
		{"Frobnicate", nil},
		{"", nil},
		{"Keyİ", nil},
	} {
		if got := Suggest(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
