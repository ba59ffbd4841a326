package receiver

import (
	"net"
	"slices"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// What a packet of another protocol version gets (PROTOCOL.md §10): a
// log line per address at most every VersionLogEvery (and one a second in
// all: an address not named yet is named at its next packet), a version
// notice back to it at most every NoticeEvery, and at most
// MaxNoticesPerSecond notices in all, so a flood from forged source
// addresses neither floods the log nor reflects much.
const (
	VersionLogEvery     = time.Minute
	NoticeEvery         = time.Second
	MaxNoticesPerSecond = 10
	// maxVersionPeers bounds the addresses remembered; one heard within
	// VersionLogEvery is not forgotten for a new one.
	maxVersionPeers = 256
)

// VersionStatus is one address that sent packets of another protocol
// version, for status displays.
type VersionStatus struct {
	Addr      string
	Speaks    []uint8 // the versions it speaks (from its notice), or its packets' version
	LastHeard time.Time
	Packets   int // its packets dropped for their version
}

// versionPeer is what the receiver remembers of one such address.
type versionPeer struct {
	VersionStatus
	logged  time.Time // its last log line
	said    []uint8   // the versions that line named
	noticed time.Time // the last notice sent to it
}

// versions are the addresses that sent packets of another version, and
// the notices sent this second. Guarded by Receiver.mu (Versions reads it).
type versions struct {
	peers       map[string]*versionPeer
	second      time.Time // start of the second the notices are counted in
	noticesSent int
	logged      time.Time // the last log line, for any address
}

// otherVersion handles a datagram of another protocol version than this
// receiver's (wire.OtherVersion): it is counted apart from malformed
// ones, the address is named in the log and answered with a version
// notice, both at a bounded rate. It changes no session.
func (r *Receiver) otherVersion(b []byte, v uint8, from net.Addr, now time.Time) {
	r.stats.Mismatched++
	speaks := []uint8{v}
	var n wire.Notice
	if wire.ParseNotice(b, &n) == nil {
		speaks = n.Speaks // a notice says every version its sender speaks
	}
	// Never a notice for a notice, nor one larger than what came.
	nb, answer := wire.AppendNoticeFor(r.ackBuf[:0], b)
	answer = answer && !r.cfg.NoAcks
	addr := from.String()
	r.mu.Lock()
	p := r.versions.peer(addr, now)
	var log, notice bool
	if p != nil {
		p.Packets++
		p.LastHeard = now
		p.Speaks = speaks
		log = (p.logged.IsZero() || now.Sub(p.logged) >= VersionLogEvery || !slices.Equal(p.said, speaks)) &&
			(r.versions.logged.IsZero() || now.Sub(r.versions.logged) >= time.Second)
		if log {
			p.logged, p.said, r.versions.logged = now, speaks, now
		}
		notice = answer && (p.noticed.IsZero() || now.Sub(p.noticed) >= NoticeEvery) && r.versions.mayNotice(now)
		if notice {
			p.noticed = now
			r.versions.noticesSent++
		}
	}
	r.mu.Unlock()
	if log {
		r.logf("sender at %s speaks keyrelay protocol %s; this receiver speaks %d: install the same keyrelay release on both machines", addr, wire.DescribeVersions(speaks), wire.Version)
	}
	if !notice {
		return
	}
	r.ackBuf = nb
	if _, err := r.out.WriteTo(nb, from); err == nil {
		r.stats.Notices++
	}
}

// peer is the entry of addr, made if there is room: entries not heard
// for VersionLogEvery make room; nil if there is none.
func (vs *versions) peer(addr string, now time.Time) *versionPeer {
	if p := vs.peers[addr]; p != nil {
		return p
	}
	if vs.peers == nil {
		vs.peers = map[string]*versionPeer{}
	}
	if len(vs.peers) >= maxVersionPeers {
		for a, p := range vs.peers {
			if now.Sub(p.LastHeard) >= VersionLogEvery {
				delete(vs.peers, a)
			}
		}
		if len(vs.peers) >= maxVersionPeers {
			return nil
		}
	}
	p := &versionPeer{VersionStatus: VersionStatus{Addr: addr}}
	vs.peers[addr] = p
	return p
}

// mayNotice reports whether one more notice fits in this second's
// MaxNoticesPerSecond.
func (vs *versions) mayNotice(now time.Time) bool {
	if vs.second.IsZero() || now.Sub(vs.second) >= time.Second || now.Before(vs.second) {
		vs.second, vs.noticesSent = now, 0
	}
	return vs.noticesSent < MaxNoticesPerSecond
}

// Versions lists the addresses that sent packets of another protocol
// version, most recently heard first. Safe to call while Run runs.
func (r *Receiver) Versions() []VersionStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]VersionStatus, 0, len(r.versions.peers))
	for _, p := range r.versions.peers {
		out = append(out, p.VersionStatus)
	}
	slices.SortFunc(out, func(a, b VersionStatus) int {
		if c := b.LastHeard.Compare(a.LastHeard); c != 0 {
			return c
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	return out
}
