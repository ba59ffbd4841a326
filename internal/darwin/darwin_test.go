package darwin

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/keys"
)

// The flags real keyboard events carry: FlagNonCoalesced always, and the
// generic and device bits of the modifiers held (CGEventTypes.h,
// IOLLEvent.h).
const (
	plain      = FlagNonCoalesced
	shiftL     = FlagNonCoalesced | FlagShift | DevLeftShift
	shiftBoth  = FlagNonCoalesced | FlagShift | DevLeftShift | DevRightShift
	shiftR     = FlagNonCoalesced | FlagShift | DevRightShift
	cmdL       = FlagNonCoalesced | FlagCommand | DevLeftCommand
	cmdLctrlR  = FlagNonCoalesced | FlagCommand | DevLeftCommand | FlagControl | DevRightControl
	capsOn     = FlagNonCoalesced | FlagAlphaShift
	fnDown     = FlagNonCoalesced | FlagSecondaryFn
	shiftNoDev = FlagShift // posted by a program: no device bits
)

func down(c keys.Code) Change { return Change{c, true} }
func up(c keys.Code) Change   { return Change{c, false} }

// TestDecoderTurnsTapEventsIntoKeys: sequences of events as a keyboard
// tap receives them (type, virtual keycode, flags, autorepeat) and the key
// downs and ups they relay (PROTOCOL.md §3.1: keys are USB HID usages).
// The events are written from the documented flag values, not recorded on
// a Mac (none was at hand): see README "macOS".
func TestDecoderTurnsTapEventsIntoKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []Event
		want   []Change
	}{
		{"shift a", []Event{
			{FlagsChanged, 0x38, shiftL, false}, {KeyDown, 0x00, shiftL, false},
			{KeyUp, 0x00, shiftL, false}, {FlagsChanged, 0x38, plain, false},
		}, []Change{down(keys.ShiftLeft), down(keys.KeyA), up(keys.KeyA), up(keys.ShiftLeft)}},
		{"auto-repeat dropped", []Event{
			{KeyDown, 0x00, plain, false}, {KeyDown, 0x00, plain, true}, {KeyDown, 0x00, plain, true},
			{KeyUp, 0x00, plain, false},
		}, []Change{down(keys.KeyA), up(keys.KeyA)}},
		{"left and right shift apart by device bits", []Event{
			{FlagsChanged, 0x38, shiftL, false}, {FlagsChanged, 0x3C, shiftBoth, false},
			{FlagsChanged, 0x38, shiftR, false}, {FlagsChanged, 0x3C, plain, false},
		}, []Change{down(keys.ShiftLeft), down(keys.ShiftRight), up(keys.ShiftLeft), up(keys.ShiftRight)}},
		{"command control c, the hotkey's kind of chord", []Event{
			{FlagsChanged, 0x37, cmdL, false}, {FlagsChanged, 0x3E, cmdLctrlR, false},
			{KeyDown, 0x08, cmdLctrlR, false}, {KeyUp, 0x08, cmdLctrlR, false},
			{FlagsChanged, 0x3E, cmdL, false}, {FlagsChanged, 0x37, plain, false},
		}, []Change{down(keys.MetaLeft), down(keys.ControlRight), down(keys.KeyC), up(keys.KeyC), up(keys.ControlRight), up(keys.MetaLeft)}},
		{"caps lock: one FlagsChanged a press, relayed as a tap", []Event{
			{FlagsChanged, 0x39, capsOn, false}, {KeyDown, 0x00, capsOn, false}, {KeyUp, 0x00, capsOn, false},
			{FlagsChanged, 0x39, plain, false},
		}, []Change{down(keys.CapsLock), up(keys.CapsLock), down(keys.KeyA), up(keys.KeyA), down(keys.CapsLock), up(keys.CapsLock)}},
		{"fn has no device bit", []Event{
			{FlagsChanged, 0x3F, fnDown, false}, {FlagsChanged, 0x3F, plain, false},
		}, []Change{down(keys.EvdevBase + 464), up(keys.EvdevBase + 464)}},
		{"a program's shift without device bits", []Event{
			{FlagsChanged, 0x38, shiftNoDev, false}, {KeyDown, 0x01, shiftNoDev, false},
			{KeyUp, 0x01, shiftNoDev, false}, {FlagsChanged, 0x38, 0, false},
		}, []Change{down(keys.ShiftLeft), down(keys.KeyS), up(keys.KeyS), up(keys.ShiftLeft)}},
		{"a release missed while the tap was off: the next flags release it", []Event{
			{FlagsChanged, 0x37, cmdL, false}, {TapDisabledByTimeout, 0, 0, false},
			{KeyDown, 0x00, plain, false},
		}, []Change{down(keys.MetaLeft), up(keys.MetaLeft), down(keys.KeyA)}},
		{"an up whose down came before the tap: dropped", []Event{
			{KeyUp, 0x00, plain, false}, {FlagsChanged, 0x38, plain, false},
		}, nil},
		{"a keycode keycodemapdb lacks: nothing", []Event{
			{KeyDown, 0x7F, plain, false}, {KeyUp, 0x7F, plain, false},
		}, nil},
		{"other event types: nothing", []Event{{EventType(1), 0, plain, false}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			var got []Change
			for _, ev := range tc.events {
				got = append(got, d.Decode(ev).Changes...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestDecoderAsksToReenableTheTap(t *testing.T) {
	var d Decoder
	for _, typ := range []EventType{TapDisabledByTimeout, TapDisabledByUserInput} {
		if r := d.Decode(Event{Type: typ}); !r.Reenable || len(r.Changes) != 0 {
			t.Errorf("Decode(%#x) = %+v, want Reenable and no changes", typ, r)
		}
	}
	if r := d.Decode(Event{Type: KeyDown}); r.Reenable {
		t.Error("a key down asks to reenable")
	}
}

// checkBalanced fails unless changes, applied from held, never release a key
// not down nor press one down (DESIGN.md invariant 2 starts at the source),
// and returns the keys held after.
func checkBalanced(t interface{ Fatalf(string, ...any) }, held map[keys.Code]bool, changes []Change) {
	for _, c := range changes {
		if c.Down == held[c.Code] {
			t.Fatalf("unbalanced: %v down=%v while held=%v", c.Code, c.Down, held[c.Code])
		}
		held[c.Code] = c.Down
	}
}

var tapKeycodes = []uint16{0x00, 0x01, 0x08, 0x24, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x7F}

func drawEvent(t *rapid.T) Event {
	return Event{
		Type:       rapid.SampledFrom([]EventType{KeyDown, KeyUp, FlagsChanged, TapDisabledByTimeout}).Draw(t, "type"),
		Keycode:    rapid.SampledFrom(tapKeycodes).Draw(t, "vk"),
		Flags:      Flags(rapid.Uint64Range(0, 0x00FFFFFF).Draw(t, "flags")),
		Autorepeat: rapid.Bool().Draw(t, "repeat"),
	}
}

// TestDecoderStaysBalanced: whatever the tap delivers, in any order, with
// any flags, the decoder's output is balanced, and what Held says is what
// its output holds.
func TestDecoderStaysBalanced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d Decoder
		held := map[keys.Code]bool{}
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			checkBalanced(t, held, d.Decode(drawEvent(t)).Changes)
		}
		var want []keys.Code
		for c, h := range held {
			if h {
				want = append(want, c)
			}
		}
		got := d.Held()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("Held() = %v, output holds %v", got, want)
		}
	})
}

// FuzzDecoder feeds events read from bytes, 11 a piece (type low byte,
// keycode, 8 bytes of flags, autorepeat), and checks the output is
// balanced.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{12, 0x38, 2, 1, 2, 0, 0, 0, 0, 0, 0, 10, 0, 2, 1, 2, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		held := map[keys.Code]bool{}
		types := map[byte]EventType{10: KeyDown, 11: KeyUp, 12: FlagsChanged, 0xFE: TapDisabledByTimeout, 0xFF: TapDisabledByUserInput}
		for len(b) >= 11 {
			typ, ok := types[b[0]]
			if !ok {
				typ = EventType(b[0])
			}
			ev := Event{Type: typ, Keycode: uint16(b[1]), Flags: Flags(binary.LittleEndian.Uint64(b[2:10])), Autorepeat: b[10]&1 != 0}
			checkBalanced(t, held, d.Decode(ev).Changes)
			b = b[11:]
		}
	})
}

func TestLocksFromFlags(t *testing.T) {
	for _, tc := range []struct {
		f     Flags
		epoch keys.Locks
		want  keys.Locks
	}{
		{plain, 0, keys.LocksKnown | keys.LockNum},
		{capsOn, 0, keys.LocksKnown | keys.LockNum | keys.LockCaps},
		{capsOn | shiftL, keys.LockEpoch, keys.LocksKnown | keys.LockNum | keys.LockCaps | keys.LockEpoch},
	} {
		if got := Locks(tc.f, tc.epoch); got != tc.want || !got.Valid() {
			t.Errorf("Locks(%#x, %v) = %#x, want %#x (PROTOCOL.md §3.2)", tc.f, tc.epoch, got, tc.want)
		}
	}
}

// TestPosterSetsModifierFlags: modifiers are posted as FlagsChanged with
// their own flag set on the press and cleared on the release, and every
// key pressed while they are held carries them, as a keyboard's do.
func TestPosterSetsModifierFlags(t *testing.T) {
	var p Poster
	steps := []struct {
		code keys.Code
		down bool
		caps Flags
		want Post
	}{
		{keys.ShiftLeft, true, 0, Post{Keycode: 0x38, Down: true, Type: FlagsChanged, Flags: FlagShift | DevLeftShift}},
		{keys.MetaRight, true, 0, Post{Keycode: 0x36, Down: true, Type: FlagsChanged, Flags: FlagShift | DevLeftShift | FlagCommand | DevRightCommand}},
		{keys.KeyA, true, FlagAlphaShift | FlagControl, Post{Keycode: 0x00, Down: true, Type: KeyDown, Flags: FlagShift | DevLeftShift | FlagCommand | DevRightCommand | FlagAlphaShift}},
		{keys.KeyA, false, 0, Post{Keycode: 0x00, Type: KeyUp, Flags: FlagShift | DevLeftShift | FlagCommand | DevRightCommand}},
		{keys.ShiftLeft, false, 0, Post{Keycode: 0x38, Type: FlagsChanged, Flags: FlagCommand | DevRightCommand}},
		{keys.MetaRight, false, 0, Post{Keycode: 0x36, Type: FlagsChanged}},
		{keys.Enter, true, 0, Post{Keycode: 0x24, Down: true, Type: KeyDown}},
	}
	for i, s := range steps {
		got, ok := p.Key(s.code, s.down, s.caps)
		if !ok || got.Keycode != s.want.Keycode || got.Down != s.want.Down || got.Type != s.want.Type || got.Flags != s.want.Flags {
			t.Errorf("step %d: Key(%v, %v) = %+v, %v; want %+v", i, s.code, s.down, got, ok, s.want)
		}
	}
	if _, ok := p.Key(keys.Power, true, 0); ok {
		t.Error("Key(Power) is ok; it has no macOS virtual keycode")
	}
}

func TestPosterTypesCharactersAsUnicode(t *testing.T) {
	var p Poster
	p.Key(keys.ControlLeft, true, 0)
	for _, tc := range []struct {
		r    rune
		want []uint16
	}{{'é', []uint16{0xE9}}, {'😀', []uint16{0xD83D, 0xDE00}}, {'@', []uint16{'@'}}} {
		ev := p.Char(tc.r)
		if !ev[0].Down || ev[1].Down || ev[0].Type != KeyDown || ev[1].Type != KeyUp {
			t.Errorf("Char(%q) = %+v: want a down, then an up", tc.r, ev)
		}
		for _, e := range ev {
			if !slices.Equal(e.Text, tc.want) || e.Flags != 0 || e.Keycode != 0 {
				t.Errorf("Char(%q) event %+v: want text %04x, keycode 0, no flags (Control held does not make a shortcut)", tc.r, e, tc.want)
			}
		}
	}
}

// TestAccessNamesThePane: each missing permission is named with the
// System Settings pane to turn it on in, and the program.
func TestAccessNamesThePane(t *testing.T) {
	all := Access{Accessibility: true, Listen: true, Post: true}
	for _, tc := range []struct {
		name string
		a    Access
		need Need
		want []string // in the message; none: no error
		not  []string
	}{
		{"send, allowed", all, NeedListen, nil, nil},
		{"send, no input monitoring", Access{Accessibility: true, Post: true}, NeedListen, []string{PaneInputMonitoring, "/usr/local/bin/keyrelay", "read the keyboard"}, []string{PaneAccessibility}},
		{"send without grab needs no accessibility", Access{Listen: true}, NeedListen, nil, nil},
		{"send --grab, no accessibility", Access{Listen: true}, NeedGrab, []string{PaneAccessibility, "drops them"}, []string{PaneInputMonitoring}},
		{"send --grab, neither", Access{}, NeedGrab, []string{PaneInputMonitoring + " and in " + PaneAccessibility}, nil},
		{"recv, allowed", all, NeedPost, nil, nil},
		{"recv, no post access", Access{Accessibility: true, Listen: true}, NeedPost, []string{PaneAccessibility, "press keys"}, []string{PaneInputMonitoring}},
		{"recv, not trusted", Access{Post: true}, NeedPost, []string{PaneAccessibility}, nil},
		{"recv needs no input monitoring", Access{Accessibility: true, Post: true}, NeedPost, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Check(tc.need, "/usr/local/bin/keyrelay")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrAccess) {
				t.Fatalf("Check = %v, want an error wrapping ErrAccess", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check = %q, lacks %q", err, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("Check = %q, names %q, which is not missing", err, n)
				}
			}
		})
	}
}

// TestSecureInputIsSaid: secure input turning on is said, naming the app
// when known, and so is its end; nothing is said twice.
func TestSecureInputIsSaid(t *testing.T) {
	var s SecureInput
	steps := []struct {
		on   bool
		app  string
		want string // "" nothing, else a part of the message
	}{
		{false, "", ""},
		{true, SecureInputApp(412, "Terminal"), "while Terminal (process 412) has secure input on"},
		{true, "Terminal (process 412)", ""},
		{false, "", "off again"},
		{true, SecureInputApp(0, ""), "while an app has secure input on"},
		{false, "", "off again"},
		{true, SecureInputApp(77, ""), "while process 77 has"},
	}
	for i, st := range steps {
		got := s.Update(st.on, st.app)
		if (st.want == "") != (got == "") || !strings.Contains(got, st.want) {
			t.Errorf("step %d: Update(%v, %q) = %q, want %q", i, st.on, st.app, got, st.want)
		}
	}
}

// TestDoctorSaysWhatElseMatters: doctor's macOS checks fail as Check does
// and, when allowed, say whether --grab would be and whether secure input
// keeps keys from the tap now (README "macOS").
func TestDoctorSaysWhatElseMatters(t *testing.T) {
	all := Access{Accessibility: true, Listen: true, Post: true}
	for _, tc := range []struct {
		name   string
		a      Access
		need   Need
		secure bool
		app    string
		want   string // in the ok line, or in the error when fails
		fails  bool
	}{
		{"listen, no input monitoring", Access{Accessibility: true, Post: true}, NeedListen, false, "", PaneInputMonitoring, true},
		{"listen, grab allowed too", all, NeedListen, false, "", "Accessibility too, for --grab", false},
		{"listen, grab would be refused", Access{Listen: true}, NeedListen, false, "", "--grab would be refused (" + PaneAccessibility + ")", false},
		{"listen, secure input on", all, NeedListen, true, "loginwindow (process 88)", "secure input is on now, held by loginwindow (process 88)", false},
		{"listen, secure input by an unknown app", all, NeedListen, true, "", "held by an app", false},
		{"grab, allowed", all, NeedGrab, false, "", "keep keys from this Mac", false},
		{"post, allowed", all, NeedPost, false, "", "key events can be posted", false},
		{"post, not trusted", Access{Post: true}, NeedPost, false, "", PaneAccessibility, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := tc.a.Doctor(tc.need, "keyrelay", tc.secure, tc.app)
			if tc.fails {
				if err == nil || !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Doctor = %q, %v; want an error naming %q", ok, err, tc.want)
				}
				return
			}
			if err != nil || !strings.Contains(ok, tc.want) {
				t.Fatalf("Doctor = %q, %v; want a line with %q", ok, err, tc.want)
			}
		})
	}
}
