package sender

import (
	"net"
	"net/netip"
	"testing"
)

// TestReportOutcomes checks how the end of a session classifies each
// destination (send's exit status rests on it): a broadcast is one-way;
// a receiver that said it speaks another version (PROTOCOL.md §10) and
// missed the final state is named for that; one never heard is named by
// its handshake's state (PROTOCOL.md §8.3); one heard that missed key
// events or the final state is named for what it missed; only one that
// acknowledged the final state and every event is confirmed.
func TestReportOutcomes(t *testing.T) {
	const final = 40
	udp := func(s string) *net.UDPAddr { return net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	heard := func(addr string, newest uint64, speaks ...uint8) PeerStatus {
		return PeerStatus{Addr: addr, Newest: newest, Speaks: speaks}
	}
	for _, c := range []struct {
		name       string
		addr       string
		peer       *PeerStatus
		unanswered string // its handshake waits on this ("": completed)
		delivery   Delivery
		want       Outcome
		handshake  string
	}{
		{name: "broadcast", addr: "255.255.255.255:7575", want: OneWay},
		{name: "multicast", addr: "239.1.2.3:7575", want: OneWay},
		{name: "all acknowledged", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final}, delivery: Delivery{Accounted: true, Delivered: 5}, want: Confirmed},
		{name: "typed into no application is still confirmed", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final}, delivery: Delivery{Accounted: true, Delivered: 5, Nowhere: 2}, want: Confirmed},
		{name: "another version, final state missed", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final - 1, Speaks: []uint8{9}}, want: OtherVersion},
		{name: "another version said, final state acknowledged", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final, Speaks: []uint8{9}}, want: Confirmed},
		{name: "handshake never answered", addr: "10.0.0.1:7575", unanswered: whyNoAnswer, want: NoAnswer},
		{name: "handshake answered, not completed", addr: "10.0.0.1:7575", unanswered: "cookie (receiver under load)", want: NoHandshake, handshake: "cookie (receiver under load)"},
		{name: "never heard, no handshake (--insecure)", addr: "10.0.0.1:7575", delivery: Delivery{Accounted: true, Undelivered: 3}, want: Unheard},
		{name: "missed key events", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final}, delivery: Delivery{Accounted: true, Delivered: 2, Undelivered: 3}, want: Missed},
		{name: "missed the final state", addr: "10.0.0.1:7575", peer: &PeerStatus{Newest: final - 1}, delivery: Delivery{Accounted: true, Delivered: 5}, want: NotFinal},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := dests([]Dest{{UDP: udp(c.addr)}})
			var peers []PeerStatus
			if c.peer != nil {
				p := *c.peer
				p.Addr = c.addr
				peers = append(peers, p)
			}
			var waiting []LinkState
			if c.unanswered != "" {
				waiting = append(waiting, LinkState{Addr: c.addr, Handshake: c.unanswered})
			}
			c.delivery.Addr = c.addr
			r := report(ds, final, peers, []Delivery{c.delivery}, waiting)
			if len(r.Dests) != 1 {
				t.Fatalf("%d destinations reported, want 1", len(r.Dests))
			}
			d := r.Dests[0]
			if d.Outcome != c.want || d.Handshake != c.handshake || d.Heard != (c.peer != nil) || d.Delivery != c.delivery {
				t.Errorf("reported %+v, want outcome %v, handshake %q", d, c.want, c.handshake)
			}
		})
	}

	// The session's figures: the events are the most any destination was
	// owed; a receiver heard that is no accounted destination (one that
	// answered a broadcast) is listed apart, in the order heard.
	ds := dests([]Dest{{UDP: udp("10.0.0.1:7575")}, {UDP: udp("255.255.255.255:7575")}})
	peers := []PeerStatus{heard("10.0.0.1:7575", final), heard("10.0.0.7:7575", final), heard("10.0.0.8:7575", final)}
	deliveries := []Delivery{{Addr: "10.0.0.1:7575", Accounted: true, Delivered: 4, Undelivered: 3}, {Addr: "255.255.255.255:7575"}}
	r := report(ds, final, peers, deliveries, nil)
	if r.Events != 7 || r.Heard != 3 || len(r.Others) != 2 || r.Others[0].Addr != "10.0.0.7:7575" || r.Others[1].Addr != "10.0.0.8:7575" {
		t.Errorf("report %+v: want 7 events, 3 heard, others 10.0.0.7 and 10.0.0.8", r)
	}
	if r.Dests[0].Outcome != Missed || r.Dests[1].Outcome != OneWay {
		t.Errorf("outcomes %v, %v; want Missed, OneWay", r.Dests[0].Outcome, r.Dests[1].Outcome)
	}
}
