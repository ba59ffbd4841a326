package relay

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// recvStatus makes the status lines of a receiver: one per session heard
// in the last minute. A session whose packets are being lost says after
// how long a silence its keys are released (its allowance, longer than
// timeout).
func recvStatus(r *receiver.Receiver, timeout time.Duration, debug bool) func() ([]string, [][]any) {
	lastPackets, last := map[uint64]int{}, time.Now()
	return func() ([]string, [][]any) {
		now := time.Now()
		dt := now.Sub(last).Seconds()
		last = now
		var text []string
		var attrs [][]any
		for _, s := range r.Status() {
			if now.Sub(s.LastHeard) > time.Minute {
				continue
			}
			pps := float64(s.Packets-lastPackets[s.ID]) / dt
			lastPackets[s.ID] = s.Packets
			state := "live"
			if !s.Live {
				state = fmt.Sprintf("ended %v ago", now.Sub(s.LastHeard).Round(time.Second))
			}
			line := fmt.Sprintf("← %016x %-22s %-14s %5.1f pkt/s  %s", s.ID, s.Addr, state, pps, heldText(s.Held, debug))
			attr := []any{"session", fmt.Sprintf("%016x", s.ID), "from", s.Addr, "live", s.Live, "packets_per_s", math.Round(pps*10) / 10}
			attr = append(attr, heldAttrs(s.Held, debug)...)
			if s.Allowance > timeout {
				line += allowanceNote(s)
				attr = append(attr, "loss_pct", math.Round(100*s.Loss), "released_after", s.Allowance.Round(time.Millisecond).String())
			}
			text = append(text, line)
			attrs = append(attrs, attr)
		}
		// Senders of another protocol version: nothing of theirs is
		// typed, and the status says why (PROTOCOL.md §10).
		for _, v := range r.Versions() {
			if now.Sub(v.LastHeard) > time.Minute {
				continue
			}
			text = append(text, fmt.Sprintf("← %-39s speaks keyrelay protocol %s, this receiver %d: nothing it sends is typed", v.Addr, wire.DescribeVersions(v.Speaks), wire.Version))
			attrs = append(attrs, []any{"from", v.Addr, "protocol_version", int(v.Speaks[len(v.Speaks)-1]), "ours", wire.Version, "live", false})
		}
		if len(text) == 0 {
			text = []string{"← no sender yet"}
		}
		return text, attrs
	}
}

// allowanceNote says, for a session losing packets, after how long a
// silence its keys are released.
func allowanceNote(s receiver.SessionStatus) string {
	return fmt.Sprintf("  %.0f%% lost: released after %v silent", 100*s.Loss, s.Allowance.Round(10*time.Millisecond))
}

// heldText says how many keys h holds down ("holds 2 keys"); with
// debug (--debug) it names them too. Without, no status line names a
// key: the keys of a password typed would be on the screen and in the
// logs.
func heldText(h []keys.Key, debug bool) string {
	var s string
	switch len(h) {
	case 0:
		return "holds no key"
	case 1:
		s = "holds 1 key"
	default:
		s = fmt.Sprintf("holds %d keys", len(h))
	}
	if debug {
		s += " (" + keyNames(h) + ")"
	}
	return s
}

// heldAttrs are heldText's structured fields: held, the count, always;
// held_keys, the names, only with debug.
func heldAttrs(h []keys.Key, debug bool) []any {
	a := []any{"held", len(h)}
	if debug {
		a = append(a, "held_keys", keyNames(h))
	}
	return a
}

// keyNames joins key names with "+".
func keyNames(h []keys.Key) string {
	s := make([]string, len(h))
	for i, c := range h {
		s[i] = c.String()
	}
	return strings.Join(s, "+")
}

// DebugNote is what --debug says once at start.
const DebugNote = "debug: key names appear in the log, passwords typed included"

// sendStatus makes the status lines of a sender: one per destination (or
// per receiver that acked, for a broadcast).
func sendStatus(s *sender.Sender, dests []net.Addr, src sender.Source, timeout time.Duration, debug bool) func() ([]string, [][]any) {
	sw, _ := src.(routing.SwitchSource)
	lastPackets, last := 0, time.Now()
	return func() ([]string, [][]any) {
		st := s.Status()
		unanswered := unansweredAddrs(s)
		uptime := st.Uptime
		now := time.Now()
		pps := float64(st.Packets-lastPackets) / now.Sub(last).Seconds()
		lastPackets, last = st.Packets, now
		var text []string
		var attrs [][]any
		byAddr := map[string]sender.PeerStatus{}
		for _, p := range st.Peers {
			byAddr[p.Addr] = p
		}
		addrs := make([]string, 0, len(dests))
		for _, d := range dests {
			addrs = append(addrs, d.String())
		}
		for a := range byAddr {
			if !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		for _, a := range addrs {
			p, ok := byAddr[a]
			state := "no answer yet"
			if !ok && slices.Contains(unanswered, a) && uptime >= timeout {
				state = "no handshake"
				if why := handshakeWhy(s, a); why != "" && why != "no answer" {
					state = "handshake: " + why
				}
			}
			if ok && p.Live {
				state = "live"
			} else if ok && p.Speaks != nil {
				state = fmt.Sprintf("speaks protocol %s, not %d", wire.DescribeVersions(p.Speaks), wire.Version)
			} else if ok {
				state = fmt.Sprintf("silent %v", now.Sub(p.LastHeard).Round(100*time.Millisecond))
			}
			// Only measured figures: no RTT before a sample, no loss
			// before the acks settled a packet's fate.
			rtt, loss := "-", "-"
			if p.SRTT > 0 {
				rtt = p.SRTT.Round(10 * time.Microsecond).String()
			}
			if p.Settled > 0 {
				loss = fmt.Sprintf("%.1f%%", 100*p.Loss)
			}
			text = append(text, fmt.Sprintf("→ %-22s %-13s rtt %-9s loss %6s  %5.1f pkt/s  %s  waiting %d%s",
				a, state, rtt, loss, pps, heldText(st.Held, debug), st.Pending, clockNote(p)))
			attr := []any{"receiver", a, "live", ok && p.Live, "handshake_answered", !slices.Contains(unanswered, a)}
			if p.SRTT > 0 {
				attr = append(attr, "rtt_ms", float64(p.SRTT.Round(time.Microsecond))/float64(time.Millisecond))
			}
			if p.Settled > 0 {
				attr = append(attr, "loss", math.Round(p.Loss*1000)/1000)
			}
			attr = append(attr, "packets_per_s", math.Round(pps*10)/10)
			attr = append(attr, heldAttrs(st.Held, debug)...)
			attr = append(attr, "waiting", st.Pending)
			if p.ClockKnown {
				attr = append(attr, "clock_offset_ms", p.ClockOffset.Milliseconds())
			}
			if p.Speaks != nil {
				attr = append(attr, "protocol_version", int(p.Speaks[len(p.Speaks)-1]), "ours", wire.Version)
			}
			attrs = append(attrs, attr)
		}
		if g, ok := src.(interface{ Grabbing() bool }); ok && g.Grabbing() && sw != nil {
			mode := "relaying: the keyboard is grabbed"
			if !sw.Relaying() {
				mode = "local use: keys act here"
			}
			text = append([]string{"mode: " + mode}, text...)
			attrs = append([][]any{{"relaying", sw.Relaying()}}, attrs...)
		}
		return text, attrs
	}
}

// liveness sums up, for the terminal source's one status line, how the
// receivers answer: only what was measured (no RTT before a sample), and
// after timeout with no answer the likely causes.
func liveness(s *sender.Sender, dests []net.Addr, feedback bool, timeout time.Duration) func() string {
	start := time.Now()
	// Which destinations answer for themselves, once: transport.IsBroadcast
	// lists the interfaces, and the line is redrawn every second.
	var unicast []string
	for _, d := range dests {
		if !transport.IsBroadcast(d.(*net.UDPAddr).IP) {
			unicast = append(unicast, d.String())
		}
	}
	return func() string {
		if !feedback {
			return "one-way: delivery not confirmed"
		}
		byAddr := map[string]sender.PeerStatus{}
		for _, p := range s.Peers() {
			byAddr[p.Addr] = p
		}
		var live, silent, unheard int
		var rtt time.Duration
		var other []string
		for _, d := range unicast {
			p, ok := byAddr[d]
			switch {
			case !ok:
				unheard++
			case p.Live:
				live++
				rtt = max(rtt, p.SRTT)
			case p.Speaks != nil:
				other = append(other, fmt.Sprintf("%s speaks protocol %s, not %d: install the same keyrelay release on both", d, wire.DescribeVersions(p.Speaks), wire.Version))
			default:
				silent++
			}
		}
		var parts []string
		if live > 0 {
			l := "live"
			if live+silent+unheard > 1 {
				l = fmt.Sprintf("%d live", live)
			}
			if rtt > 0 {
				l += " rtt " + rtt.Round(10*time.Microsecond).String()
			}
			parts = append(parts, l)
		}
		if silent > 0 {
			parts = append(parts, fmt.Sprintf("%d silent", silent))
		}
		if unheard > 0 {
			l := "no answer yet"
			if time.Since(start) >= timeout {
				l = fmt.Sprintf("no answer after %v: recv not running, another key, --insecure on one end only, or a firewall?", timeout)
			}
			if live+silent > 0 {
				l = fmt.Sprintf("%d %s", unheard, l)
			}
			parts = append(parts, l)
		}
		parts = append(parts, other...)
		if len(parts) == 0 {
			return fmt.Sprintf("%d receivers answered (broadcast)", len(byAddr))
		}
		return strings.Join(parts, ", ")
	}
}

// clockNote flags, on the live line, a receiver clock a second or more
// off ours: drift toward recv's --max-skew, past which it drops every
// packet, should show before it happens.
func clockNote(p sender.PeerStatus) string {
	if !p.ClockKnown || (p.ClockOffset < time.Second && p.ClockOffset > -time.Second) {
		return ""
	}
	return "  clock " + sender.DescribeOffset(p.ClockOffset.Round(100*time.Millisecond))
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
