package inject

import (
	"os"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

// TestHidgSaysKeysReachedNoHost (PROTOCOL.md §9: why 2): a key event
// whose report the gadget refused (ESHUTDOWN: no host configured it) or
// that the host did not read in time reached no USB host, and
// LastReached says so; one written, or needing no write while the host
// has the state, reached it. The receiver asks after every event, failed
// or not (receiver.Aimed).
func TestHidgSaysKeysReachedNoHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dev := newFakeHidg()
		h := newHidg("/dev/hidg0", dev, nil)
		defer h.Close()
		step := func(ev Event, fail error, want sink.Unreached) {
			t.Helper()
			dev.fail = fail
			h.Inject(ev)
			if got := h.LastReached(); got != want {
				t.Errorf("%v down=%v with the write failing with %v: LastReached %d, want %d", ev.Key, ev.Down, fail, got, want)
			}
		}
		step(press(keys.KeyA), nil, sink.Reached)
		step(release(keys.KeyA), syscall.ESHUTDOWN, sink.NoUSBHost)
		step(press(keys.KeyB), syscall.ESHUTDOWN, sink.NoUSBHost)
		step(release(keys.KeyB), nil, sink.Reached) // configured again: the whole state written
		step(press(keys.KeyC), os.ErrDeadlineExceeded, sink.NoUSBHost)
		step(release(keys.KeyC), nil, sink.Reached)
		for _, c := range []keys.Code{keys.KeyA, keys.KeyB, keys.KeyC, keys.KeyD, keys.KeyE, keys.KeyF, keys.KeyG} {
			step(press(c), nil, sink.Reached)
		}
		// An eighth key in rollover writes nothing: the host has the
		// state already.
		step(press(keys.KeyH), syscall.ESHUTDOWN, sink.Reached)
	})
}
