package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// render shows a script's steps as "+KeyA -KeyA 10ms".
func render(steps []Step) string {
	var s []string
	for _, st := range steps {
		switch {
		case st.Wait > 0:
			s = append(s, st.Wait.String())
		case st.Down:
			s = append(s, "+"+st.Code.String())
		default:
			s = append(s, "-"+st.Code.String())
		}
	}
	return strings.Join(s, " ")
}

func TestParseCommands(t *testing.T) {
	tests := []struct{ script, want string }{
		{"down KeyA\nup KeyA", "+KeyA -KeyA"},
		{"tap enter", "+Enter 10ms -Enter 10ms"},
		{"pace 0s\ntap KeyA", "+KeyA -KeyA"},
		{"hold ShiftLeft 2s", "+ShiftLeft 2s -ShiftLeft 10ms"},
		{"sleep 1.5s", "1.5s"},
		{"sleep 0s", ""},
		{"# comment\n\n   \ttap KeyB # trailing comment", "+KeyB 10ms -KeyB 10ms"},
		{"pace 0ms\ntype \"aB!\"", "+KeyA -KeyA +ShiftLeft +KeyB -KeyB -ShiftLeft +ShiftLeft +Digit1 -Digit1 -ShiftLeft"},
		{"pace 0ms\ntype \"a\\n\\t\\\"\"", "+KeyA -KeyA +Enter -Enter +Tab -Tab +ShiftLeft +Quote -Quote -ShiftLeft"},
		{"pace 0ms\ntype \"# not a comment\"", "+ShiftLeft +Digit3 -Digit3 -ShiftLeft +Space -Space +KeyN -KeyN +KeyO -KeyO +KeyT -KeyT +Space -Space +KeyA -KeyA +Space -Space +KeyC -KeyC +KeyO -KeyO +KeyM -KeyM +KeyM -KeyM +KeyE -KeyE +KeyN -KeyN +KeyT -KeyT"},
		// Capitals while the script holds Shift: no second Shift press.
		{"pace 0ms\ndown ShiftRight\ntype \"AB\"\nup ShiftRight", "+ShiftRight +KeyA -KeyA +KeyB -KeyB -ShiftRight"},
		{"DOWN keya\nUp KEYA", "+KeyA -KeyA"},
	}
	for _, tt := range tests {
		s, err := ParseScript("t.keys", strings.NewReader(tt.script))
		if err != nil {
			t.Errorf("%q: %v", tt.script, err)
			continue
		}
		if got := render(s.Steps); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.script, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ script, want string }{
		{"frobnicate KeyA", `t.keys:1: unknown command "frobnicate"`},
		{"tap", "t.keys:1: tap takes 1 argument(s), got 0"},
		{"tap KeyA KeyB", "t.keys:1: tap takes 1 argument(s), got 2"},
		{"\ntap NoSuchKey", `t.keys:2: unknown key "NoSuchKey"`},
		{"sleep soon", `t.keys:1: bad duration "soon"`},
		{"sleep -1s", "t.keys:1: duration -1s out of range"},
		{"sleep 2h", "t.keys:1: duration 2h0m0s out of range"},
		{"hold KeyA forever", `t.keys:1: bad duration "forever"`},
		{`type "unterminated`, "t.keys:1: bad quoted string"},
		{`type "x"y`, "t.keys:1: text right after the quoted string"},
		{`type "é"`, `t.keys:1: type: 'é' (character 1) has no key on the US layout`},
		{"up KeyA", "t.keys:1: KeyA is not down"},
		{"down KeyA\ndown KeyA", "t.keys:2: KeyA is already down"},
		{"down KeyA\ntap KeyA", "t.keys:2: KeyA is already down"},
		{"down ShiftLeft\ntype \"a\"", "t.keys:2: type: 'a' (character 1) needs Shift up"},
		{"down KeyA\ntype \"a\"", "t.keys:2: type: 'a' (character 1): KeyA is already down"},
	}
	for _, tt := range tests {
		_, err := ParseScript("t.keys", strings.NewReader(tt.script))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want prefix %q", tt.script, err, tt.want)
		}
	}
	// Every bad line is reported, and unknown keys wrap keys.ErrUnknownKey.
	_, err := ParseScript("-", strings.NewReader("tap KeyA\nbogus\ntap Nope\nsleep x\n"))
	for _, want := range []string{"<stdin>:2:", "<stdin>:3:", "<stdin>:4:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %s", err, want)
		}
	}
	if !errors.Is(err, keys.ErrUnknownKey) {
		t.Errorf("error does not wrap keys.ErrUnknownKey: %v", err)
	}
}

func TestHeldAtEnd(t *testing.T) {
	s, err := ParseScript("t", strings.NewReader("down ControlLeft\ndown KeyA\nup KeyA\ndown AltLeft"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.HeldAtEnd) != "[ControlLeft AltLeft]" {
		t.Errorf("HeldAtEnd = %v", s.HeldAtEnd)
	}
}

// TestPlayTiming: in virtual time, events come exactly when the script says.
func TestPlayTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := ParseScript("t", strings.NewReader("pace 5ms\ntap KeyA\nhold KeyB 2s\nsleep 1s\ndown KeyC"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var got []string
		err = s.Play(context.Background(), func(c keys.Code, down bool) error {
			got = append(got, fmt.Sprintf("%v@%v:%v", c, time.Since(start), down))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "[KeyA@0s:true KeyA@5ms:false KeyB@10ms:true KeyB@2.01s:false KeyC@3.015s:true]"
		if fmt.Sprint(got) != want {
			t.Errorf("got  %v\nwant %s", got, want)
		}
	})
}

func TestPlayStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := ParseScript("t", strings.NewReader("tap KeyA\nsleep 1h\ntap KeyB"))
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		done := make(chan error)
		go func() {
			done <- s.Play(ctx, func(keys.Code, bool) error { n++; return nil })
		}()
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Play = %v, want context.Canceled", err)
		}
		if n != 2 {
			t.Errorf("%d events before the cancel, want 2", n)
		}
		boom := errors.New("boom")
		if err := s.Play(context.Background(), func(keys.Code, bool) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("Play = %v, want the emit error", err)
		}
	})
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{"tap KeyA", "down ShiftLeft\ntype \"Hi!\"\nup ShiftLeft", "hold Enter 1s # x", "type \"a\\\"b\"", "sleep 10ms\npace 0s", "up KeyA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseScript("f", strings.NewReader(text))
		if err != nil {
			return
		}
		// A script that parses never releases an unheld key or presses a
		// held one, and reports exactly what it leaves held.
		held := map[keys.Code]bool{}
		for _, st := range s.Steps {
			if st.Wait < 0 || st.Wait > maxDuration {
				t.Fatalf("wait %v out of range", st.Wait)
			}
			if st.Wait > 0 {
				continue
			}
			if st.Code == 0 || held[st.Code] == st.Down {
				t.Fatalf("line %d: inconsistent step %+v", st.Line, st)
			}
			held[st.Code] = st.Down
		}
		n := 0
		for _, h := range held {
			if h {
				n++
			}
		}
		if n != len(s.HeldAtEnd) {
			t.Fatalf("%d keys held at the end, HeldAtEnd %v", n, s.HeldAtEnd)
		}
	})
}
