package control

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/sender"
)

// The running send's side of keyrelay switch and status, for both kinds
// of send: one queue to every destination (Plain), and a routing.Group
// routing keys per destination (Group).

// grabbingSource is src as a source that owns the keyboard (--grab) and
// can be switched from another goroutine, or nil.
func grabbingSource(src sender.Source) routing.ModeSource {
	if ms, ok := src.(routing.ModeSource); ok && ms.Grabbing() {
		return ms
	}
	return nil
}

// sourceMode fills in what an answer says of the source: its --input,
// whether it grabs, and its mode.
func sourceMode(ans *Answer, src sender.Source, input string) {
	ans.Input, ans.Mode = input, "relaying"
	if g, ok := src.(interface{ Grabbing() bool }); ok {
		ans.Grab = g.Grabbing()
	}
	if sw, ok := src.(routing.SwitchSource); ok && !sw.Relaying() {
		ans.Mode = "local"
	}
}

// whyNoSwitch says why a send with src (--input input) cannot switch: its
// source has no keyboard to give back or take (a script, a terminal: its
// entry's capabilities say which).
func whyNoSwitch(src sender.Source, input string) string {
	if _, ok := src.(routing.ModeSource); ok {
		return fmt.Sprintf("--input %s without --grab does not own the keyboard: every key acts on this machine and is relayed, so there is nothing to switch (start send with --grab to switch with keyrelay switch or --hotkey)", input)
	}
	b, _ := capture.LookupSource(input)
	switch {
	case b.Caps.Script:
		return "--input " + input + " plays a script, which has no keyboard to give back or take: stop send to stop it (to switch between destinations, start send with --switch)"
	case b.Caps.Terminal:
		return "--input " + input + " reads keys typed in send's terminal, which act nowhere else: there is no keyboard to give back or take (to switch between destinations, start send with --switch)"
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

// Plain answers keyrelay switch and status for a send that sends every
// key to every destination in one queue (one destination, or mirror). It
// switches only a source that owns the keyboard: local use gives it back,
// a destination's name takes it again. Safe for concurrent use once made:
// its fields are not changed after the control socket opens.
type Plain struct {
	Sender *sender.Sender
	Source sender.Source
	Input  string     // send's --input
	Names  []string   // the destinations' names (their --to when unnamed)
	Addrs  []net.Addr // and addresses, in the same order
}

// Switch takes a destination's name or "local", case ignored (as
// routing.Router.Index).
func (h *Plain) Switch(ctx context.Context, name string) error {
	local := strings.EqualFold(name, "local")
	known := local
	for _, n := range h.Names {
		known = known || strings.EqualFold(n, name)
	}
	if !known {
		return fmt.Errorf("%w %q", routing.ErrNoSuchDestination, name)
	}
	ms := grabbingSource(h.Source)
	if ms == nil {
		return fmt.Errorf("%w: %s", ErrCannotSwitch, whyNoSwitch(h.Source, h.Input))
	}
	return routing.SetMode(ctx, ms, !local)
}

// Status is the send's source, mode and target, and each destination's
// state.
func (h *Plain) Status() Answer {
	ans := Answer{Target: "all"}
	if len(h.Names) == 1 {
		ans.Target = h.Names[0]
	}
	sourceMode(&ans, h.Source, h.Input)
	if ans.Mode == "local" {
		ans.Target = "local"
	}
	if grabbingSource(h.Source) != nil {
		ans.CanSwitch = true
		ans.Switch = "local gives the keyboard back; a destination's name takes it again"
		if len(h.Names) > 1 {
			ans.Switch += " (every key to every destination: mirror)"
		}
	} else {
		ans.Switch = "cannot: " + whyNoSwitch(h.Source, h.Input)
	}
	for i, n := range h.Names {
		d := DestStatus{Name: n, Addr: h.Addrs[i].String(), Keys: "physical"}
		d.State, d.Live = destState(h.Sender, d.Addr)
		ans.Dests = append(ans.Dests, d)
	}
	return ans
}

// Group answers keyrelay switch and status for a send that routes keys
// to a Sender per destination (routing.Group). Safe for concurrent use
// once made: the Group is, and the rest is not changed after the control
// socket opens.
type Group struct {
	Group  *routing.Group
	Dests  []GroupDest // in the Group's order
	Source sender.Source
	Input  string // send's --input
	Mirror bool   // every key to every destination until a switch
}

// GroupDest is one destination of a Group.
type GroupDest struct {
	Name       string
	Addr       string
	Characters bool // it gets characters (keys = "characters")
	Sender     *sender.Sender
}

// Switch switches the Group (routing.Group.Switch).
func (h *Group) Switch(ctx context.Context, name string) error { return h.Group.Switch(ctx, name) }

// Status is the send's source, mode and target, and each destination's
// state and what it gets.
func (h *Group) Status() Answer {
	ans := Answer{Target: h.Group.Target(), CanSwitch: true}
	sourceMode(&ans, h.Source, h.Input)
	switch {
	case h.Mirror:
		ans.Switch = "local sends keys to no destination; a destination's name to every one again (mirror)"
	default:
		ans.Switch = "a destination's name sends keys to it alone; local to none"
	}
	if grabbingSource(h.Source) != nil {
		ans.Switch += "; the grab follows"
	}
	for _, r := range h.Dests {
		d := DestStatus{Name: r.Name, Addr: r.Addr, Keys: "physical"}
		if r.Characters {
			d.Keys = "characters"
		}
		d.State, d.Live = destState(r.Sender, d.Addr)
		ans.Dests = append(ans.Dests, d)
	}
	return ans
}
