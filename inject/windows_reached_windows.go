//go:build windows

package inject

import (
	"github.com/keyrelay/keyrelay/internal/windows/win32"
	"github.com/keyrelay/keyrelay/sink"
)

// LastReached says whether the key event Windows typed last could reach an
// application (receiver.Aimed), asked right after SendInput:
// sink.NoForeground when no application's window was in the foreground
// then (win32.HasForeground: the desktop locked, the secure desktop up, no
// window active, or the system's desktop window in front), where the keys
// go to no application's input queue.
func (w *Windows) LastReached() sink.Unreached {
	if !win32.HasForeground() {
		return sink.NoForeground
	}
	return sink.Reached
}
