package receiver

import "container/list"

// maxHellos bounds what a receiver keeps of hellos (PROTOCOL.md §8.3 step
// 2): four entries per session it can track.
const maxHellos = maxSessions * 4

// helloTable is what a receiver keeps of hellos, per session and address
// (helloFrom), bounded: a new entry past its bound evicts the one updated
// longest ago, so a burst of hellos for new sessions (replayed ones, say)
// pushes out the stalest entries one by one instead of forgetting every
// session's at once, the one handshaking now included (its loss is counted
// from its hellos, liveness.go). Not safe for concurrent use: the
// receiver's loop owns it.
type helloTable struct {
	max   int
	byKey map[helloFrom]*list.Element // each holds a *helloEntry
	order list.List                   // front: updated longest ago
}

type helloEntry struct {
	key  helloFrom
	seen helloSeen
}

func newHelloTable(max int) *helloTable {
	return &helloTable{max: max, byKey: map[helloFrom]*list.Element{}}
}

// get returns what is kept of k's hellos, and whether anything is.
func (t *helloTable) get(k helloFrom) (helloSeen, bool) {
	e, ok := t.byKey[k]
	if !ok {
		return helloSeen{}, false
	}
	return e.Value.(*helloEntry).seen, true
}

// put keeps seen for k, as the newest entry, evicting the oldest when a
// new k would pass the bound.
func (t *helloTable) put(k helloFrom, seen helloSeen) {
	if e, ok := t.byKey[k]; ok {
		e.Value.(*helloEntry).seen = seen
		t.order.MoveToBack(e)
		return
	}
	if t.order.Len() >= t.max {
		oldest := t.order.Front()
		delete(t.byKey, oldest.Value.(*helloEntry).key)
		t.order.Remove(oldest)
	}
	t.byKey[k] = t.order.PushBack(&helloEntry{k, seen})
}

// len is how many entries are kept.
func (t *helloTable) len() int { return t.order.Len() }
