// Package sink is what a receiver and the injectors agree on: the key event
// the receiver hands over, and the errors an injector answers with. The
// receiver declares the interfaces it consumes (receiver.Injector,
// receiver.LockSetter, receiver.Watched) and package inject implements
// them; neither imports the other, so the receive loop builds and is
// tested without X, uinput or robotgo, and relay/recv.go wires the two.
//
// The errors are sentinels here rather than in either package because both
// sides need them: an injector wraps them, the receiver tests for them with
// errors.Is.
package sink

import (
	"errors"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
)

// Event is one key event to inject.
type Event struct {
	Key  keys.Key
	Down bool
	// Cause is why the receiver injects it: eventqueue.Sent for an event the
	// sender sent, otherwise a synthetic one (a missing key-up, a timeout...).
	Cause eventqueue.Cause
	// Session is the sender session the event comes from.
	Session uint64
}

// Unreached says why a key event an injector typed reached no
// application: Reached (0) when it did, or when the injector cannot tell.
// The values are the reasons an ack gives (PROTOCOL.md §9, wire.Why).
type Unreached uint8

const (
	Reached Unreached = 0
	// NoFocus: no window had the keyboard focus, so the display server
	// gave the key to no application (X11).
	NoFocus Unreached = 1
	// NoUSBHost: the USB host took no report of the keyboard gadget
	// (hidg): no computer has configured it (no cable, the computer off
	// or asleep) or none reads it.
	NoUSBHost Unreached = 2
	// NoForeground: no window was in the foreground of the Windows
	// desktop (it is locked, the secure desktop is up, or no window is
	// active), so the keys reached no application.
	NoForeground Unreached = 3
)

// ErrGone is wrapped by an injector's error when what it types into went
// away for good (the X server stopped, the session ended): recv stops with
// it, non-zero, rather than ack keys it can no longer type, so that a
// service manager notices and restarts it.
var ErrGone = errors.New("recv stops")

// ErrCannotType is wrapped by an injector's error for a key or character it
// cannot type (a character on uinput, which has no layout; a key with no
// code in the backend). Nothing else is typed in its place; the injector
// has said so once, and the receiver counts it apart from failures.
var ErrCannotType = errors.New("cannot type")
