package capture

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/muesli/cancelreader"

	"github.com/keyrelay/keyrelay/keys"
)

// relayBytes decodes input as the terminal source does (ultraviolet's
// TerminalReader) and relays it, with the kitty protocol on or off. Key
// events come back as "+key" (down) and "-key" (up); "end" marks Ctrl+] or
// the end of input, after which everything still held is released, as at
// the end of a session.
func relayBytes(t testing.TB, input []byte, kitty bool) ([]string, *relayer) {
	t.Helper()
	var got []string
	r := &relayer{kitty: kitty, emit: func(k keys.Key, down bool) error {
		sign := "-"
		if down {
			sign = "+"
		}
		got = append(got, sign+k.String())
		return nil
	}}
	ended := false
	for ev := range decodeBytes(input) {
		if ended {
			continue // drained: nothing after Ctrl+] is relayed
		}
		end, err := r.event(ev)
		if err != nil {
			t.Fatalf("event %v: %v", ev, err)
		}
		ended = end
	}
	got = append(got, "end")
	if err := r.releaseAll(); err != nil {
		t.Fatal(err)
	}
	return got, r
}

// decodeBytes decodes input as Play decodes its terminal (streamEvents),
// until the input ends.
func decodeBytes(input []byte) <-chan uv.Event {
	events := make(chan uv.Event)
	br := bytes.NewReader(input)
	go func() {
		streamEvents(context.Background(), func() (cancelreader.CancelReader, error) {
			return cancelreader.NewReader(br)
		}, "xterm-256color", events)
		close(events)
	}()
	return events
}

// taps renders keys tapped one after another, each a chord of modifiers
// and key written "ControlLeft+'c'".
func taps(chords ...string) string {
	var out []string
	for _, c := range chords {
		ks := strings.Split(c, "+")
		for _, k := range ks {
			out = append(out, "+"+k)
		}
		for i := len(ks) - 1; i >= 0; i-- {
			out = append(out, "-"+ks[i])
		}
	}
	return strings.Join(out, " ")
}

// textTaps renders text tapped as characters, a space as Space.
func textTaps(text string) string {
	var chords []string
	for _, c := range text {
		if c == ' ' {
			chords = append(chords, "Space")
		} else {
			chords = append(chords, fmt.Sprintf("%q", c))
		}
	}
	return taps(chords...)
}

// legacyCases are terminal input without the kitty protocol and the taps it
// must give (Terminal's doc: the terminal source misses nothing a terminal
// can tell, and sends nothing that was not typed).
var legacyCases = []struct {
	name, in, want string
	dropped        int
}{
	{"Alt+x", "\x1bx", taps("AltLeft+'x'"), 0},
	{"Alt+Shift+x carries its case", "\x1bX", taps("AltLeft+'X'"), 0},
	{"Alt+é", "\x1bé", taps("AltLeft+'é'"), 0},
	{"Ctrl+Up", "\x1b[1;5A", taps("ControlLeft+ArrowUp"), 0},
	{"Shift+Up", "\x1b[1;2A", taps("ShiftLeft+ArrowUp"), 0},
	{"Alt+Up", "\x1b[1;3A", taps("AltLeft+ArrowUp"), 0},
	{"Ctrl+Shift+Left", "\x1b[1;6D", taps("ControlLeft+ShiftLeft+ArrowLeft"), 0},
	{"Ctrl+Right in SS3 form", "\x1bOc", taps("ControlLeft+ArrowRight"), 0},
	{"arrows CSI and SS3", "\x1b[A\x1bOB\x1b[C\x1bOD", taps("ArrowUp", "ArrowDown", "ArrowRight", "ArrowLeft"), 0},
	{"Home and End CSI H/F", "\x1b[H\x1b[F", taps("Home", "End"), 0},
	{"Home and End SS3 H/F", "\x1bOH\x1bOF", taps("Home", "End"), 0},
	{"Home and End CSI 1~/4~ (tmux)", "\x1b[1~\x1b[4~", taps("Home", "End"), 0},
	{"Home and End CSI 7~/8~ (rxvt)", "\x1b[7~\x1b[8~", taps("Home", "End"), 0},
	{"Ctrl+Home", "\x1b[1;5H", taps("ControlLeft+Home"), 0},
	{"PageUp PageDown", "\x1b[5~\x1b[6~", taps("PageUp", "PageDown"), 0},
	{"Insert Delete", "\x1b[2~\x1b[3~", taps("Insert", "Delete"), 0},
	{"Ctrl+Delete", "\x1b[3;5~", taps("ControlLeft+Delete"), 0},
	{"F1-F4 SS3", "\x1bOP\x1bOQ\x1bOR\x1bOS", taps("F1", "F2", "F3", "F4"), 0},
	{"F1-F4 CSI 11~-14~", "\x1b[11~\x1b[12~\x1b[13~\x1b[14~", taps("F1", "F2", "F3", "F4"), 0},
	{"F5-F12", "\x1b[15~\x1b[17~\x1b[18~\x1b[19~\x1b[20~\x1b[21~\x1b[23~\x1b[24~",
		taps("F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12"), 0},
	{"Shift+F5", "\x1b[15;2~", taps("ShiftLeft+F5"), 0},
	{"Ctrl+F3 (CSI 1;5R is no cursor report)", "\x1b[1;5R", taps("ControlLeft+F3"), 0},
	{"Shift+Tab", "\x1b[Z", taps("ShiftLeft+Tab"), 0},
	{"Enter Tab Backspace", "\r\t\x7f", taps("Enter", "Tab", "Backspace"), 0},
	{"Ctrl+A Ctrl+C Ctrl+Z", "\x01\x03\x1a", taps("ControlLeft+'a'", "ControlLeft+'c'", "ControlLeft+'z'"), 0},
	{"Ctrl+Space", "\x00", taps("ControlLeft+Space"), 0},
	{"Ctrl+Alt+c", "\x1b\x03", taps("ControlLeft+AltLeft+'c'"), 0},
	{"UTF-8 text", "zy;[ Grüße, é € x/y=z?", textTaps("zy;[ Grüße, é € x/y=z?"), 0},
	{"unknown sequence then keys", "\x1b[99z" + "ab\x1b[A", taps("'a'", "'b'", "ArrowUp"), 1},
	{"unknown SS3 then keys", "\x1bO~" + "a", taps("'a'"), 1},
	{"lone Escape", "\x1b", taps("Escape"), 0},
	{"invalid UTF-8 then keys", "\xffa", taps("'a'"), 1},
	{"mouse report then keys", "\x1b[<0;10;5M" + "q", taps("'q'"), 1},
	{"focus report", "\x1b[I", "", 1},
	{"terminal reply", "\x1b]11;rgb:0000/0000/0000\x07" + "x", taps("'x'"), 1},
	{"bracketed paste", "\x1b[200~a b\r\nc\td\x1b[201~", taps("'a'", "Space", "'b'", "Enter", "'c'", "Tab", "'d'"), 0},
	{"Ctrl+] ends", "a\x1dbc", taps("'a'"), 0},
	// ultraviolet panics on this (8-bit CSI, X10 mouse): the input is lost,
	// counted, and decoding goes on.
	{"decoder panic survived", "\x9bM\x9b\x9b\x9b", "", 1},
}

// TestTerminalBackspaceBS: a terminal whose Backspace sends BS (stty erase
// ^H) relays Backspace for it; elsewhere BS is Ctrl+H, as the decoder reads it.
func TestTerminalBackspaceBS(t *testing.T) {
	for _, tc := range []struct {
		eraseBS bool
		want    string
	}{{false, taps("ControlLeft+'h'", "Backspace")}, {true, taps("Backspace", "Backspace")}} {
		var got []string
		r := &relayer{eraseBS: tc.eraseBS, emit: func(k keys.Key, down bool) error {
			sign := "-"
			if down {
				sign = "+"
			}
			got = append(got, sign+k.String())
			return nil
		}}
		for ev := range decodeBytes([]byte("\x08\x7f")) {
			if _, err := r.event(ev); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("erase BS %v: got %s, want %s", tc.eraseBS, strings.Join(got, " "), tc.want)
		}
	}
}

func TestTerminalLegacyTaps(t *testing.T) {
	for _, tc := range legacyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, r := relayBytes(t, []byte(tc.in), false)
			want := strings.TrimSpace(tc.want + " end")
			if strings.Join(got, " ") != want {
				t.Errorf("input %q:\n got %s\nwant %s", tc.in, strings.Join(got, " "), want)
			}
			if r.dropped != tc.dropped {
				t.Errorf("input %q: %d inputs dropped, want %d (note %q)", tc.in, r.dropped, tc.dropped, r.note)
			}
		})
	}
}

// kittyCases are kitty keyboard protocol input (flags 27 pushed) and the
// presses and releases it must give (Terminal's doc).
var kittyCases = []struct {
	name, in, want string
}{
	{"press and release with text", "\x1b[97;;97u\x1b[97;1:3u", "+'a' -'a' end"},
	{"repeats dropped", "\x1b[97;1;97u\x1b[97;1:2;97u\x1b[97;1:2;97u\x1b[97;1:3u", "+'a' -'a' end"},
	{"held key stays down until its release", "\x1b[97;1;97u\x1b[98;1;98u\x1b[97;1:3u", "+'a' +'b' -'a' end -'b'"},
	{"Shift and a shifted character", "\x1b[57441;2u\x1b[97;2;65u\x1b[97;2:3u\x1b[57441;1:3u",
		"+ShiftLeft +'A' -'A' -ShiftLeft end"},
	{"Shift+1 is '!', released by its key", "\x1b[57441;2u\x1b[49;2;33u\x1b[57441;1:3u\x1b[49;1:3u",
		"+ShiftLeft +'!' -ShiftLeft -'!' end"},
	{"Ctrl+c", "\x1b[57442;5u\x1b[99;5u\x1b[99;5:3u\x1b[57442;1:3u", "+ControlLeft +'c' -'c' -ControlLeft end"},
	{"Alt+x without text", "\x1b[57443;3u\x1b[120;3u\x1b[120;3:3u\x1b[57443;1:3u", "+AltLeft +'x' -'x' -AltLeft end"},
	{"right modifiers and Super", "\x1b[57448;5u\x1b[57447;6u\x1b[57444;14u\x1b[57444;6:3u\x1b[57447;5:3u\x1b[57448;1:3u",
		"+ControlRight +ShiftRight +MetaLeft -MetaLeft -ShiftRight -ControlRight end"},
	{"AltGr not relayed, its character is", "\x1b[57453u\x1b[101;;8364u\x1b[101;1:3u\x1b[57453;1:3u", "+'€' -'€' end"},
	{"lock keys not relayed", "\x1b[57358u\x1b[57358;65:3u\x1b[57360u\x1b[57360;129:3u", "end"},
	{"arrow press and release", "\x1b[A\x1b[1;1:3A", "+ArrowUp -ArrowUp end"},
	{"Shift+Up: Shift is its own key", "\x1b[57441;2u\x1b[1;2A\x1b[1;2:3A\x1b[57441;1:3u", "+ShiftLeft +ArrowUp -ArrowUp -ShiftLeft end"},
	{"F5 and F1", "\x1b[15~\x1b[15;1:3~\x1b[P\x1b[1;1:3P", "+F5 -F5 +F1 -F1 end"},
	{"Enter Tab Backspace Escape", "\x1b[13u\x1b[13;1:3u\x1b[9u\x1b[9;1:3u\x1b[127u\x1b[127;1:3u\x1b[27u\x1b[27;1:3u",
		"+Enter -Enter +Tab -Tab +Backspace -Backspace +Escape -Escape end"},
	{"Space", "\x1b[32;;32u\x1b[32;1:3u", "+Space -Space end"},
	{"keypad Enter and a keypad digit", "\x1b[57414u\x1b[57414;1:3u\x1b[57400;;49u\x1b[57400;1:3u",
		"+NumpadEnter -NumpadEnter +'1' -'1' end"},
	{"release of a key pressed before", "\x1b[13;1:3u\x1b[98;1:3u", "end"},
	{"unknown functional key dropped, keys survive", "\x1b[57500u\x1b[97;;97u\x1b[97;1:3u", "+'a' -'a' end"},
	{"Ctrl+] ends and releases Ctrl", "\x1b[57442;5u\x1b[93;5u\x1b[97;5u", "+ControlLeft end -ControlLeft"},
	{"paste is typed", "\x1b[200~hi\x1b[201~", "+'h' -'h' +'i' -'i' end"},
}

func TestTerminalKittyPressesAndReleases(t *testing.T) {
	for _, tc := range kittyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := relayBytes(t, []byte(tc.in), true)
			if strings.Join(got, " ") != tc.want {
				t.Errorf("input %q:\n got %s\nwant %s", tc.in, strings.Join(got, " "), tc.want)
			}
		})
	}
}

// TestTerminalNotesDroppedInput: what is not relayed is counted and said on
// the status line, and the final line counts it (Terminal's doc).
func TestTerminalNotesDroppedInput(t *testing.T) {
	_, r := relayBytes(t, []byte("\x1b[99z"), false)
	var b bytes.Buffer
	term := &Terminal{Label: "host:1", Status: &b}
	term.status(r, modeTaps)
	term.endStatus(r)
	out := b.String()
	for _, want := range []string{"Ctrl+] ends", "0 keys sent", "taps", "1 not relayed", `unknown sequence "\x1b[99z" not sent`, "not relayed: 1 (last: unknown sequence"} {
		if !strings.Contains(out, want) {
			t.Errorf("status %q lacks %q", out, want)
		}
	}
}

// FuzzTerminalInput: whatever bytes a terminal sends, in either mode, the
// source never panics, never releases a key it did not press nor presses one
// twice, sends only valid characters, and leaves nothing held once the
// session ends (Terminal's doc; DESIGN.md invariant 2).
func FuzzTerminalInput(f *testing.F) {
	for _, tc := range legacyCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range kittyCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, kitty := range []bool{false, true} {
			held := map[keys.Key]bool{}
			r := &relayer{kitty: kitty, emit: func(k keys.Key, down bool) error {
				if c, ok := k.Char(); ok && !keys.ValidChar(c) {
					t.Fatalf("kitty %v: invalid character %U sent", kitty, c)
				}
				if c, ok := k.Code(); !k.IsChar() && (!ok || c == 0) {
					t.Fatalf("kitty %v: key %#x is neither a key nor a character", kitty, uint32(k))
				}
				if down == held[k] {
					t.Fatalf("kitty %v: %v down=%v while held=%v", kitty, k, down, held[k])
				}
				held[k] = down
				return nil
			}}
			ended := false
			for ev := range decodeBytes(in) {
				if !ended {
					var err error
					if ended, err = r.event(ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := r.releaseAll(); err != nil {
				t.Fatal(err)
			}
			for k, down := range held {
				if down {
					t.Fatalf("kitty %v: %v still held after the end", kitty, k)
				}
			}
			if len(r.held) != 0 {
				t.Fatalf("kitty %v: relayer still holds %v", kitty, r.held)
			}
		}
	})
}
