package darwin

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// TestRecordingsDecode decodes each recording under testdata/recordings
// (the events a tap hands over, as text) and checks that each event
// relays exactly the key events written after it ("=> KeyA down"): keys
// are HID usages, or EvdevBase + evdev for fn (PROTOCOL.md §3.1).
func TestRecordingsDecode(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "recordings", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var d Decoder
			var got []Change
			var last string
			check := func(want []Change) {
				if !slices.Equal(got, want) {
					t.Errorf("after %q: relayed %v, want %v", last, got, want)
				}
			}
			var want []Change
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := strings.TrimSpace(sc.Text())
				switch {
				case line == "" || strings.HasPrefix(line, "#"):
				case strings.HasPrefix(line, "=>"):
					f := strings.Fields(strings.TrimPrefix(line, "=>"))
					if len(f) != 2 || (f[1] != "down" && f[1] != "up") {
						t.Fatalf("line %d: %q: want => KEY down|up", n, line)
					}
					c, err := keys.Parse(f[0])
					if err != nil {
						t.Fatalf("line %d: %v", n, err)
					}
					want = append(want, Change{c, f[1] == "down"})
				default:
					if last != "" {
						check(want)
					}
					ev, err := ParseEvent(line)
					if err != nil {
						t.Fatalf("line %d: %v", n, err)
					}
					got, want, last = d.Decode(ev).Changes, nil, line
				}
			}
			check(want)
			if held := d.Held(); len(held) != 0 {
				t.Errorf("held at the end: %v", held)
			}
		})
	}
}

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Event
		err  bool
	}{
		{"keydown 0x00 0x20102", Event{KeyDown, 0, 0x20102, false}, false},
		{"keydown 0x22 0x100 repeat", Event{KeyDown, 0x22, 0x100, true}, false},
		{"  flags 0x3c   0x20104 ", Event{FlagsChanged, 0x3C, 0x20104, false}, false},
		{"keyup 0x7e 0xa00100", Event{KeyUp, 0x7E, 0xa00100, false}, false},
		{"tap-off-timeout", Event{Type: TapDisabledByTimeout}, false},
		{"tap-off-input", Event{Type: TapDisabledByUserInput}, false},
		{"type=1 0x00 0x0", Event{Type: 1}, false},
		{"", Event{}, true},
		{"keydown", Event{}, true},
		{"keydown 0 0x100", Event{}, true},
		{"keydown 0x10000 0x100", Event{}, true},
		{"keydown 0x00 0x100 again", Event{}, true},
		{"keydown 0x00 0x100 repeat x", Event{}, true},
		{"tap-off-timeout 0x00", Event{}, true},
		{"type=10 0x00 0x0", Event{}, true},
		{"type=x 0x00 0x0", Event{}, true},
		{"press 0x00 0x0", Event{}, true},
	} {
		got, err := ParseEvent(tc.line)
		if tc.err {
			if !errors.Is(err, ErrRecording) {
				t.Errorf("ParseEvent(%q) = %+v, %v; want ErrRecording", tc.line, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseEvent(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

// FuzzParseEvent: any line either fails with ErrRecording or reads as an
// event that FormatEvent writes back to a line reading the same.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{"keydown 0x00 0x20102", "flags 0x3f 0x800100", "keyup 0x22 0x100 repeat", "tap-off-input", "type=7 0x01 0x2", "keydown 0x 0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ev, err := ParseEvent(line)
		if err != nil {
			if !errors.Is(err, ErrRecording) {
				t.Fatalf("ParseEvent(%q) error %v does not wrap ErrRecording", line, err)
			}
			return
		}
		back, err := ParseEvent(FormatEvent(ev))
		if err != nil || back != ev {
			t.Fatalf("ParseEvent(%q) = %+v, written %q, read back %+v, %v", line, ev, FormatEvent(ev), back, err)
		}
	})
}
