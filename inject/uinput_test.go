package inject

import (
	"errors"
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
