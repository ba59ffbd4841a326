package cmd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
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

// destination is one --to resolved: where packets go, and the receiver's
// key when the link is handshaken.
type destination struct {
	to   string // as given
	addr *net.UDPAddr
	key  [identity.KeyLen]byte
	name string // the peer's name ("" for this machine's own identity)
	// oneWay: a broadcast or multicast address, or --feedback=false.
	oneWay bool
}

// resolveDests resolves every --to (PROTOCOL.md §8.3), for send and for
// doctor's probes alike: a peer's name (its address from the peers file),
// or a peer's name and a port, NAME:PORT (its host from the peers file,
// at that port: a second recv on that machine), or HOST[:PORT]: the peer
// whose address is the same (IP and port, or the same host string); else,
// on a loopback address, this machine's own identity (send and recv on one
// machine share it); else a usage error naming the pairing to do. A
// broadcast or multicast address, and every destination without
// feedback, is one-way and needs no key; --insecure needs none either. A
// host that does not resolve and is close to a peer's name is answered
// with that name.
func resolveDests(to []string, list *peers.List, own *identity.Identity, oneWay, insecure bool) ([]destination, error) {
	var out []destination
	var errs []error
	for _, a := range to {
		d := destination{to: a}
		target := a
		p, byName := peerNamed(list, a)
		if byName {
			if p.Addr == "" {
				errs = append(errs, config.Usagef("--to %s: the peer %s has no address in the peers file: give it one with 'keyrelay peers add %s KEY --addr HOST' (or --to HOST)", a, p.Name, p.Name))
				continue
			}
			target = p.Addr
			if _, port, err := net.SplitHostPort(a); err == nil {
				target = net.JoinHostPort(hostOf(p.Addr), port)
			}
		}
		ua, err := transport.Resolve(target, DefaultPort)
		switch {
		case errors.Is(err, transport.ErrPortZero):
			errs = append(errs, config.Usagef("--to %q: %v", a, err))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("unable to resolve --to %q: %w%s", a, err, peerHint(list, hostOf(a))))
			continue
		}
		d.addr = ua
		if transport.IsBroadcast(ua.IP) || oneWay || insecure {
			d.oneWay = !insecure
			out = append(out, d)
			continue
		}
		if !byName {
			p, byName = peerAt(list, target, ua)
		}
		switch {
		case byName:
			d.key, d.name = p.Key, p.Name
		case ua.IP.IsLoopback() && own != nil:
			d.key = own.Public()
		default:
			errs = append(errs, config.Usagef("not paired with %s: run 'keyrelay pair' there and 'keyrelay pair %s' here (or 'keyrelay peers add NAME KEY --addr %s' with the key 'keyrelay id' prints there)", a, hostOf(a), hostOf(a)))
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// peerNamed finds the peer a --to names: NAME, or NAME:PORT (a recv of
// that machine on another port). A peer's name is a host name's letters,
// digits, '-', '_' and '.' (peers.CheckName), so NAME:PORT cannot be an
// IPv6 address.
func peerNamed(list *peers.List, to string) (peers.Peer, bool) {
	if p, ok := list.ByName(to); ok {
		return p, true
	}
	if host, _, err := net.SplitHostPort(to); err == nil && host != "" {
		return list.ByName(host)
	}
	return peers.Peer{}, false
}

// peerHint is what an unresolved --to host may have meant: the paired
// machine whose name is closest to it, else the names to choose from.
func peerHint(list *peers.List, host string) string {
	var names []string
	for _, p := range list.Peers() {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return ""
	}
	if near := spell.Closest(host, names); near != "" {
		return fmt.Sprintf("; did you mean the paired machine %q ('keyrelay peers' lists them)?", near)
	}
	return fmt.Sprintf(" (%q is no host name this machine resolves, nor a paired machine's name: %s)", host, strings.Join(names, ", "))
}

// peerAt finds the peer whose address is the destination's: the same
// host string, or one that resolves to the same IP and port.
func peerAt(list *peers.List, target string, ua *net.UDPAddr) (peers.Peer, bool) {
	want, _ := netip.AddrFromSlice(ua.IP)
	for _, p := range list.Peers() {
		if p.Addr == "" {
			continue
		}
		if strings.EqualFold(transport.WithDefaultPort(p.Addr, DefaultPort), transport.WithDefaultPort(target, DefaultPort)) {
			return p, true
		}
		pa, err := transport.Resolve(p.Addr, DefaultPort)
		if err != nil {
			continue
		}
		got, _ := netip.AddrFromSlice(pa.IP)
		if got.Unmap() == want.Unmap() && pa.Port == ua.Port {
			return p, true
		}
	}
	return peers.Peer{}, false
}

// hostOf is the host of a HOST[:PORT].
func hostOf(a string) string {
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// senderDests are the sender's destinations.
func senderDests(ds []destination) []sender.Dest {
	out := make([]sender.Dest, len(ds))
	for i, d := range ds {
		out[i] = sender.Dest{UDP: d.addr, OneWay: d.oneWay, PeerKey: d.key}
	}
	return out
}

// addrsOf lists the destinations' addresses.
func addrsOf(ds []destination) []net.Addr {
	out := make([]net.Addr, len(ds))
	for i, d := range ds {
		out[i] = d.addr
	}
	return out
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
