package inject

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

func TestEvdevCodes(t *testing.T) {
	for code, want := range map[keys.Code]int{keys.KeyA: 30, keys.Enter: 28, keys.ShiftLeft: 42, keys.ArrowUp: 103, keys.F12: 88, keys.MetaLeft: 125} {
		if got, ok := EvdevCode(code); !ok || got != want {
			t.Errorf("EvdevCode(%v) = %d, %v; want %d", code, got, ok, want)
		}
	}
	// Every key people type has an evdev code, and no two keys share one.
	seen := map[int]keys.Code{}
	for _, c := range RobotgoKeys() {
		ev, ok := EvdevCode(c)
		if !ok {
			t.Errorf("%v has no evdev code", c)
			continue
		}
		if other, dup := seen[ev]; dup && c != 0x32 && other != 0x32 {
			t.Errorf("%v and %v share evdev code %d", c, other, ev)
		}
		seen[ev] = c
	}
	if _, ok := EvdevCode(0); ok {
		t.Error("key 0 has an evdev code")
	}
}

// TestUinputErrors: a missing or forbidden device gets an error saying what
// to do. (The device itself is not on this machine; see README.)
func TestUinputErrors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uinput is Linux only")
	}
	missing := filepath.Join(t.TempDir(), "uinput")
	_, err := NewUinput(missing, nil)
	if !errors.Is(err, ErrNoUinput) || !strings.Contains(err.Error(), "modprobe uinput") || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing device: %v", err)
	}
	perm := uinputError("/dev/uinput", fs.ErrPermission)
	for _, want := range []string{"not writable", "udev rule", "usermod -aG input"} {
		if !strings.Contains(perm.Error(), want) {
			t.Errorf("permission error lacks %q: %v", want, perm)
		}
	}
	// A path that opens but is no uinput device fails cleanly, not with a panic.
	if _, err := NewUinput(t.TempDir(), nil); !errors.Is(err, ErrNoUinput) {
		t.Errorf("directory as device: %v", err)
	}
}

// TestUinputCannotTypeCharacters: the kernel has no layout, so without
// --layout uinput reports characters once, naming none, types nothing in their place (it never touches
// the device for it) and returns ErrCannotType each time, for the receiver
// to count (issue 11 must-have 2).
func TestUinputCannotTypeCharacters(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uinput is Linux only")
	}
	var logged []string
	u := &Uinput{logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	for range 3 {
		for _, down := range []bool{true, false} {
			if err := u.Inject(Event{Key: keys.Char('é'), Down: down}); !errors.Is(err, ErrCannotType) {
				t.Fatalf("Inject('é') = %v, want ErrCannotType", err)
			}
		}
	}
	if err := u.Inject(Event{Key: keys.Char('ß'), Down: true}); !errors.Is(err, ErrCannotType) {
		t.Fatalf("Inject('ß') = %v, want ErrCannotType", err)
	}
	// One line for all characters, naming none of them (a character may be
	// a password's: inject.skipped), and the fix.
	if len(logged) != 1 || strings.Contains(logged[0], "'é'") || strings.Contains(logged[0], "'ß'") || !strings.Contains(logged[0], "recv --layout") {
		t.Errorf("logged %q, want one line naming recv --layout and no character", logged)
	}
}
