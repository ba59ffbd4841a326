package cmd

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
)

// loadIdentity loads this machine's identity from path, making it on
// first use (and saying so on stderr, as 'keyrelay id' does), and says its
// fingerprint: the other machines' peers files name it.
func loadIdentity(path, who string, logf func(string, ...any)) (*identity.Identity, error) {
	id, created, err := identity.LoadOrCreate(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "identity"}
	}
	if created {
		logf("made a new identity at %s", path)
	}
	logf("identity %s", identity.Fingerprint(id.Public()))
	return id, nil
}

// loadPeersAt loads the peers file at path (a missing one is empty).
func loadPeersAt(path string) (*peers.List, error) {
	l, err := peers.Load(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "peers"}
	}
	return l, nil
}

// unansweredAddrs lists the destinations whose handshake has no answer.
func unansweredAddrs(s *sender.Sender) []string {
	var out []string
	for _, u := range s.Unanswered() {
		out = append(out, u.Addr)
	}
	return out
}

// handshakeWhy is what the handshake with addr waits on ("" if nothing).
func handshakeWhy(s *sender.Sender, addr string) string {
	for _, u := range s.Unanswered() {
		if u.Addr == addr {
			return u.Handshake
		}
	}
	return ""
}

// hostAddr reports whether a is an address of one of this machine's
// network interfaces: the receiver accepts its own identity from one
// (receiver.Config.Local). Asked at each such handshake, as addresses
// come and go.
func hostAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if h, ok := netip.AddrFromSlice(n.IP); ok && h.Unmap() == a.Unmap() {
				return true
			}
		}
	}
	return false
}

// peersWatch is recv's view of its peers file (PROTOCOL.md §8.1): lookup
// is the receiver's test of a sender's key (receiver.Config.Peer), and
// recheck reads the file again when it has changed
// (receiver.Config.Recheck, asked at most twice a second), so a machine
// paired while recv runs is accepted from its next handshake and one
// removed has its sessions ended within a second. A file that does not
// load accepts nobody until it loads again: the last list it held is not
// kept, since the edit that broke it may be the removal of a machine no
// longer trusted. That is said at once, even with --quiet, and again at
// most once a minute while a machine is refused for it. Not safe for
// concurrent use: the receiver calls it from its one loop.
type peersWatch struct {
	path   string
	list   *peers.List // nil while the file does not load
	broken error       // why it does not load
	said   time.Time   // when broken was last said
	logf   func(string, ...any)
	errf   func(string, ...any) // said even with --quiet
	stamp  string               // fileStamp when last read
}

// newPeersWatch loads the peers file at path; an error is the file's
// (recv does not start without its peers).
func newPeersWatch(path string, logf, errf func(string, ...any)) (*peersWatch, error) {
	w := &peersWatch{path: path, logf: logf, errf: errf}
	w.stamp = fileStamp(path)
	l, err := loadPeersAt(path)
	if err != nil {
		return nil, err
	}
	w.list = l
	return w, nil
}

// lookup names a paired machine by its key; none while the file does not
// load.
func (w *peersWatch) lookup(k [identity.KeyLen]byte) (string, bool) {
	if w.list == nil {
		if now := time.Now(); now.Sub(w.said) >= time.Minute {
			w.said = now
			w.errf("ERROR: refused %s: the peers file %s does not load (%v), so no paired machine is accepted until it does", identity.Fingerprint(k), w.path, w.broken)
		}
		return "", false
	}
	p, ok := w.list.ByKey(k)
	return p.Name, ok
}

// recheck reads the peers file again if it changed since it was last
// read, and reports whether it did (the paired machines may have
// changed).
func (w *peersWatch) recheck(now time.Time) bool {
	st := fileStamp(w.path)
	if st == w.stamp {
		return false
	}
	w.stamp = st
	l, err := peers.Load(w.path)
	if err != nil {
		w.list, w.broken, w.said = nil, err, now
		w.errf("ERROR: the peers file %s changed and does not load (%v): no paired machine is accepted until it loads again, and their sessions are ended", w.path, err)
		return true
	}
	if w.list == nil {
		w.errf("the peers file %s loads again: accepts %d paired machines and this one", w.path, l.Len())
	} else {
		w.logf("peers file %s read again: accepts %d paired machines and this one", w.path, l.Len())
	}
	w.list, w.broken = l, nil
	return true
}

// fileStamp is what tells that a file changed: its size, modification
// time, mode and, where the system gives them, its device and inode
// (fileID: a file renamed over it, as peers.Save does, is another inode
// even within the file system's clock tick); "" when it cannot be read.
func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d %d %v %s", st.Size(), st.ModTime().UnixNano(), st.Mode(), fileID(st))
}
