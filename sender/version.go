package sender

import (
	"errors"
	"slices"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// versionNote is what a receiver said of the protocol versions it speaks,
// in a version notice or a packet of another version (PROTOCOL.md §10).
type versionNote struct {
	speaks []uint8
	at     time.Time
}

var errNoNotice = errors.New("packet of another protocol version that is no version notice for this session")

// otherVersion notes a feedback datagram of another protocol version than
// ours (wire.OtherVersion) from the receiver at from: a version notice, or
// any keyrelay packet of another version, that answers this session
// (wire.SpokenBy: it echoes the session id, so only a host that saw our
// packets can make one). Its sender is named in the log, once, and in
// Peers until it acks; nothing else changes (no liveness, no backlog, no
// end): a forged one can only make a log line and a status appear. The
// sender answers no packet with a notice.
func (c *Core) otherVersion(b []byte, from string, now time.Time) error {
	speaks, ok := wire.SpokenBy(b, c.cfg.Session)
	if !ok {
		return errNoNotice
	}
	old, known := c.foreign[from]
	if !known && len(c.foreign) >= maxPeers {
		return errTooManyAcks
	}
	if c.foreign == nil {
		c.foreign = map[string]versionNote{}
	}
	c.foreign[from] = versionNote{speaks: speaks, at: now}
	c.stats.Mismatched++
	if !known || !slices.Equal(old.speaks, speaks) {
		c.logf("receiver at %s speaks keyrelay protocol %s; this sender speaks %d: install the same keyrelay release on both machines", from, wire.DescribeVersions(speaks), wire.Version)
	}
	return nil
}

// withVersions completes the receivers Peers listed in dst[from:]: one
// that said it speaks another version since it last acked shows the
// versions (Speaks), and one that only said so is listed too, never live.
func (c *Core) withVersions(dst []PeerStatus, from int) []PeerStatus {
	for i := range dst[from:] {
		p := &dst[from+i]
		if n, ok := c.foreign[p.Addr]; ok && n.at.After(p.LastHeard) {
			p.Speaks = n.speaks
		}
	}
	for addr, n := range c.foreign {
		if c.peers[addr] == nil {
			dst = append(dst, PeerStatus{Addr: addr, Speaks: n.speaks})
		}
	}
	return dst
}
