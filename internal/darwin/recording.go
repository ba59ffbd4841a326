package darwin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A recording is a tap's events as text, one a line, so that events seen
// on a Mac (send --input macos --debug prints each so) can be checked
// into testdata and decoded on any system:
//
//	flags 0x38 0x20102
//	keydown 0x00 0x20102
//	keydown 0x00 0x20102 repeat
//	keyup 0x00 0x20102
//	tap-off-timeout
//
// The type (keydown, keyup, flags; tap-off-timeout and tap-off-input for
// the tap turned off; type=N for another), the virtual keycode and the
// flags in hex, and "repeat" for an auto-repeat.

// ErrRecording is wrapped by ParseEvent's errors.
var ErrRecording = errors.New("bad recorded event")

var typeNames = map[EventType]string{
	KeyDown: "keydown", KeyUp: "keyup", FlagsChanged: "flags",
	TapDisabledByTimeout: "tap-off-timeout", TapDisabledByUserInput: "tap-off-input",
}

// FormatEvent is ev as a line of a recording, without the newline.
func FormatEvent(ev Event) string {
	name, ok := typeNames[ev.Type]
	if !ok {
		name = fmt.Sprintf("type=%d", uint32(ev.Type))
	}
	if ev.Type == TapDisabledByTimeout || ev.Type == TapDisabledByUserInput {
		return name
	}
	s := fmt.Sprintf("%s %#02x %#x", name, ev.Keycode, uint64(ev.Flags))
	if ev.Autorepeat {
		s += " repeat"
	}
	return s
}

// ParseEvent reads one line of a recording.
func ParseEvent(line string) (Event, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Event{}, fmt.Errorf("%w: empty line", ErrRecording)
	}
	var ev Event
	found := false
	for t, name := range typeNames {
		if name == f[0] {
			ev.Type, found = t, true
		}
	}
	if !found {
		n, ok := strings.CutPrefix(f[0], "type=")
		v, err := strconv.ParseUint(n, 10, 32)
		if !ok || err != nil {
			return Event{}, fmt.Errorf("%w %q: the type is keydown, keyup, flags, tap-off-timeout, tap-off-input or type=N", ErrRecording, line)
		}
		ev.Type = EventType(v)
		if _, named := typeNames[ev.Type]; named {
			return Event{}, fmt.Errorf("%w %q: type=%d has a name, %s", ErrRecording, line, v, typeNames[ev.Type])
		}
	}
	if ev.Type == TapDisabledByTimeout || ev.Type == TapDisabledByUserInput {
		if len(f) != 1 {
			return Event{}, fmt.Errorf("%w %q: %s takes nothing after it", ErrRecording, line, f[0])
		}
		return ev, nil
	}
	if len(f) < 3 || len(f) > 4 || (len(f) == 4 && f[3] != "repeat") {
		return Event{}, fmt.Errorf("%w %q: want TYPE KEYCODE FLAGS [repeat]", ErrRecording, line)
	}
	vk, err := parseHex(f[1], 16)
	if err != nil {
		return Event{}, fmt.Errorf("%w %q: keycode: %w", ErrRecording, line, err)
	}
	flags, err := parseHex(f[2], 64)
	if err != nil {
		return Event{}, fmt.Errorf("%w %q: flags: %w", ErrRecording, line, err)
	}
	ev.Keycode, ev.Flags, ev.Autorepeat = uint16(vk), Flags(flags), len(f) == 4
	return ev, nil
}

func parseHex(s string, bits int) (uint64, error) {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return 0, fmt.Errorf("%q is not hex with 0x", s)
	}
	return strconv.ParseUint(h, 16, bits)
}
