package inject

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// TestSkippedNamesNoCharacter: a character an injector cannot type is
// reported once for all characters and never named in the log (it may be a
// password's; README "Security": counts, not keys), while Inject's error
// still says which, for the caller's count; a physical key is named, once.
func TestSkippedNamesNoCharacter(t *testing.T) {
	var logged []string
	logf := func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	var s skipped
	for _, r := range "hunter2" {
		key := keys.Char(r)
		err := s.report(logf, "uinput", key, "the kernel has no layout")
		if !errors.Is(err, ErrCannotType) || !strings.Contains(err.Error(), key.String()) {
			t.Errorf("report(%v) = %v, want ErrCannotType naming it", key, err)
		}
	}
	if len(logged) != 1 {
		t.Fatalf("characters reported %d times, want once: %q", len(logged), logged)
	}
	for _, r := range "hunter2" {
		if name := keys.Char(r).String(); strings.Contains(logged[0], name) {
			t.Errorf("the log names the character %s: %s", name, logged[0])
		}
	}
	for range 2 {
		s.report(logf, "uinput", keys.Key(keys.F13), "no evdev key code")
	}
	if len(logged) != 2 || !strings.Contains(logged[1], "F13") {
		t.Errorf("a physical key is named, once: %q", logged)
	}
}
