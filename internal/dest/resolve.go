package dest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
)

// Resolved is one --to resolved: where packets go, and the receiver's
// key when the link is handshaken.
type Resolved struct {
	To   string // as given
	Addr *net.UDPAddr
	Key  [identity.KeyLen]byte
	Name string // the peer's name ("" for this machine's own identity)
	// OneWay: a broadcast or multicast address, or --feedback=false.
	OneWay bool
}

// Resolve resolves every --to (PROTOCOL.md §8.3), for send and for
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
func Resolve(to []string, list *peers.List, own *identity.Identity, oneWay, insecure bool) ([]Resolved, error) {
	var out []Resolved
	var errs []error
	for _, a := range to {
		d := Resolved{To: a}
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
		ua, err := transport.Resolve(target, config.DefaultPort)
		switch {
		case errors.Is(err, transport.ErrPortZero):
			errs = append(errs, config.Usagef("--to %q: %v", a, err))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("unable to resolve --to %q: %w%s", a, err, peerHint(list, hostOf(a))))
			continue
		}
		d.Addr = ua
		if transport.IsBroadcast(ua.IP) || oneWay || insecure {
			d.OneWay = !insecure
			out = append(out, d)
			continue
		}
		if !byName {
			p, byName = peerAt(list, target, ua)
		}
		switch {
		case byName:
			d.Key, d.Name = p.Key, p.Name
		case ua.IP.IsLoopback() && own != nil:
			d.Key = own.Public()
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
		if strings.EqualFold(transport.WithDefaultPort(p.Addr, config.DefaultPort), transport.WithDefaultPort(target, config.DefaultPort)) {
			return p, true
		}
		pa, err := transport.Resolve(p.Addr, config.DefaultPort)
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

// SenderDests are the sender's destinations.
func SenderDests(ds []Resolved) []sender.Dest {
	out := make([]sender.Dest, len(ds))
	for i, d := range ds {
		out[i] = sender.Dest{UDP: d.Addr, OneWay: d.OneWay, PeerKey: d.Key}
	}
	return out
}

// Addrs lists the destinations' addresses.
func Addrs(ds []Resolved) []net.Addr {
	out := make([]net.Addr, len(ds))
	for i, d := range ds {
		out[i] = d.Addr
	}
	return out
}

// ResolveAll resolves every --to address, adding the default port where
// there is none.
func ResolveAll(to []string) ([]net.Addr, error) {
	var out []net.Addr
	var errs []error
	for _, a := range to {
		ua, err := transport.Resolve(a, config.DefaultPort)
		switch {
		case errors.Is(err, transport.ErrPortZero):
			errs = append(errs, config.Usagef("--to %q: %v", a, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("unable to resolve --to %q: %w", a, err))
		default:
			out = append(out, ua)
		}
	}
	return out, errors.Join(errs...)
}
