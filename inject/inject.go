// Package inject holds keyrelay's key injectors: the sinks that turn the key
// events a receiver dispatches into key presses (or, for tests and scripted
// use, into a log).
package inject

import (
	"fmt"
	"sync"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

// Event is one key event to inject: the one the receiver hands over
// (package sink holds what the receiver and the injectors agree on).
type Event = sink.Event

// Injector is one of this package's injectors. Each is a receiver.Injector
// (Inject is called from one goroutine at a time; an error is reported and
// counted, not fatal, unless it wraps ErrGone), and relay/recv.go closes it
// after the receiver has released every key it pressed. Some also set the
// lock state (receiver.LockSetter) or notice their backend going away
// between keys (receiver.Watched).
type Injector interface {
	Inject(k Event) error
	Close() error
}

// ErrGone is wrapped by an injector's error when what it types into went
// away for good: recv stops (sink.ErrGone).
var ErrGone = sink.ErrGone

// ErrCannotType is wrapped by Inject's error for a key or character the
// injector cannot type (sink.ErrCannotType).
var ErrCannotType = sink.ErrCannotType

// skipped reports, once per key, that a backend cannot type it, and makes
// the ErrCannotType error for each event. Characters are reported once for
// all, without naming any: a character typed may be a password's (recv's
// log and status give counts, not keys, unless --debug; README
// "Security"). Safe for concurrent use; the zero value is ready.
type skipped struct {
	mu    sync.Mutex
	seen  map[keys.Key]bool
	chars bool // characters were reported
}

// report logs, the first time for key (for a character: the first time for
// any), that backend cannot type it and why, and returns the error Inject
// returns for it.
func (s *skipped) report(logf func(string, ...any), backend string, key keys.Key, why string) error {
	err := fmt.Errorf("%w %v with %s", ErrCannotType, key, backend)
	if why != "" {
		err = fmt.Errorf("%w: %s", err, why)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if logf == nil {
		return err
	}
	if key.IsChar() {
		if !s.chars {
			s.chars = true
			logf("%s cannot type some characters (%s): skipped, nothing typed in their place; they are counted as not typable here (this is reported once, naming none)", backend, why)
		}
		return err
	}
	if s.seen[key] {
		return err
	}
	if s.seen == nil {
		s.seen = map[keys.Key]bool{}
	}
	s.seen[key] = true
	logf("%v: skipped, nothing typed in its place (this is reported once)", err)
	return err
}
