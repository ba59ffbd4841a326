package sender

import (
	"fmt"
	"net"
	"time"

	"github.com/keyrelay/keyrelay/transport"
)

// Outcome is what the end of a session says of one destination: it
// acknowledged the final state (every key released, after all the other
// events) and every key event, or why not. send exits 0 only when every
// unicast destination is Confirmed and typed nothing into no application.
type Outcome int

const (
	// Confirmed: it acknowledged the final state and every key event
	// (some may still have reached no application: Delivery.Nowhere).
	Confirmed Outcome = iota
	// OneWay: a broadcast or multicast destination, which no one
	// receiver answers for: nothing is confirmed.
	OneWay
	// OtherVersion: it said it speaks another protocol version
	// (PeerStatus.Speaks, PROTOCOL.md §10) and did not acknowledge the
	// final state.
	OtherVersion
	// NoAnswer: its handshake was never answered, so no key was sent to
	// it.
	NoAnswer
	// NoHandshake: its handshake did not complete (DestReport.Handshake
	// says what it waits on), so no key was sent to it.
	NoHandshake
	// Unheard: nothing it acknowledged arrived (a destination without a
	// handshake: --insecure).
	Unheard
	// Missed: key events it never acknowledged (Delivery.Undelivered).
	Missed
	// NotFinal: it did not acknowledge the final state.
	NotFinal
)

// Report is what a session delivered, destination by destination, as
// its acks and the ledger (ledger.go) tell it: Sender.Report builds it
// once Run has returned, and send renders it as its summary and exit
// status.
type Report struct {
	Session uint64
	Started time.Time // when Run started the session
	// Events is the number of key events of the session: the most any
	// destination was owed.
	Events int
	// Heard is how many receivers acknowledged anything.
	Heard int
	// Dests is each destination, in Config.Dests' order.
	Dests []DestReport
	// Others are the receivers heard that are no accounted destination:
	// a broadcast's.
	Others []PeerStatus
}

// DestReport is one destination's part of a Report.
type DestReport struct {
	Addr    string
	Outcome Outcome
	// Handshake is what its handshake waits on when it never completed
	// (LinkState.Handshake), "" otherwise.
	Handshake string
	Delivery  Delivery   // its ledger: Accounted false for a one-way destination
	Peer      PeerStatus // what its acks told, when Heard
	Heard     bool
}

// Report is what the session delivered to each destination. Meant for
// after Run has returned; during Run the ledger is empty and every
// destination reads as not yet confirmed.
func (s *Sender) Report() Report {
	r := report(dests(s.cfg.Dests), s.Final(), s.Peers(), s.Deliveries(), s.Unanswered())
	r.Session, r.Started = s.Session(), s.Started()
	return r
}

// report classifies each destination (named: dests) from what the
// sender knows at the end: final is the counter of the packet that carried the final state,
// peers what the acks told, deliveries the ledger (in dests' order),
// unanswered the handshakes not completed.
func report(dests []Dest, final uint64, peers []PeerStatus, deliveries []Delivery, unanswered []LinkState) Report {
	r := Report{Heard: len(peers)}
	byAddr := map[string]PeerStatus{}
	for _, p := range peers {
		byAddr[p.Addr] = p
	}
	for _, d := range deliveries {
		r.Events = max(r.Events, d.Delivered+d.Undelivered)
	}
	waiting := map[string]string{}
	for _, u := range unanswered {
		waiting[u.Addr] = u.Handshake
	}
	for i, d := range dests {
		addr := d.Addr
		p, heard := byAddr[addr]
		dr := DestReport{Addr: addr, Peer: p, Heard: heard}
		if i < len(deliveries) {
			dr.Delivery = deliveries[i]
		}
		why, unanswered := waiting[addr]
		switch {
		case isBroadcast(d.UDP):
			dr.Outcome = OneWay
		case heard && p.Speaks != nil && p.Newest < final:
			dr.Outcome = OtherVersion
		case !heard && unanswered && why == whyNoAnswer:
			dr.Outcome = NoAnswer
		case !heard && unanswered:
			dr.Outcome, dr.Handshake = NoHandshake, why
		case !heard:
			dr.Outcome = Unheard
		case dr.Delivery.Undelivered > 0:
			dr.Outcome = Missed
		case p.Newest < final:
			dr.Outcome = NotFinal
		}
		r.Dests = append(r.Dests, dr)
	}
	accounted := map[string]bool{}
	for _, d := range deliveries {
		if d.Accounted {
			accounted[d.Addr] = true
		}
	}
	for _, p := range peers {
		if !accounted[p.Addr] {
			r.Others = append(r.Others, p)
		}
	}
	return r
}

// isBroadcast reports whether a is a broadcast or multicast address.
func isBroadcast(a net.Addr) bool {
	ua, ok := a.(*net.UDPAddr)
	return ok && transport.IsBroadcast(ua.IP)
}

// DescribeOffset says how far a receiver's clock (PeerStatus.ClockOffset)
// is from ours: "1.5s ahead of ours", "within 1ms of ours".
func DescribeOffset(d time.Duration) string {
	switch {
	case d > 0:
		return fmt.Sprintf("%v ahead of ours", d)
	case d < 0:
		return fmt.Sprintf("%v behind ours", -d)
	}
	return "within 1ms of ours"
}
