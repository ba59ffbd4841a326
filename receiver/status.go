package receiver

import (
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
	out := make([]SessionStatus, 0, len(r.sessions))
	for _, s := range r.sortedSessions() {
		st := SessionStatus{ID: s.id, Addr: s.addr, Live: s.live, LastHeard: s.lastHeard, Packets: s.packets,
			Allowance: r.allowance(s), Loss: s.pace.loss()}
		for c := range s.held {
			st.Held = append(st.Held, c)
		}
		slices.Sort(st.Held)
		out = append(out, st)
	}
	r.mu.Lock()
	r.status = out
	r.mu.Unlock()
}

// Status returns the sessions as last published: held keys, liveness and
// allowances as they are, packet counts and last-heard times at most
// 100 ms older than the session's newest packet. Safe to call while Run
// runs.
func (r *Receiver) Status() []SessionStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.status)
}
