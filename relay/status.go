package relay

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/receiver"
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
			line := fmt.Sprintf("← %016x %-22s %-14s %5.1f pkt/s  %s", s.ID, s.Addr, state, pps, HeldText(s.Held, debug))
			attr := []any{"session", fmt.Sprintf("%016x", s.ID), "from", s.Addr, "live", s.Live, "packets_per_s", math.Round(pps*10) / 10}
			attr = append(attr, HeldAttrs(s.Held, debug)...)
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

// HeldText says how many keys h holds down ("holds 2 keys"); with
// debug (--debug) it names them too. Without, no status line names a
// key: the keys of a password typed would be on the screen and in the
// logs.
func HeldText(h []keys.Key, debug bool) string {
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

// HeldAttrs are HeldText's structured fields: held, the count, always;
// held_keys, the names, only with debug.
func HeldAttrs(h []keys.Key, debug bool) []any {
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
