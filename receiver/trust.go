package receiver

import (
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/handshake"
)

// RecheckInterval is how often the receiver asks Config.Recheck whether
// the paired machines changed, while a handshaken session is live or a
// datagram comes: a peer removed stops typing within it (PROTOCOL.md
// §8.1). Half a second, so that with the time a loaded machine takes to
// notice, the removal takes effect within a second.
const RecheckInterval = 500 * time.Millisecond

// recheck asks Config.Recheck, at most once per RecheckInterval, whether
// the paired machines changed, and if so revokes the sessions of the
// senders no longer paired. Handle calls it before taking a datagram,
// and Expire at the deadline Next gives while a handshaken session is
// live, so a removed machine types nothing, and holds nothing, from
// RecheckInterval after the change.
func (r *Receiver) recheck(now time.Time) {
	if r.cfg.Recheck == nil || now.Before(r.recheckAt) {
		return
	}
	r.recheckAt = now.Add(RecheckInterval)
	if r.cfg.Recheck(now) {
		r.revoke(now)
	}
}

// revoke ends every session whose sender is no longer paired
// (Config.Peer; this machine's own identity was checked by its address
// when the session started and stays): its held keys are released. A
// handshaken session's keypairs are dropped, so nothing it sent or sends
// under them opens again, and a paired-again sender starts with a new
// handshake; a one-way session is forgotten, so its next packet is taken
// only if its signer is paired then (PROTOCOL.md §8.1, §8.6).
func (r *Receiver) revoke(now time.Time) {
	for _, s := range r.sortedSessions() {
		if s.mode == plaintext || s.mode == handshaken && len(s.indices) == 0 && !s.live {
			continue
		}
		if r.own(s.peer) {
			continue
		}
		if r.cfg.Peer != nil {
			if _, ok := r.cfg.Peer(s.peer); ok {
				continue
			}
		}
		n := r.end(s, eventqueue.Revoked)
		if s.mode == oneWay {
			delete(r.sessions, s.id)
			if r.bySource[s.key] == s {
				delete(r.bySource, s.key)
			}
		} else {
			s.ring = handshake.Keyring{}
			r.syncIndices(s)
			s.opened, s.ackBy, s.ackPending = nil, nil, false
		}
		r.stats.Revoked++
		r.logf("session %016x from %s ended: %s is no longer paired (peers file); %d held keys released, its keys dropped", s.id, s.addr, s.who, n)
	}
	r.publish(now)
}
