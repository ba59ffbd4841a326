package eventqueue

import (
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// Cause says why the receiver dispatches an event.
type Cause uint8

const (
	// Sent: the event is in the sender's queue (the seed's step 6).
	Sent Cause = iota
	// Missing: a synthetic key-up for a held key the sender no longer holds
	// (the seed's step 5), or, in balanced mode, for a held key pressed again.
	Missing
	// Resync: a synthetic key-down for a key the sender holds from before the
	// receiver started following the session (Resume).
	Resync
	// Timeout: a synthetic key-up because the session went quiet.
	Timeout
	// SessionEnd: a synthetic key-up because a new session from the same
	// sender replaced this one.
	SessionEnd
	// Shutdown: a synthetic key-up because the receiver is exiting.
	Shutdown
	// Revoked: a synthetic key-up because the session's sender is no
	// longer paired (its peer removed, or the peers file unreadable).
	Revoked
)

// String is the cause as the log injector writes it; Sent is empty.
func (c Cause) String() string {
	switch c {
	case Sent:
		return ""
	case Missing:
		return "missing"
	case Resync:
		return "resync"
	case Timeout:
		return "timeout"
	case SessionEnd:
		return "session-end"
	case Shutdown:
		return "shutdown"
	case Revoked:
		return "revoked"
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Dispatch is an event the receiver injects, and why.
type Dispatch struct {
	Event
	Cause Cause
}

// keyList is a small ordered set of keys: queues are short, so an array beats
// a map, keeps press order and stays on the stack (Diff runs per packet). A
// queue holds at most MaxLen keys.
type keyList struct {
	n int
	a [MaxLen]keys.Key
}

func (l *keyList) has(c keys.Key) bool {
	for _, k := range l.a[:l.n] {
		if k == c {
			return true
		}
	}
	return false
}

func (l *keyList) add(c keys.Key) {
	if !l.has(c) && l.n < len(l.a) {
		l.a[l.n] = c
		l.n++
	}
}

func (l *keyList) remove(c keys.Key) {
	for i, k := range l.a[:l.n] {
		if k == c {
			if i+1 < l.n { // usually the newest goes: nothing to move
				copy(l.a[i:l.n], l.a[i+1:l.n])
			}
			l.n--
			return
		}
	}
}

func (l *keyList) all() []keys.Key { return l.a[:l.n] }

// Diff appends to dst the events the receiver dispatches when incoming
// follows prev, by the seed's receiver steps 1–6; step 7 (keep incoming as the
// next previous queue) is the caller's. The queues may differ in length. An
// empty prev is a fresh queue: everything in incoming is new.
func Diff(dst []Dispatch, prev, incoming []Event, balanced bool) []Dispatch {
	// 1. The previous timestamp is the stamp of the newest previous event.
	var prevStamp uint64
	if len(prev) > 0 {
		prevStamp = prev[0].Stamp
	}
	// 2. and 3. Empty held and incoming keycode sets.
	var held, incomingKeys keyList
	// 4. Walk both queues from oldest to newest: previous key-downs add to
	//    the held set and key-ups remove from it; every real incoming event
	//    adds its key to the incoming set.
	for i := max(len(prev), len(incoming)) - 1; i >= 0; i-- {
		if i < len(prev) {
			switch e := prev[i]; e.Kind {
			case Down:
				held.add(e.Key)
			case Up:
				held.remove(e.Key)
			}
		}
		if i < len(incoming) && incoming[i].Kind != None {
			incomingKeys.add(incoming[i].Key)
		}
	}
	// 5. Release every held key that has no event in the incoming queue,
	//    stamped with the previous timestamp.
	for _, c := range held.all() {
		if !incomingKeys.has(c) {
			dst = append(dst, Dispatch{Event{Key: c, Kind: Up, Stamp: prevStamp}, Missing})
		}
	}
	return step6(dst, incoming, prevStamp, &held, balanced)
}

// step6 is the seed's receiver step 6: dispatch the incoming events newer
// than prevStamp, oldest first, key-ups only for held keys.
func step6(dst []Dispatch, incoming []Event, prevStamp uint64, held *keyList, balanced bool) []Dispatch {
	for i := len(incoming) - 1; i >= 0; i-- {
		e := incoming[i]
		if e.Stamp <= prevStamp {
			continue
		}
		switch e.Kind {
		case Up:
			// 6.1 A newer key-up of a held key: dispatch it and forget the key.
			if held.has(e.Key) {
				dst = append(dst, Dispatch{e, Sent})
				held.remove(e.Key)
			}
		case Down:
			// 6.2 A newer key-down: dispatch it and hold the key. Balanced
			// mode first releases a key that is still held (package doc).
			if balanced && held.has(e.Key) {
				dst = append(dst, Dispatch{Event{Key: e.Key, Kind: Up, Stamp: e.Stamp}, Missing})
			}
			dst = append(dst, Dispatch{e, Sent})
			held.add(e.Key)
		}
	}
	return dst
}

// Resume appends to dst the events that bring a receiver holding no keys for
// a session in line with incoming, when the receiver has already dispatched
// the session's events up to stamp since (0: none): first a key-down (cause
// Resync) for each key incoming holds since at or before since, oldest first,
// then the events newer than since as in the seed's step 6. Resume(dst, 0, q)
// dispatches the same events as Diff(dst, nil, q).
func Resume(dst []Dispatch, since uint64, incoming []Event, balanced bool) []Dispatch {
	var held keyList
	for i := len(incoming) - 1; i >= 0; i-- {
		e := incoming[i]
		if e.Kind == Down && e.Stamp <= since && newestOf(incoming, e.Key) == i {
			dst = append(dst, Dispatch{e, Resync})
			held.add(e.Key)
		}
	}
	return step6(dst, incoming, since, &held, balanced)
}

// Tracker is the receiver's state for one sender session: the previous queue
// (step 7) and whether the keys it holds have been released by the receiver
// (timeout, shutdown). It is not safe for concurrent use. Its zero value is
// ready: a balanced tracker that has seen nothing.
type Tracker struct {
	// Unbalanced turns off balanced dispatch (see the package doc).
	Unbalanced bool

	prev     []Event
	started  bool
	released bool
}

// Apply appends the events to dispatch for an incoming queue and keeps a copy
// of it as the previous queue. For the session's first queue, join says
// whether the receiver is joining a session that started long before (a
// receiver restart): then only the keys held now are pressed, and older events
// are not typed again. After Release, the session resumes where it stopped:
// newer events are dispatched and keys still held are pressed again.
func (t *Tracker) Apply(dst []Dispatch, incoming []Event, join bool) []Dispatch {
	if join && len(incoming) > 0 {
		return t.ApplyFrom(dst, incoming, incoming[0].Stamp)
	}
	return t.ApplyFrom(dst, incoming, 0)
}

// ApplyFrom is Apply where the session's first queue says from which
// stamp on the receiver is to type (0: all of it): the keys held at since
// are pressed (Resync) and only the events newer than since are typed. A
// handshaken session's packets carry it (PROTOCOL.md §8.3: a receiver that
// restarts under a running sender types what was typed since it came up).
// For later queues since is ignored.
func (t *Tracker) ApplyFrom(dst []Dispatch, incoming []Event, since uint64) []Dispatch {
	if len(incoming) == 0 {
		// No wire packet carries an empty queue; an empty one says nothing.
		return dst
	}
	balanced := !t.Unbalanced
	switch {
	case !t.started && since > 0:
		dst = Resume(dst, since, incoming, balanced)
	case !t.started:
		dst = Diff(dst, nil, incoming, balanced)
	case t.released:
		dst = Resume(dst, t.prev[0].Stamp, incoming, balanced)
	default:
		dst = Diff(dst, t.prev, incoming, balanced)
	}
	// 7. The incoming queue becomes the previous queue.
	t.prev = append(t.prev[:0], incoming...)
	t.started = true
	t.released = false
	return dst
}

// Held appends to dst the keys this session holds down at the receiver,
// oldest press first.
func (t *Tracker) Held(dst []keys.Key) []keys.Key {
	if t.released {
		return dst
	}
	return heldKeys(dst, t.prev)
}

// Release appends a key-up with the given cause for every key the session
// holds, and remembers that they are released.
func (t *Tracker) Release(dst []Dispatch, cause Cause) []Dispatch {
	if t.released || !t.started {
		return dst
	}
	for _, c := range heldKeys(nil, t.prev) {
		dst = append(dst, Dispatch{Event{Key: c, Kind: Up, Stamp: t.prev[0].Stamp}, cause})
	}
	t.released = true
	return dst
}

// Previous is the previous queue (the seed's step 7), nil before the
// first: what an abridged packet builds on (Rebuilder). The slice is the
// tracker's own, valid until its next Apply.
func (t *Tracker) Previous() []Event { return t.prev }

// Newest is the stamp of the newest event the session has sent, 0 before the
// first queue.
func (t *Tracker) Newest() uint64 {
	if len(t.prev) == 0 {
		return 0
	}
	return t.prev[0].Stamp
}
