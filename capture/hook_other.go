//go:build !(linux && purego)

package capture

import (
	"context"
	"fmt"
	"io"

	"github.com/keyrelay/keyrelay/keys"
)

// HookAvailable is true in builds with the global hook source (-tags purego).
const HookAvailable = false

// Hook is not in this build: gohook's pure-Go X11 backend needs -tags
// purego (make build sets it); without the tag gohook needs cgo and C
// libraries.
type Hook struct {
	Label  string
	Status io.Writer
}

// CheckHook reports that this build has no hook source.
func CheckHook() error {
	return fmt.Errorf("%w: this keyrelay was built without it (build with -tags purego on Linux/X11, as make build does)", ErrNoHook)
}

// Play fails: see CheckHook.
func (h *Hook) Play(context.Context, func(keys.Key, bool) error) error { return CheckHook() }
