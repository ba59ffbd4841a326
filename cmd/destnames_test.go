package cmd

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/keyrelay/keyrelay/sender"
)

// TestDestinationNamesIgnoreCase: destination names, like peers' names,
// ignore case. keyrelay switch B finds the send with destination b and
// switches it, LOCAL is local (internal/dest's TestNamesIgnoreCase: two
// names that differ only in case are refused).
func TestDestinationNamesIgnoreCase(t *testing.T) {
	at := func(pid int, can bool, names ...string) runningSendAt {
		ans := controlAnswer{PID: pid, CanSwitch: can}
		for _, n := range names {
			ans.Dests = append(ans.Dests, destStatus{Name: n})
		}
		return runningSendAt{path: fmt.Sprint(pid), ans: ans}
	}
	two := []runningSendAt{at(10, false, "a", "b"), at(20, true, "c")}
	for to, pid := range map[string]int{"B": 10, "C": 20, "LOCAL": 20, "Local": 20} {
		if s, err := pickSend(two, to); err != nil || s.ans.PID != pid {
			t.Errorf("pickSend(%q) = pid %d, %v; want pid %d", to, s.ans.PID, err, pid)
		}
	}

	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := sender.New(sender.Config{Conn: conn, Dests: []sender.Dest{{UDP: conn.LocalAddr().(*net.UDPAddr)}}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &plainControl{s: s, src: &modeFake{grab: true, on: true}, input: "x11", names: []string{"pc"}, addrs: []net.Addr{conn.LocalAddr()}}
	for _, step := range []struct{ to, target string }{{"LOCAL", "local"}, {"PC", "pc"}, {"Local", "local"}, {"Pc", "pc"}} {
		if err := h.Switch(context.Background(), step.to); err != nil {
			t.Errorf("switch %s: %v", step.to, err)
		}
		if got := h.Status().Target; got != step.target {
			t.Errorf("target %q after switch %s, want %q", got, step.to, step.target)
		}
	}

}
