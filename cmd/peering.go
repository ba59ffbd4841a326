package cmd

import (
	"net"
	"net/netip"

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
