package peers

import (
	"fmt"
	"os"
	"time"

	"github.com/keyrelay/keyrelay/identity"
)

// Watch is recv's view of its peers file (PROTOCOL.md §8.1): Lookup
// is the receiver's test of a sender's key (receiver.Config.Peer), and
// Recheck reads the file again when it has changed
// (receiver.Config.Recheck, asked at most twice a second), so a machine
// paired while recv runs is accepted from its next handshake and one
// removed has its sessions ended within a second. A file that does not
// load accepts nobody until it loads again: the last list it held is not
// kept, since the edit that broke it may be the removal of a machine no
// longer trusted. That is said at once, even with --quiet, and again at
// most once a minute while a machine is refused for it. Not safe for
// concurrent use: the receiver calls it from its one loop.
type Watch struct {
	path   string
	list   *List     // nil while the file does not load
	broken error     // why it does not load
	said   time.Time // when broken was last said
	logf   func(string, ...any)
	errf   func(string, ...any) // said even with --quiet
	stamp  string               // fileStamp when last read
}

// NewWatch loads the peers file at path for recv, which logs with logf,
// and errors (said even with --quiet) with errf; an error is the file's
// (recv does not start without its peers).
func NewWatch(path string, logf, errf func(string, ...any)) (*Watch, error) {
	w := &Watch{path: path, logf: logf, errf: errf}
	w.stamp = fileStamp(path)
	l, err := Load(path)
	if err != nil {
		return nil, err
	}
	w.list = l
	return w, nil
}

// Len is how many paired machines the file held when last read.
func (w *Watch) Len() int {
	if w.list == nil {
		return 0
	}
	return w.list.Len()
}

// Lookup names a paired machine by its key; none while the file does not
// load.
func (w *Watch) Lookup(k [identity.KeyLen]byte) (string, bool) {
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

// Recheck reads the peers file again if it changed since it was last
// read, and reports whether it did (the paired machines may have
// changed).
func (w *Watch) Recheck(now time.Time) bool {
	st := fileStamp(w.path)
	if st == w.stamp {
		return false
	}
	w.stamp = st
	l, err := Load(w.path)
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
