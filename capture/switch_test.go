package capture

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

func TestParseHotkey(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"ScrollLock", "ScrollLock", ""},
		{"controlleft+ControlRight", "ControlLeft+ControlRight", ""},
		{" ShiftLeft + AltLeft + KeyK ", "ShiftLeft+AltLeft+KeyK", ""},
		{"0x47", "ScrollLock", ""},
		{DefaultHotkey, DefaultHotkey, ""},
		{"", "", "empty"},
		{"ScrollLok", "", "unknown key"},
		{"KeyA+KeyA", "", "KeyA twice"},
		{"KeyA+KeyB+KeyC+KeyD+KeyE", "", "at most 4"},
		{`"é"`, "", "not characters"},
		{"KeyA+", "", "unknown key"},
	} {
		h, err := ParseHotkey(tc.in)
		switch {
		case tc.err == "" && (err != nil || h.String() != tc.want):
			t.Errorf("ParseHotkey(%q) = %v, %v; want %s", tc.in, h, err, tc.want)
		case tc.err != "" && (err == nil || !errors.Is(err, ErrHotkey) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseHotkey(%q) = %v, %v; want an ErrHotkey saying %q", tc.in, h, err, tc.err)
		}
	}
}

// switchTrace feeds a Switch key events written "+KeyA -KeyA" and returns
// what it relayed, with the toggles as "[local]" and "[relay]".
func switchTrace(t *testing.T, hotkey, events string) string {
	t.Helper()
	return switchTraceWith(t, hotkey, events, func(*Switch, *[]string) {})
}

// switchTraceWith is switchTrace with the Switch set up further by setup,
// which may add to the trace.
func switchTraceWith(t *testing.T, hotkey, events string, setup func(*Switch, *[]string)) string {
	t.Helper()
	h, err := ParseHotkey(hotkey)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	s := &Switch{Hotkey: h,
		Emit: func(k keys.Key, down bool) error {
			out = append(out, map[bool]string{true: "+", false: "-"}[down]+k.String())
			return nil
		},
		OnToggle: func(relaying bool) error {
			out = append(out, map[bool]string{true: "[relay]", false: "[local]"}[relaying])
			return nil
		},
	}
	setup(s, &out)
	for _, e := range strings.Fields(events) {
		c, err := keys.Parse(e[1:])
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Key(c, e[0] == '+'); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join(out, " ")
}

// TestSwitch: the hotkey toggles and reaches neither side; turning to local
// use releases at the receiver what was relayed; keys held across a switch
// are not relayed until pressed again (Switch's doc).
func TestSwitch(t *testing.T) {
	for _, tc := range []struct{ name, hotkey, in, want string }{
		{"relays keys", "ScrollLock", "+KeyA -KeyA", "+KeyA -KeyA"},
		{"a one-key hotkey is swallowed both ways", "ScrollLock",
			"+KeyA -KeyA +ScrollLock -ScrollLock +KeyB -KeyB +ScrollLock -ScrollLock +KeyC -KeyC",
			"+KeyA -KeyA [local] [relay] +KeyC -KeyC"},
		{"going local releases held keys at the receiver", "ScrollLock",
			"+ShiftLeft +KeyA +ScrollLock -KeyA -ShiftLeft -ScrollLock",
			"+ShiftLeft +KeyA -KeyA -ShiftLeft [local]"},
		{"a chord: its first key is released at the receiver", DefaultHotkey,
			"+ControlLeft +ControlRight -ControlRight -ControlLeft +KeyB -KeyB",
			"+ControlLeft -ControlLeft [local]"},
		{"coming back: the chord's keys are not relayed", DefaultHotkey,
			"+ControlLeft +ControlRight -ControlRight -ControlLeft +ControlRight +ControlLeft -ControlLeft -ControlRight +KeyB -KeyB",
			"+ControlLeft -ControlLeft [local] [relay] +KeyB -KeyB"},
		{"a key held locally across the switch is not relayed until pressed again", "ScrollLock",
			"+ScrollLock -ScrollLock +KeyA +ScrollLock -ScrollLock -KeyA +KeyA -KeyA",
			"[local] [relay] +KeyA -KeyA"},
		{"auto-repeat of a held key is one press", "ScrollLock", "+KeyA +KeyA +KeyA -KeyA", "+KeyA -KeyA"},
		{"a release of a key never pressed is nothing", "ScrollLock", "-KeyA", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := switchTrace(t, tc.hotkey, tc.in); got != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestSwitchDestinationsAndLocalKeys checks what the Switch does for send's
// named destinations (DESIGN.md, Named destinations): in local use a
// destination's hotkey makes it the target and resumes relaying, its keys
// and their releases reaching no side, while other keys and chords stay
// local; while relaying, destination hotkeys are the router's (relayed as
// keys), and a key the router says acts here is passed to this machine, down
// while held, as well as relayed (the router keeps it from the destinations
// that list it); going local or stopping releases it here.
func TestSwitchDestinationsAndLocalKeys(t *testing.T) {
	setup := func(s *Switch, out *[]string) {
		one, _ := ParseHotkey("ControlRight+Digit1")
		two, _ := ParseHotkey("ControlRight+Digit2")
		s.Targets = []Hotkey{one, nil, two}
		s.OnTarget = func(i int) error {
			*out = append(*out, fmt.Sprintf("[to %d]", i))
			return nil
		}
		s.Here = func(c keys.Code) bool { return c == keys.AudioVolumeUp }
		s.ActHere = func(c keys.Code, down bool) error {
			*out = append(*out, "here"+map[bool]string{true: "+", false: "-"}[down]+c.String())
			return nil
		}
	}
	for _, tc := range []struct{ name, in, want string }{
		{"a destination hotkey in local use targets it and resumes relaying",
			"+ScrollLock -ScrollLock +ControlRight +Digit2 -Digit2 -ControlRight +KeyA -KeyA",
			"[local] [to 2] [relay] +KeyA -KeyA"},
		{"its keys pressed in the other order too",
			"+ScrollLock -ScrollLock +Digit1 +ControlRight -ControlRight -Digit1 +KeyB -KeyB",
			"[local] [to 0] [relay] +KeyB -KeyB"},
		{"other keys in local use stay local",
			"+ScrollLock -ScrollLock +ControlRight +Digit3 -Digit3 -ControlRight +KeyA -KeyA",
			"[local]"},
		{"while relaying the router sees destination hotkeys",
			"+ControlRight +Digit1 -Digit1 -ControlRight",
			"+ControlRight +Digit1 -Digit1 -ControlRight"},
		{"a local key acts here, held while held, and is relayed for the router",
			"+AudioVolumeUp +KeyA -KeyA -AudioVolumeUp",
			"here+AudioVolumeUp +AudioVolumeUp +KeyA -KeyA here-AudioVolumeUp -AudioVolumeUp"},
		{"going local releases a local key here",
			"+AudioVolumeUp +ScrollLock -AudioVolumeUp -ScrollLock",
			"here+AudioVolumeUp +AudioVolumeUp here-AudioVolumeUp -AudioVolumeUp [local]"},
		{"a local key in local use acts here by itself",
			"+ScrollLock -ScrollLock +AudioVolumeUp -AudioVolumeUp",
			"[local]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := switchTraceWith(t, "ScrollLock", tc.in, setup); got != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzSwitch: whatever the keyboard does, the receiver sees a balanced
// stream (never an up without its down, never a second down), nothing while
// local, and, once every key is released here, nothing held there.
func FuzzSwitch(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 0x81, 0x82, 0x83})
	f.Add([]byte{4, 5, 0x85, 0x84, 0, 4, 5, 0x84, 0x85, 0x80})
	alphabet := []keys.Code{keys.KeyA, keys.KeyB, keys.ShiftLeft, keys.ScrollLock, keys.ControlLeft, keys.ControlRight}
	f.Fuzz(func(t *testing.T, in []byte) {
		for i, hk := range []Hotkey{{keys.ScrollLock}, {keys.ControlLeft, keys.ControlRight}, {keys.ScrollLock}} {
			atReceiver := map[keys.Key]bool{}
			emitted := 0
			s := &Switch{Hotkey: hk, Emit: func(k keys.Key, down bool) error {
				if atReceiver[k] == down {
					return fmt.Errorf("%v down=%v while held=%v", k, down, atReceiver[k])
				}
				atReceiver[k] = down
				emitted++
				return nil
			}}
			// The third: named destinations, one with the hotkey
			// ControlRight+KeyB, and KeyA a local key: what is passed
			// here is balanced too, and released once every key is.
			atHere := map[keys.Code]bool{}
			if i == 2 {
				s.Targets = []Hotkey{{keys.ControlRight, keys.KeyB}}
				s.OnTarget = func(int) error { return nil }
				s.Here = func(c keys.Code) bool { return c == keys.KeyA }
				s.ActHere = func(c keys.Code, down bool) error {
					if atHere[c] == down {
						return fmt.Errorf("%v down=%v here while held=%v", c, down, atHere[c])
					}
					atHere[c] = down
					return nil
				}
			}
			here := map[keys.Code]bool{}
			for _, b := range in {
				c, down := alphabet[int(b&0x7f)%len(alphabet)], b&0x80 == 0
				wasLocal, before := s.Local, emitted
				if err := s.Key(c, down); err != nil {
					t.Fatal(err)
				}
				if wasLocal && s.Local && emitted != before {
					t.Fatalf("relayed %v while local", c)
				}
				if wasLocal != s.Local {
					for k, held := range atReceiver {
						if held && s.Local {
							t.Fatalf("%v still held at the receiver after switching to local use", k)
						}
					}
				}
				here[c] = down
			}
			for c, down := range here {
				if down {
					if err := s.Key(c, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			for k, down := range atReceiver {
				if down {
					t.Fatalf("%v held at the receiver after every key was released here", k)
				}
			}
			for c, down := range atHere {
				if down {
					t.Fatalf("%v still passed down here after every key was released", c)
				}
			}
		}
	})
}

// TestCheckHotkey: what send checks of a hotkey before its source starts:
// every key must be one its source can see, and with x11 all keys but one
// must be modifiers (the passive grab of local use).
func TestCheckHotkey(t *testing.T) {
	tests := []struct {
		hotkey, source string
		ok             bool
	}{
		{DefaultHotkey, "x11", true},
		{DefaultHotkey, "evdev", true},
		{"ScrollLock", "x11", true},
		{"ctrl+alt+KeyK", "hook", true},
		{"KeyA+KeyB", "x11", false},
		{"KeyA+KeyB", "evdev", true},
		{"ScrollLock+Pause", "x11", false},
		{"CapsLock+KeyA", "x11", false},
		{"0x03", "evdev", false},
		{"ControlLeft+0x03", "x11", false},
	}
	for _, tt := range tests {
		h, err := ParseHotkey(tt.hotkey)
		if err != nil {
			t.Fatalf("ParseHotkey(%q): %v", tt.hotkey, err)
		}
		err = CheckHotkey(h, tt.source)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrHotkey)) {
			t.Errorf("CheckHotkey(%s, %s) = %v, want ok %v (and ErrHotkey)", tt.hotkey, tt.source, err, tt.ok)
		}
	}
}
