package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// render shows a script's steps as "+KeyA 10ms -KeyA".
func render(steps []Step) string {
	var s []string
	for _, st := range steps {
		switch {
		case st.Wait > 0:
			s = append(s, st.Wait.String())
		case st.Down:
			s = append(s, "+"+st.Key.String())
		default:
			s = append(s, "-"+st.Key.String())
		}
	}
	return strings.Join(s, " ")
}

func parse(t *testing.T, script string) *Script {
	t.Helper()
	s, err := ParseScript("t.keys", strings.NewReader(script))
	if err != nil {
		t.Fatalf("%q: %v", script, err)
	}
	return s
}

func TestParseCommands(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"down and up have no pace", "down KeyA\nup KeyA", "+KeyA -KeyA"},
		{"tap paces both events", "tap enter", "+Enter 10ms -Enter 10ms"},
		{"pace changes the gap", "pace 25ms\ntap KeyA\npace 0s\ntap KeyB", "+KeyA 25ms -KeyA 25ms +KeyB -KeyB"},
		{"hold waits instead of the pace", "hold ShiftLeft 2s", "+ShiftLeft 2s -ShiftLeft 10ms"},
		{"hold 0s", "pace 0s\nhold KeyA 0s", "+KeyA -KeyA"},
		{"sleep", "sleep 1.5s", "1.5s"},
		{"sleep 0s is nothing", "sleep 0s", ""},
		{"sleep 1h is the limit", "sleep 1h", "1h0m0s"},
		{"comments and blank lines", "# comment\n\n   \ttap KeyB # trailing comment\n#tap KeyC", "+KeyB 10ms -KeyB 10ms"},
		{"commands and keys in any case", "DOWN keya\nUp KEYA", "+KeyA -KeyA"},
		{"hex usages", "down 0x04\ndown 0x32\nup 0x32\nup KeyA", "+KeyA +0x32 -0x32 -KeyA"},
		{"CRLF line ends and a byte order mark", "\uFEFFdown KeyA\r\nup KeyA\r\n", "+KeyA -KeyA"},
		{"type", `type "ab"`, "+'a' 10ms -'a' 10ms +'b' 10ms -'b' 10ms"},
		{"a character key", `tap "é"`, "+'é' 10ms -'é' 10ms"},
		{"a held character", `hold "A" 2s`, "+'A' 2s -'A' 10ms"},
		{"a quoted escape", `down "\u00e9"` + "\n" + `up "é"`, "+'é' -'é'"},
		{"empty type", `type ""`, ""},
		{"X names", "down Control_L\ntap Return\ntap BackSpace\ntap LEFT\nup ctrl", "+ControlLeft +Enter 10ms -Enter 10ms +Backspace 10ms -Backspace 10ms +ArrowLeft 10ms -ArrowLeft 10ms -ControlLeft"},
		{"keypad and lock names", "pace 0s\ntap KP_Enter\ntap kp_home\ntap Caps_Lock\ntap ISO_Level3_Shift", "+NumpadEnter -NumpadEnter +Numpad7 -Numpad7 +CapsLock -CapsLock +AltRight -AltRight"},
		{"key presses in order, releases in reverse", "pace 0s\nkey ctrl+shift+t", "+ControlLeft +ShiftLeft +'t' -'t' -ShiftLeft -ControlLeft"},
		{"key reads a character unquoted, as xdotool", "pace 0s\nkey a T é", "+'a' -'a' +'T' -'T' +'é' -'é'"},
		{"so does a chord of tap", "pace 0s\ntap ctrl+c", "+ControlLeft +'c' -'c' -ControlLeft"},
		{"key paces every event", "key alt+Tab", "+AltLeft 10ms +Tab 10ms -Tab 10ms -AltLeft 10ms"},
		{"key takes several chords", "pace 0s\nkey ctrl+KeyA Delete Return", "+ControlLeft +KeyA -KeyA -ControlLeft +Delete -Delete +Enter -Enter"},
		{"tap takes a chord", "pace 0s\ntap super+KeyE", "+MetaLeft +KeyE -KeyE -MetaLeft"},
		{"a chord with a character", "pace 0s\n" + `key ctrl+"c" "é"+shift`, "+ControlLeft +'c' -'c' -ControlLeft +'é' +ShiftLeft -ShiftLeft -'é'"},
		{"a chord with hex", "pace 0s\nkey 0xE0+0x04", "+ControlLeft +KeyA -KeyA -ControlLeft"},
		{"a chord of one key is a tap", "key Return", "+Enter 10ms -Enter 10ms"},
		{"a quoted plus is a character", "pace 0s\n" + `key shift+"+"`, "+ShiftLeft +'+' -'+' -ShiftLeft"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(parse(t, tt.script).Steps); got != tt.want {
				t.Errorf("%q:\n got %s\nwant %s", tt.script, got, tt.want)
			}
		})
	}
}

// TestTypeExpansion: type sends characters, not US-layout keys (the
// receiver types each as that character whatever its layout); Enter and Tab
// are keys.
func TestTypeExpansion(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"characters, shifted or not", `type "aB!"`, "+'a' -'a' +'B' -'B' +'!' -'!'"},
		{"escapes", `type "a\n\t\"\\"`, `+'a' -'a' +Enter -Enter +Tab -Tab +'"' -'"' +'\\' -'\\'`},
		{"unicode escape of ASCII", `type "\u0041\x62"`, "+'A' -'A' +'b' -'b'"},
		{"# inside quotes is text, a space the Space key", `type "# x" # y`, "+'#' -'#' +Space -Space +'x' -'x'"},
		{"text beyond ASCII", `type "Grüße é €"`, "+'G' -'G' +'r' -'r' +'ü' -'ü' +'ß' -'ß' +'e' -'e' +Space -Space +'é' -'é' +Space -Space +'€' -'€'"},
		{"other spaces are characters", "type \"a\u00a0b\"", `+'a' -'a' +'\u00a0' -'\u00a0' +'b' -'b'`},
		{"beyond the BMP", `type "😀"`, "+'😀' -'😀'"},
		// Held modifiers stay held: the receiver applies Ctrl or Alt to the
		// characters (Ctrl+C); it types a character as itself whatever
		// Shift does.
		{"held modifiers stay held", "down ControlLeft\ntype \"cC\"\nup ControlLeft", "+ControlLeft +'c' -'c' +'C' -'C' -ControlLeft"},
		{"held Shift stays held", "down ShiftLeft\ntype \"Ab\"\nup ShiftLeft", "+ShiftLeft +'A' -'A' +'b' -'b' -ShiftLeft"},
		{"a held key does not matter", "down KeyA\ntype \"a\"\nup KeyA", "+KeyA +'a' -'a' -KeyA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(parse(t, "pace 0s\n"+tt.script).Steps); got != tt.want {
				t.Errorf("%q:\n got %s\nwant %s", tt.script, got, tt.want)
			}
		})
	}
	// The pace follows every event type generates.
	if got, want := render(parse(t, "pace 5ms\ntype \"A\\n\"").Steps), "+'A' 5ms -'A' 5ms +Enter 5ms -Enter 5ms"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestStepLines: each step carries the line that made it.
func TestStepLines(t *testing.T) {
	s := parse(t, "# c\ntap KeyA\n\nsleep 1s")
	var lines []int
	for _, st := range s.Steps {
		lines = append(lines, st.Line)
	}
	if fmt.Sprint(lines) != "[2 2 2 2 4]" {
		t.Errorf("lines %v", lines)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"unknown command", "frobnicate KeyA", `t.keys:1: unknown command "frobnicate" (want down, up, tap, key, hold, sleep, type or pace)`},
		{"too few arguments", "tap", "t.keys:1: wrong number of arguments: tap takes 1, got 0 (usage: tap KEY, or tap CHORD; key takes several)"},
		{"too many arguments", "tap KeyA KeyB", "t.keys:1: wrong number of arguments: tap takes 1, got 2 (usage: tap KEY, or tap CHORD; key takes several)"},
		{"hold without duration", "hold KeyA", "t.keys:1: wrong number of arguments: hold takes 2, got 1 (usage: hold KEY DURATION)"},
		{"type of two strings", `type "a" "b"`, `t.keys:1: wrong number of arguments: type takes 1, got 2 (usage: type "TEXT")`},
		{"unknown key", "\ntap NoSuchKey", `t.keys:2: unknown key "NoSuchKey" (use a W3C KeyboardEvent.code name such as KeyA, ShiftLeft, Enter, ArrowUp, F5, an X name such as Return, ctrl, Page_Up, or a usage such as 0x04; see 'keyrelay keys')`},
		{"a misspelt key", "tap Retrun", `t.keys:1: unknown key "Retrun" (did you mean Return? use a W3C KeyboardEvent.code name such as KeyA, ShiftLeft, Enter, ArrowUp, F5, an X name such as Return, ctrl, Page_Up, or a usage such as 0x04; see 'keyrelay keys')`},
		{"a letter unquoted", "tap a", `t.keys:1: unknown key a: did you mean KeyA (the key) or the character "a" (a character goes in double quotes: tap "a", type "a")?`},
		{"a character unquoted", "down é", `t.keys:1: unknown key é: did you mean the character "é" (a character goes in double quotes: tap "é", type "é")?`},
		{"a plus unquoted", "tap +", `t.keys:1: unknown key +: did you mean Equal (the key) or the character "+" (a character goes in double quotes: tap "+", type "+")?`},
		{"key without a chord", "key", "t.keys:1: wrong number of arguments: key takes one or more, got 0 (usage: key CHORD...)"},
		{"a chord for down", "down ctrl+KeyC", "t.keys:1: down takes one key, not a chord (ctrl+KeyC): key CHORD or tap CHORD presses a chord"},
		{"a chord of a character for hold", `hold ctrl+"c" 1s`, `t.keys:1: hold takes one key, not a chord (ctrl+"c"): key CHORD or tap CHORD presses a chord`},
		{"a chord with an empty key", "key ctrl++t", "t.keys:1: bad chord ctrl++t at column 5: a key is missing before or after a + (join keys with +: ctrl+shift+t)"},
		{"a chord ending in +", "tap ctrl+", "t.keys:1: bad chord ctrl+ at column 5: a key is missing before or after a + (join keys with +: ctrl+shift+t)"},
		{"a chord with a key twice", "key ctrl+Control_L", "t.keys:1: bad chord ctrl+Control_L at column 5: ControlLeft twice"},
		{"a chord with an unknown key", "key ctrl+Retrun", `t.keys:1: unknown key "Retrun" (did you mean Return? use a W3C KeyboardEvent.code name such as KeyA, ShiftLeft, Enter, ArrowUp, F5, an X name such as Return, ctrl, Page_Up, or a usage such as 0x04; see 'keyrelay keys')`},
		{"a chord of a held key", "down ShiftLeft\nkey ctrl+shift+t", "t.keys:2: ShiftLeft is already down"},
		{"a held character in a chord", "down \"t\"\nkey ctrl+t", "t.keys:2: 't' is already down"},
		{"several bad chords of one line", "key ctrl++t Retrun", "t.keys:1: bad chord ctrl++t at column 5: a key is missing before or after a + (join keys with +: ctrl+shift+t)\nt.keys:1: unknown key \"Retrun\" (did you mean Return? use a W3C KeyboardEvent.code name such as KeyA, ShiftLeft, Enter, ArrowUp, F5, an X name such as Return, ctrl, Page_Up, or a usage such as 0x04; see 'keyrelay keys')"},
		{"a quoted chord for type", `type "a"+"b"`, `t.keys:1: bad quoted string at column 6: type wants "text" in double quotes, got "a"+"b"`},
		{"bad duration", "sleep soon", `t.keys:1: bad duration "soon" (use Go syntax such as 250ms, 1.5s, 2m)`},
		{"duration without unit", "pace 10", `t.keys:1: bad duration "10" (use Go syntax such as 250ms, 1.5s, 2m)`},
		{"negative duration", "sleep -1s", `t.keys:1: bad duration "-1s": out of range 0s to 1h0m0s`},
		{"duration over 1h", "pace 61m", `t.keys:1: bad duration "61m": out of range 0s to 1h0m0s`},
		{"bad hold duration", "hold KeyA forever", `t.keys:1: bad duration "forever" (use Go syntax such as 250ms, 1.5s, 2m)`},
		{"unterminated string", `type "abc`, `t.keys:1: bad quoted string at column 6: "abc (use Go syntax: "text", with \" for a quote and \n for Enter)`},
		{"bad escape", `type "a\qb"`, `t.keys:1: bad quoted string at column 6: "a\qb" (use Go syntax: "text", with \" for a quote and \n for Enter)`},
		{"text after the quote", `type "x"y`, `t.keys:1: bad quoted string at column 6: text right after its closing quote: "x"y`},
		{"unquoted text", "type hello", `t.keys:1: bad quoted string at column 6: type wants "text" in double quotes, got hello`},
		{"single quotes", "type 'a'", `t.keys:1: bad quoted string at column 6: type wants "text" in double quotes, got 'a'`},
		{"a control character", `  type "n\x1b"`, `t.keys:1: type: '\x1b' at column 10 is a control character, not text: use tap with its key (Enter, Tab, Backspace, Escape)`},
		{"a byte, not a character", `type "ab\xff"`, `t.keys:1: type: byte \xff at column 9 is not a character (the text must be UTF-8)`},
		{"two characters as a key", `tap "ab"`, `t.keys:1: bad character at column 5: "ab" is not one character (type "text" types text)`},
		{"no character as a key", `down ""`, `t.keys:1: bad character at column 6: "" is not one character (type "text" types text)`},
		{"a control character as a key", `tap "\n"`, `t.keys:1: bad character at column 5: U+000A is a control character, not text; name its key instead (Enter, Tab, Backspace, Escape)`},
		{"up of a character not down", `up "a"`, `t.keys:1: 'a' is not down`},
		{"up of a key not down", "up KeyA", "t.keys:1: KeyA is not down"},
		{"up twice", "down KeyA\nup KeyA\nup KeyA", "t.keys:3: KeyA is not down"},
		{"down of a held key", "down KeyA\ndown KeyA", "t.keys:2: KeyA is already down"},
		{"tap of a held key", "down KeyA\ntap keya", "t.keys:2: KeyA is already down"},
		{"hold of a held key", "down KeyA\nhold KeyA 1s", "t.keys:2: KeyA is already down"},
		{"same key by hex", "down KeyA\ndown 0x04", "t.keys:2: KeyA is already down"},
		{"type of a held character", "down \"a\"\ntype \"ba\"", "t.keys:2: type: 'a' at column 8: 'a' is already down"},
		{"type of a held Enter", "down Enter\ntype \"\\n\"", "t.keys:2: type: '\\n' at column 7: Enter is already down"},
		{"type does not release a held Shift", "down ShiftLeft\ntype \"A\"\nup ShiftLeft\nup ShiftLeft", "t.keys:4: ShiftLeft is not down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScript("t.keys", strings.NewReader(tt.script))
			if err == nil || err.Error() != tt.want {
				t.Errorf("%q:\n got %v\nwant %s", tt.script, err, tt.want)
			}
		})
	}
}

// TestErrorsCollected: every bad line is reported, in order, and the good
// lines around them are still checked.
func TestErrorsCollected(t *testing.T) {
	script := strings.Join([]string{
		"tap KeyA",          // 1 fine
		"bogus",             // 2 unknown command
		"tap Nope",          // 3 unknown key
		"sleep x",           // 4 bad duration
		"down KeyB KeyC",    // 5 arguments; KeyB is not pressed
		"up KeyB",           // 6 so this is bad too
		`type "a\x01b\x02"`, // 7 both control characters reported
		"down ShiftLeft",    // 8 fine
		"down ShiftLeft",    // 9 already down
		`up "x"`,            // 10 not down
		"up ShiftLeft",      // 11 fine: ShiftLeft was pressed once
		"up ShiftLeft",      // 12 not down
	}, "\n")
	_, err := ParseScript("-", strings.NewReader(script))
	if err == nil {
		t.Fatal("no error")
	}
	var got []string
	for _, l := range strings.Split(err.Error(), "\n") {
		got = append(got, strings.SplitN(l, ": ", 2)[0])
	}
	want := "<stdin>:2 <stdin>:3 <stdin>:4 <stdin>:5 <stdin>:6 <stdin>:7 <stdin>:7 <stdin>:9 <stdin>:10 <stdin>:12"
	if strings.Join(got, " ") != want {
		t.Errorf("errors at %v, want %s; error:\n%v", got, want, err)
	}
	if !errors.Is(err, keys.ErrUnknownKey) {
		t.Errorf("error does not wrap keys.ErrUnknownKey: %v", err)
	}
	for _, part := range []string{`'\x01' at column 8`, `'\x02' at column 13`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error does not name %s: %v", part, err)
		}
	}
}

func TestLineTooLong(t *testing.T) {
	script := "tap KeyA\ntype \"" + strings.Repeat("a", maxLine) + "\"\n"
	_, err := ParseScript("big.keys", strings.NewReader(script))
	if err == nil || !strings.HasPrefix(err.Error(), "big.keys:2: line longer than") {
		t.Errorf("error %v, want big.keys:2: line longer than ...", err)
	}
}

func TestHeldAtEnd(t *testing.T) {
	s := parse(t, "down ControlLeft\ndown KeyA\nup KeyA\ndown AltLeft\nup ControlLeft\ndown ControlLeft")
	if fmt.Sprint(s.HeldAtEnd) != "[AltLeft ControlLeft]" {
		t.Errorf("HeldAtEnd = %v, want [AltLeft ControlLeft]", s.HeldAtEnd)
	}
	if s := parse(t, "down ShiftLeft\ntype \"A\""); fmt.Sprint(s.HeldAtEnd) != "[ShiftLeft]" {
		t.Errorf("HeldAtEnd = %v, want [ShiftLeft]", s.HeldAtEnd)
	}
	if s := parse(t, "tap KeyA\ntype \"A\""); len(s.HeldAtEnd) != 0 {
		t.Errorf("HeldAtEnd = %v, want none", s.HeldAtEnd)
	}
	if s, _ := ParseScript("-", strings.NewReader("")); s.Name != "<stdin>" {
		t.Errorf("Name = %q, want <stdin>", s.Name)
	}
}

// TestExampleScripts: the scripts shipped in testdata/scripts parse and
// release every key they press.
func TestExampleScripts(t *testing.T) {
	files, err := filepath.Glob("../testdata/scripts/*.keys")
	if err != nil || len(files) < 2 {
		t.Fatalf("example scripts: %v %v", files, err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseScript(name, f)
		f.Close()
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(s.HeldAtEnd) > 0 {
			t.Errorf("%s leaves %v held", name, s.HeldAtEnd)
		}
	}
	// And so does the example in the format's documentation.
	doc, err := os.ReadFile("SCRIPT_FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n```\n")
	block, _, ok2 := strings.Cut(block, "\n```")
	if !ok || !ok2 {
		t.Fatal("no example in SCRIPT_FORMAT.md")
	}
	s, err := ParseScript("SCRIPT_FORMAT.md", strings.NewReader(block))
	if err != nil || len(s.Steps) < 10 || len(s.HeldAtEnd) > 0 {
		t.Errorf("SCRIPT_FORMAT.md example: %v", err)
	}
}

// play runs s in the current synctest bubble and records each event as
// "+KeyA@10ms" (virtual time since the start).
func play(t *testing.T, s *Script) []string {
	t.Helper()
	start := time.Now()
	var got []string
	err := s.Play(context.Background(), func(c keys.Key, down bool) error {
		sign := "-"
		if down {
			sign = "+"
		}
		got = append(got, fmt.Sprintf("%s%v@%v", sign, c, time.Since(start)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPlayTiming: in virtual time, events come exactly when the script says.
func TestPlayTiming(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"hold releases exactly DURATION after the press", "hold KeyA 2s", "[+KeyA@0s -KeyA@2s]"},
		{"tap and type are paced", "pace 5ms\ntap KeyA\ntype \"B\"", "[+KeyA@0s -KeyA@5ms +'B'@10ms -'B'@15ms]"},
		{"default pace", "tap KeyA\ntap KeyB", "[+KeyA@0s -KeyA@10ms +KeyB@20ms -KeyB@30ms]"},
		{"down and up are not paced", "down KeyA\ndown KeyB\nup KeyA\nup KeyB", "[+KeyA@0s +KeyB@0s -KeyA@0s -KeyB@0s]"},
		{"sleep", "pace 5ms\ntap KeyA\nhold KeyB 2s\nsleep 1s\ndown KeyC", "[+KeyA@0s -KeyA@5ms +KeyB@10ms -KeyB@2.01s +KeyC@3.015s]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if got := fmt.Sprint(play(t, parse(t, tt.script))); got != tt.want {
					t.Errorf("got  %s\nwant %s", got, tt.want)
				}
			})
		})
	}
}

func TestPlayStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := parse(t, "tap KeyA\nsleep 1h\ntap KeyB")
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		var events []string
		var stopped time.Duration
		done := make(chan error)
		go func() {
			err := s.Play(ctx, func(c keys.Key, down bool) error {
				events = append(events, fmt.Sprint(c, down))
				return nil
			})
			stopped = time.Since(start)
			done <- err
		}()
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Play = %v, want context.Canceled", err)
		}
		if stopped != time.Minute {
			t.Errorf("Play returned %v after the start, want at the cancel (1m)", stopped)
		}
		if fmt.Sprint(events) != "[KeyA true KeyA false]" {
			t.Errorf("events before the cancel: %v", events)
		}
	})
}

func TestPlayCancelledEmitsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := parse(t, "down KeyA")
	err := s.Play(ctx, func(keys.Key, bool) error {
		t.Error("emit called")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Play = %v, want context.Canceled", err)
	}
}

func TestPlayStopsOnEmitError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := parse(t, "tap KeyA\ntap KeyB")
		boom := errors.New("boom")
		n := 0
		err := s.Play(context.Background(), func(keys.Key, bool) error {
			n++
			if n == 2 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || n != 2 {
			t.Errorf("Play = %v after %d events, want boom after 2", err, n)
		}
	})
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{"tap KeyA", "down ShiftLeft\ntype \"Hi!\"\nup ShiftLeft", "hold Enter 1s # x", "type \"a\\\"b\"", "sleep 10ms\npace 0s", "up KeyA",
		"type \"Grüße é €\\n\"", "down \"é\"\ntap KeyA\nup \"é\"", "hold \"😀\" 1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseScript("f", strings.NewReader(text))
		checkStream(t, text, s, err)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error without the script name: %v", err)
			}
			return
		}
		// Replaying the steps keeps a consistent held set: never an up of
		// an unheld key, never a down of a held one; and HeldAtEnd is
		// exactly what is left held.
		held := map[keys.Key]bool{}
		last := 0
		for _, st := range s.Steps {
			if r, ok := st.Key.Char(); ok && st.Wait == 0 && !keys.ValidChar(r) {
				t.Fatalf("step %+v: %U is not a valid character", st, r)
			}
			if st.Line < last || st.Line < 1 {
				t.Fatalf("step %+v after line %d", st, last)
			}
			last = st.Line
			if st.Wait < 0 || st.Wait > maxDuration {
				t.Fatalf("line %d: wait %v out of range", st.Line, st.Wait)
			}
			if st.Wait > 0 {
				continue
			}
			if st.Key == 0 || held[st.Key] == st.Down {
				t.Fatalf("line %d: inconsistent step %+v (held %v)", st.Line, st, held[st.Key])
			}
			held[st.Key] = st.Down
		}
		left := map[keys.Key]bool{}
		for c, h := range held {
			if h {
				left[c] = true
			}
		}
		for _, c := range s.HeldAtEnd {
			if !left[c] {
				t.Fatalf("HeldAtEnd %v lists %v, not held (or twice)", s.HeldAtEnd, c)
			}
			delete(left, c)
		}
		if len(left) > 0 {
			t.Fatalf("HeldAtEnd %v misses %v", s.HeldAtEnd, left)
		}
	})
}

// checkStream plays text as a ScriptStream: a script that parses plays the
// same key events as its steps, and one that does not ends with the errors
// of its first bad line, as ParseScript reports them.
func checkStream(t *testing.T, text string, s *Script, parseErr error) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		rec := playStream(t.Context(), "f", strings.NewReader(text))
		err := <-rec.done
		if parseErr == nil {
			if err != nil {
				t.Fatalf("ParseScript took it, the stream failed: %v", err)
			}
			var want []string
			for _, st := range s.Steps {
				switch {
				case st.Wait > 0:
				case st.Down:
					want = append(want, "+"+st.Key.String())
				default:
					want = append(want, "-"+st.Key.String())
				}
			}
			if g, w := strings.Join(rec.events, " "), strings.Join(want, " "); g != w {
				t.Fatalf("stream played %q, the parsed script %q", g, w)
			}
			return
		}
		all := strings.Split(parseErr.Error(), "\n")
		prefix, _, _ := strings.Cut(all[0], ": ")
		var first []string
		for _, l := range all {
			if strings.HasPrefix(l, prefix+": ") {
				first = append(first, l)
			}
		}
		if err == nil || err.Error() != strings.Join(first, "\n") {
			t.Fatalf("stream ended with %v, want the first bad line's errors:\n%s", err, strings.Join(first, "\n"))
		}
	})
}

// TestFormatNamesEveryAlias: `keyrelay help script` (SCRIPT_FORMAT.md)
// names every alias keys.Parse takes, so none is accepted unseen.
func TestFormatNamesEveryAlias(t *testing.T) {
	doc := strings.ToLower(ScriptFormat)
	for a := range keys.Aliases() {
		if !strings.Contains(doc, "`"+strings.ToLower(a)+"`") {
			t.Errorf("SCRIPT_FORMAT.md does not name the alias %s", a)
		}
	}
}
