// Package inject holds keyrelay's key injectors: the sinks that turn the key
// events a receiver dispatches into key presses (or, for tests and scripted
// use, into a log).
package inject

import (
	"sync"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
)

// Key is one key event to inject.
type Key struct {
	Code keys.Code
	Down bool
	// Cause is why the receiver injects it: eventqueue.Sent for an event the
	// sender sent, otherwise a synthetic one (a missing key-up, a timeout...).
	Cause eventqueue.Cause
	// Session is the sender session the event comes from.
	Session uint64
}

// Injector delivers key events. Inject is called from one goroutine at a
// time; an error is reported and counted by the receiver, never fatal, so
// one key a backend cannot press does not stop the relay.
type Injector interface {
	Inject(k Key) error
	// Close releases what the injector holds. The receiver has already
	// released every key it pressed.
	Close() error
}

// skipped reports, once per key, that a backend cannot press it. Safe for
// concurrent use; the zero value is ready.
type skipped struct {
	mu   sync.Mutex
	seen map[keys.Code]bool
}

func (s *skipped) report(logf func(string, ...any), backend string, code keys.Code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[code] || logf == nil {
		return
	}
	if s.seen == nil {
		s.seen = map[keys.Code]bool{}
	}
	s.seen[code] = true
	logf("%s cannot press %v: skipped (this is reported once)", backend, code)
}
