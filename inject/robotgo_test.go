package inject

import (
	"bytes"
	"os"
	"testing"

	"github.com/keyrelay/keyrelay/inject/internal/rgtable"
	"github.com/keyrelay/keyrelay/keys"
)

// TestRobotgoCoversTheKeysPeopleType: every key of the US layout, and the
// named keys the terminal source relays, have a robotgo name.
func TestRobotgoCoversTheKeysPeopleType(t *testing.T) {
	need := []keys.Code{keys.Enter, keys.Tab, keys.Backspace, keys.Escape, keys.Space,
		keys.ArrowUp, keys.ArrowDown, keys.ArrowLeft, keys.ArrowRight, keys.Home, keys.End,
		keys.PageUp, keys.PageDown, keys.Insert, keys.Delete,
		keys.ShiftLeft, keys.ShiftRight, keys.ControlLeft, keys.ControlRight, keys.AltLeft, keys.AltRight, keys.MetaLeft}
	for f := keys.F1; f <= keys.F12; f++ {
		need = append(need, f)
	}
	for r := rune(0x20); r <= 0x7e; r++ {
		c, _, _ := keys.ForRune(r)
		need = append(need, c)
	}
	for _, c := range need {
		if _, ok := RobotgoName(c); !ok {
			t.Errorf("robotgo has no name for %v", c)
		}
	}
	// Names are unique: two keys never press the same robotgo key.
	seen := map[string]keys.Code{}
	for _, c := range RobotgoKeys() {
		n, _ := RobotgoName(c)
		if other, dup := seen[n]; dup {
			t.Errorf("%v and %v both map to %q", c, other, n)
		}
		seen[n] = c
	}
	if n, _ := RobotgoName(keys.KeyA); n != "a" {
		t.Errorf("KeyA -> %q, want the unshifted keysym's name \"a\"", n)
	}
}

func TestRobotgoTableIsGenerated(t *testing.T) {
	want, err := rgtable.Generate()
	if err != nil {
		t.Skipf("cannot regenerate (robotgo module not available): %v", err)
	}
	got, err := os.ReadFile("robotgo_keys_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("robotgo_keys_gen.go is stale: run go generate ./inject")
	}
}
