package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// roundTrip probes a recv at target and checks its clock: the checks of
// --peer (from "") and of each of send's destinations (from: where it came
// from, which the check's name and fix then give). target is resolved as
// send resolves it (resolveDests): a paired machine's name at the address
// its peers file gives, NAME:PORT at that port, HOST[:PORT] through DNS;
// the probe goes there under that machine's key. A broadcast or
// multicast destination is one-way: no one receiver answers for it, so it
// is named and not probed (send does not wait for its acks either).
func (o *Options) roundTrip(ctx context.Context, target, from string, key []byte) []Check {
	name, fixAddr := "round trip to "+target, ""
	if from != "" {
		name = "round trip to " + transport.WithDefaultPort(target, config.DefaultPort) + " (" + from + ")"
		fixAddr = "; if the receiver is elsewhere, correct " + from
	}
	d, err := o.dest(target)
	if err != nil {
		var ue config.UsageError
		fix := "check the host name and this machine's DNS (getent hosts NAME), or give the receiver's IP address or a paired machine's name ('keyrelay peers' lists them)"
		if errors.As(err, &ue) {
			// Not paired, or a port of 0: the error says what to do.
			fix = "as the error says (send refuses it the same way)"
		}
		return []Check{{Name: name, Needed: true, Err: err, Fix: fix + fixAddr}}
	}
	if d.Name != "" {
		// A paired machine: where its peers file says, which DNS
		// need not know.
		at := d.Addr.String()
		if from != "" {
			name = "round trip to " + target + " at " + at + " (paired machine " + d.Name + ", " + from + ")"
		} else {
			name = "round trip to " + target + " at " + at + " (paired machine " + d.Name + ")"
		}
	}
	if from != "" && transport.IsBroadcast(d.Addr.IP) {
		kind := "a broadcast address"
		if d.Addr.IP.IsMulticast() {
			kind = "a multicast group"
		}
		return []Check{{Name: name, Skipped: "not probed: " + kind + " is one-way (any number of receivers may answer, or none; send does not wait for their acks either)"}}
	}
	target = d.Addr.String()
	port := portOf(target)
	rtt, offset, err := o.probe(ctx, d, key)
	fix := "start 'keyrelay recv' there, listening on port " + port + ", with the same key file (or none on both) or both --insecure; open UDP " + port + " in its firewall"
	if !o.Insecure && o.id != nil {
		fix += "; on THAT machine, keyrelay peers must list this one (fingerprint " + identity.Fingerprint(o.id.Public()) + "); here, keyrelay peers must list it ('keyrelay pair' on both does both)"
	}
	fix += fixAddr
	if errors.As(err, &versionError{}) {
		fix = versionFix
	}
	checks := []Check{{Name: name, Needed: true, Err: err,
		OK:  fmt.Sprintf("a recv answered in %v (%s)", rtt.Round(time.Microsecond), o.keyWords("handshake and session under the same key")),
		Fix: fix}}
	if err != nil {
		return checks
	}
	// send's sessions with a receiver that answers are handshaken and
	// check no clock (PROTOCOL.md §8.3); only one-way packets (broadcast
	// and multicast destinations, send --feedback=false) are held to
	// recv's --max-skew (§8.6). So a clock far off is said, with its fix,
	// at half of the default --max-skew, but fails nothing.
	var clockErr error
	if offset > receiver.DefaultMaxSkew/2 || offset < -receiver.DefaultMaxSkew/2 {
		clockErr = fmt.Errorf("its clock is %s: one-way packets (broadcast or multicast destinations, send --feedback=false) past recv's --max-skew (default %v) are rejected", sender.DescribeOffset(offset), receiver.DefaultMaxSkew)
	}
	return append(checks, Check{Name: "clock offset to " + target, Err: clockErr,
		NotNeeded: "send's sessions with a recv that answers are handshaken and depend on no clock",
		OK:        fmt.Sprintf("its clock is %s (±%v; only one-way packets are held to recv's --max-skew, default %v)", sender.DescribeOffset(offset), (rtt/2 + time.Millisecond).Round(time.Millisecond), receiver.DefaultMaxSkew),
		Fix:       "keep both clocks in sync with NTP (timedatectl set-ntp true; chrony or systemd-timesyncd)"})
}

// checkListen checks the UDP port recv listens on: free, or held by a
// keyrelay recv that answers a probe (already running: fine), or held by
// something else (named, with how to find it).
func (o *Options) checkListen(ctx context.Context, key []byte) Check {
	pc, err := udpsock.Listen("udp", o.Listen)
	if err == nil {
		pc.Close()
		return Check{OK: o.Listen + " is free"}
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return Check{Needed: true, Err: err, Fix: "give recv --listen an address of this machine and a port, like :" + config.DefaultPort}
	}
	port := portOf(o.Listen)
	holder := "ss -ulpn 'sport = :" + port + "' shows the program holding it (run it with sudo to see other users' programs)"
	target := localAddr(o.Listen)
	d, perr := o.dest(target)
	var rtt time.Duration
	if perr == nil {
		rtt, _, perr = o.probe(ctx, d, key)
	}
	if perr == nil {
		return Check{OK: fmt.Sprintf("keyrelay recv already running on %s (it answered a probe to %s in %v, %s)", o.Listen, target, rtt.Round(time.Microsecond), o.keyWords("under this key"))}
	}
	if errors.As(perr, &versionError{}) {
		return Check{Needed: true, Err: fmt.Errorf("%s is in use by a keyrelay recv of another protocol version: %w", o.Listen, perr),
			Fix: versionFix + "; or give recv --listen another port (and send --to HOST:PORT)"}
	}
	// A recv whose --allow leaves out the address the probe comes from
	// drops it unread (PROTOCOL.md §8.8 step 1), as it should: its
	// silence then says nothing of who holds the port.
	if from, ok := probeSource(target); ok && len(o.Allow) > 0 {
		if allow, err := config.ParseAllow(o.Allow); err == nil && !slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(from) }) {
			return Check{Skipped: fmt.Sprintf("not checked: %s is in use, and recv's allow (%s) leaves out %s, where doctor's probe comes from: a recv running there drops it unread (add %s to allow to let doctor check it; %s)",
				o.Listen, strings.Join(o.Allow, ", "), from, netip.PrefixFrom(from, from.BitLen()), holder)}
		}
	}
	return Check{Needed: true,
		Err: fmt.Errorf("%s is in use by a program that does not answer a keyrelay probe %s: another program, or a keyrelay recv with another key or another --insecure setting", o.Listen, o.keyWords("under this key")),
		Fix: holder + "; stop it, or give recv --listen another port (and send --to HOST:PORT)"}
}

// probeSource is the address a probe of target comes from: target's own
// when it is a loopback or unspecified address (a probe of this machine),
// false otherwise.
func probeSource(target string) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// portOf is the port of HOST:PORT (the whole string if it has none).
func portOf(hostport string) string {
	if _, port, err := net.SplitHostPort(hostport); err == nil {
		return port
	}
	return hostport
}

// localAddr is where a recv listening on listen answers on this machine:
// a wildcard host is reached on loopback.
func localAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// dest resolves a destination as send does (resolveDests), with the
// identity and peers file checkIdentity loaded.
func (o *Options) dest(target string) (dest.Resolved, error) {
	list := o.peerList
	if list == nil {
		list = &peers.List{}
	}
	ds, err := dest.Resolve([]string{target}, list, o.id, false, o.Insecure)
	if err != nil {
		return dest.Resolved{}, err
	}
	return ds[0], nil
}

// probe runs one probe session with the recv at d, under d's key.
func (o *Options) probe(ctx context.Context, d dest.Resolved, key []byte) (rtt, offset time.Duration, err error) {
	timeout := o.ProbeTimeout
	if timeout == 0 {
		timeout = defaultProbeTimeout
	}
	pc := sender.ProbeConfig{PSK: key, Insecure: o.Insecure, Identity: o.id, PeerKey: d.Key}
	if o.Insecure {
		pc.PSK = nil
	}
	return probePeer(ctx, d.Addr.String(), pc, timeout)
}

// probePeer runs one short session with a running recv at peer, with send's
// own code (sender.Probe): its handshake, keys and acks, so a recv that
// takes only handshaken senders (--one-way=false) answers it too. It
// returns the RTT of the first packet acked and the receiver's clock minus
// ours, or why nothing was acked.
func probePeer(ctx context.Context, peer string, pc sender.ProbeConfig, timeout time.Duration) (rtt, offset time.Duration, err error) {
	addrs, err := dest.ResolveAll([]string{peer})
	if err != nil {
		return 0, 0, err
	}
	conn, err := udpsock.Listen("udp", ":0")
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	res, err := sender.Probe(ctx, conn, addrs[0], pc, timeout)
	port := portOf(addrs[0].String())
	var verr sender.VersionError
	switch {
	case errors.As(err, &verr):
		return 0, 0, versionError{verr.Speaks}
	case errors.Is(err, sender.ErrNoAcks):
		return 0, 0, fmt.Errorf("the recv there answered the handshake but acked nothing within %v: it runs with --acks=false (send then never knows what arrived), or its acks are lost on the way back", timeout)
	case errors.Is(err, sender.ErrNoAnswer):
		return 0, 0, fmt.Errorf("no answer within %v (no recv on port %s there, this machine not paired there, another key file, --insecure on one end only, or a firewall dropping UDP %s; recv's log names an unpaired machine)", timeout, port, port)
	case err != nil:
		return 0, 0, err
	}
	return res.RTT, res.ClockOffset, nil
}

// versionError is a probe's answer from a recv of another protocol
// version (its version notice, PROTOCOL.md §10).
type versionError struct{ speaks []uint8 }

func (e versionError) Error() string {
	return fmt.Sprintf("the recv there speaks keyrelay protocol %s; this keyrelay speaks %d", wire.DescribeVersions(e.speaks), wire.Version)
}

// versionFix is the fix of a versionError.
const versionFix = "install the same keyrelay release on both machines ('keyrelay version' on each names it)"
