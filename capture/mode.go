package capture

import (
	"sync"
	"sync/atomic"
)

// mode is a grabbing source's mode, relaying or local use, as another
// goroutine sees it: keyrelay switch asks for a mode (request, taken by
// the source's Play loop, which alone changes it) and waits on Changed for
// the source to follow, with no polling.
//
// mode is safe for concurrent use; its zero value is local use, with no
// request.
type mode struct {
	on atomic.Bool

	mu      sync.Mutex
	changed chan struct{} // closed at the next change; nil until asked for

	reqOnce sync.Once
	req     chan bool // the newest request, for the Play loop
}

// Load reports whether the source relays now.
func (m *mode) Load() bool { return m.on.Load() }

// Store sets the mode, and wakes every waiter on Changed if it changed.
func (m *mode) Store(on bool) {
	if m.on.Swap(on) == on {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

// Changed is closed at the next change of the mode after the call: read
// the mode after taking it, so that a change in between is not missed.
func (m *mode) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

// request asks the Play loop for a mode without waiting; a request made
// before the last one was taken replaces it.
func (m *mode) request(on bool) {
	ch := m.requests()
	for {
		select {
		case ch <- on:
			return
		default:
			select {
			case <-ch:
			default:
			}
		}
	}
}

// requests is the channel the Play loop takes requests from.
func (m *mode) requests() chan bool {
	m.reqOnce.Do(func() { m.req = make(chan bool, 1) })
	return m.req
}
