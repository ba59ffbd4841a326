package cmd

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/sender"
)

// The running send's side of keyrelay switch and status, for both kinds
// of send: one queue to every destination (plainControl), and a Group
// routing keys per destination (groupControl, sendgroup.go).

// grabbingSource is src as a source that owns the keyboard (--grab) and
// can be switched from another goroutine, or nil.
func grabbingSource(src sender.Source) sender.ModeSource {
	if ms, ok := src.(sender.ModeSource); ok && ms.Grabbing() {
		return ms
	}
	return nil
}

// sourceMode fills in what an answer says of the source: its --input,
// whether it grabs, and its mode.
func sourceMode(ans *controlAnswer, src sender.Source, input string) {
	ans.Input, ans.Mode = input, "relaying"
	if g, ok := src.(interface{ Grabbing() bool }); ok {
		ans.Grab = g.Grabbing()
	}
	if sw, ok := src.(sender.SwitchSource); ok && !sw.Relaying() {
		ans.Mode = "local"
	}
}

// whyNoSwitch says why a send with src (--input input) cannot switch: its
// source has no keyboard to give back or take.
func whyNoSwitch(src sender.Source, input string) string {
	if _, ok := src.(sender.ModeSource); ok {
		return fmt.Sprintf("--input %s without --grab does not own the keyboard: every key acts on this machine and is relayed, so there is nothing to switch (start send with --grab to switch with keyrelay switch or --hotkey)", input)
	}
	switch input {
	case "script":
		return "--input script plays a script, which has no keyboard to give back or take: stop send to stop it (to switch between destinations, start send with --switch)"
	case "terminal":
		return "--input terminal reads keys typed in send's terminal, which act nowhere else: there is no keyboard to give back or take (to switch between destinations, start send with --switch)"
	}
	return fmt.Sprintf("--input %s cannot be told to give the keyboard back or take it from another process (its --hotkey switches it; to switch between destinations, start send with --switch)", input)
}

// destState is a destination's state in keyrelay status, from what s
// heard of it (addr: as PeerStatus names it).
func destState(s *sender.Sender, addr string) (string, bool) {
	for _, p := range s.Peers() {
		if p.Addr != addr {
			continue
		}
		state := "live"
		if !p.Live {
			state = fmt.Sprintf("silent %v", time.Since(p.LastHeard).Round(100*time.Millisecond))
		}
		if p.SRTT > 0 {
			state += " rtt " + p.SRTT.Round(10*time.Microsecond).String()
		}
		return state, p.Live
	}
	return "no answer yet", false
}

// plainControl answers keyrelay switch and status for a send that sends
// every key to every destination in one queue (one destination, or
// mirror). It switches only a source that owns the keyboard: local use
// gives it back, a destination's name takes it again. Safe for
// concurrent use: every field is set before the control socket opens.
type plainControl struct {
	s     *sender.Sender
	src   sender.Source
	input string
	names []string   // the destinations' names (their --to when unnamed)
	addrs []net.Addr // and addresses, in the same order
}

// Switch takes a destination's name or "local", case ignored (as
// sender.Router.Index).
func (h *plainControl) Switch(ctx context.Context, name string) error {
	local := strings.EqualFold(name, "local")
	known := local
	for _, n := range h.names {
		known = known || strings.EqualFold(n, name)
	}
	if !known {
		return fmt.Errorf("%w %q", sender.ErrNoSuchDestination, name)
	}
	ms := grabbingSource(h.src)
	if ms == nil {
		return fmt.Errorf("%w: %s", errCannotSwitch, whyNoSwitch(h.src, h.input))
	}
	return sender.SetMode(ctx, ms, !local)
}

func (h *plainControl) Status() controlAnswer {
	ans := controlAnswer{Target: "all"}
	if len(h.names) == 1 {
		ans.Target = h.names[0]
	}
	sourceMode(&ans, h.src, h.input)
	if ans.Mode == "local" {
		ans.Target = "local"
	}
	if grabbingSource(h.src) != nil {
		ans.CanSwitch = true
		ans.Switch = "local gives the keyboard back; a destination's name takes it again"
		if len(h.names) > 1 {
			ans.Switch += " (every key to every destination: mirror)"
		}
	} else {
		ans.Switch = "cannot: " + whyNoSwitch(h.src, h.input)
	}
	for i, n := range h.names {
		d := destStatus{Name: n, Addr: h.addrs[i].String(), Keys: "physical"}
		d.State, d.Live = destState(h.s, d.Addr)
		ans.Dests = append(ans.Dests, d)
	}
	return ans
}
