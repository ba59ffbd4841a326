//go:build linux || ((darwin || windows) && robotgo)

package inject

import (
	"errors"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// TestRobotgoSkipsUnmappableKeysOnce: a key with no robotgo name is not sent
// as anything else; it is reported once. (No X server is touched on this
// path.)
func TestRobotgoSkipsUnmappableKeysOnce(t *testing.T) {
	var logged []string
	r := &Robotgo{logf: func(f string, a ...any) { logged = append(logged, f) }}
	const unmapped = keys.Code(0x32) // the ISO key that shares Backslash's keysym
	if _, ok := RobotgoName(unmapped); ok {
		t.Fatalf("%v is mapped; pick another unmapped key", unmapped)
	}
	for range 3 {
		if err := r.Inject(Event{Key: keys.Key(unmapped), Down: true}); !errors.Is(err, ErrCannotType) {
			t.Fatalf("Inject = %v, want ErrCannotType", err)
		}
	}
	if len(logged) != 1 {
		t.Errorf("reported %d times, want once", len(logged))
	}
}
