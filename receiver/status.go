package receiver

import (
	"cmp"
	"slices"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// SessionStatus is a snapshot of one sender session, for status displays.
type SessionStatus struct {
	ID        uint64
	Addr      string
	Live      bool
	LastHeard time.Time
	Packets   int        // packets applied
	Held      []keys.Key // keys it holds down here
	// Allowance is how long it may be silent before its keys are released:
	// the timeout, longer while it loses packets (at most MaxAllowance
	// timeouts; liveness.go). A sender killed now has its keys released
	// Allowance after LastHeard.
	Allowance time.Duration
	// Loss is the share of its packets lost, as estimated from them
	// (early in a session Allowance also weighs a prior of heavy loss).
	Loss float64
}

// publishEvery bounds how often Handle copies the status for packet counts
// and last-heard times alone (a copy per packet would cost for nobody).
const publishEvery = 100 * time.Millisecond

// publish copies the sessions for Status: at once when held keys or
// liveness changed, otherwise at most every publishEvery. Nothing wakes
// the receiver just to publish counts: a session's packets publish them,
// and its end publishes the last.
func (r *Receiver) publish(now time.Time) {
	if !r.changed && now.Sub(r.published) < publishEvery {
		return
	}
	r.changed = false
	r.published = now
	// Written in place, into the slices of the last publication: a key event
	// publishes (its held keys changed), and a copy per key event would be
	// allocations per datagram. Status copies all of it out, Held included,
	// so no caller holds what is rewritten here.
	r.order = r.order[:0]
	for _, s := range r.sessions {
		r.order = append(r.order, s)
	}
	slices.SortFunc(r.order, func(a, b *session) int { return cmp.Compare(a.id, b.id) })
	r.mu.Lock()
	defer r.mu.Unlock()
	if cap(r.status) < len(r.order) {
		r.status = slices.Grow(r.status[:cap(r.status)], len(r.order)-cap(r.status))
	}
	r.status = r.status[:len(r.order)]
	for i, s := range r.order {
		st := &r.status[i]
		held := st.Held[:0]
		for c := range s.held {
			held = append(held, c)
		}
		slices.Sort(held)
		*st = SessionStatus{ID: s.id, Addr: s.addr, Live: s.live, LastHeard: s.lastHeard, Packets: s.packets,
			Allowance: r.allowance(s), Loss: s.pace.loss(), Held: held}
	}
	clear(r.order) // no session kept alive by the scratch list
}

// Status returns the sessions as last published: held keys, liveness and
// allowances as they are, packet counts and last-heard times at most
// 100 ms older than the session's newest packet. Safe to call while Run
// runs.
func (r *Receiver) Status() []SessionStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.status)
	for i := range out {
		out[i].Held = nil // none held: nil, as ever
		if h := r.status[i].Held; len(h) > 0 {
			out[i].Held = slices.Clone(h)
		}
	}
	return out
}
