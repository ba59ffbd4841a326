// Package inject holds keyrelay's key injectors: the sinks that turn the key
// events a receiver dispatches into key presses (or, for tests and scripted
// use, into a log).
package inject

import (
	"errors"
	"fmt"
	"sync"

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

// Injector delivers key events. Inject is called from one goroutine at a
// time; an error is reported and counted by the receiver, not fatal, so
// one key a backend cannot press does not stop the relay; but an error
// wrapping ErrGone (the backend itself went away) stops recv. A key or
// character the backend cannot type at all gives an error wrapping
// ErrCannotType: the injector has said so once, and the receiver counts it
// apart from failures.
type Injector interface {
	Inject(k Event) error
	// Close releases what the injector holds. The receiver has already
	// released every key it pressed.
	Close() error
}

// LockSetter is an Injector that can set the OS's Caps Lock and Num Lock:
// SetLocks makes them what l says (keys.Locks; called only with a known l)
// for the given sender session.
type LockSetter interface {
	SetLocks(l keys.Locks, session uint64) error
}

// ErrGone is wrapped by an injector's error when what it types into went
// away for good (the X server stopped, the session ended): recv stops with
// it, non-zero, rather than ack keys it can no longer type, so that a
// service manager notices and restarts it.
var ErrGone = errors.New("recv stops")

// Watched is an Injector that notices its backend going away on its own,
// between keys: Gone is closed then, and GoneErr (wrapping ErrGone) says
// what went away.
type Watched interface {
	Gone() <-chan struct{}
	GoneErr() error
}

// ErrCannotType is wrapped by Inject's error for a key or character the
// injector cannot type (a character on uinput, which has no layout; a key
// with no code in the backend). Nothing else is typed in its place.
var ErrCannotType = errors.New("cannot type")

// skipped reports, once per key, that a backend cannot type it, and makes
// the ErrCannotType error for each event. Safe for concurrent use; the zero
// value is ready.
type skipped struct {
	mu   sync.Mutex
	seen map[keys.Key]bool
}

// report logs, the first time for key, that backend cannot type it and why,
// and returns the error Inject returns for it.
func (s *skipped) report(logf func(string, ...any), backend string, key keys.Key, why string) error {
	err := fmt.Errorf("%w %v with %s", ErrCannotType, key, backend)
	if why != "" {
		err = fmt.Errorf("%w: %s", err, why)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[key] || logf == nil {
		return err
	}
	if s.seen == nil {
		s.seen = map[keys.Key]bool{}
	}
	s.seen[key] = true
	logf("%v: skipped, nothing typed in its place (this is reported once)", err)
	return err
}
