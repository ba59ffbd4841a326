// Package notebuf is a buffer that is safe to write from one goroutine (a
// child process's output) and read from another, and says when it was
// written to, so tests wait for output on a channel instead of polling
// with sleeps. The e2e and vmtest tests share it.
package notebuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes. Make it with New.
type Buffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	notify chan struct{}
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{notify: make(chan struct{}, 1)} }

// Write appends p and signals Written.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Written gets a value after writes: one value may stand for several, so
// a waiter checks String again each time.
func (s *Buffer) Written() <-chan struct{} { return s.notify }
