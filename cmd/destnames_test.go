package cmd

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
)

// TestDestinationNamesIgnoreCase: destination names, like peers' names,
// ignore case. keyrelay switch B finds the send with destination b and
// switches it, LOCAL is local; two destinations whose names differ only
// in case are refused (they would be one name to switch), and so is a
// destination named Local.
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

	if _, err := namedDests([]string{"pc=127.0.0.1:1", "PC=127.0.0.1:2"}, nil); err == nil || !strings.Contains(err.Error(), `named "pc" and "PC", one name as case is ignored`) {
		t.Errorf("pc and PC: %v, want them refused as one name", err)
	}
	if _, err := namedDests([]string{"Local=127.0.0.1:1"}, nil); err == nil || !strings.Contains(err.Error(), `name "local" is taken`) {
		t.Errorf("Local: %v, want it refused", err)
	}
}

// TestResolveNamePort checks how send and doctor resolve a destination
// (PROTOCOL.md §8.3): a paired machine's name reaches the address its
// peers file gives; NAME:PORT reaches that machine's host on that port (a
// second recv there), under its key, as do NAME=NAME:PORT entries; a
// name close to a peer's that resolves nowhere suggests the peer; one
// far from every peer lists them.
func TestResolveNamePort(t *testing.T) {
	vm, _ := identity.Generate()
	pc, _ := identity.Generate()
	list := &peers.List{}
	if err := list.Add(peers.Peer{Name: "vm", Key: vm.Public(), Addr: "127.0.0.1:7575"}); err != nil {
		t.Fatal(err)
	}
	if err := list.Add(peers.Peer{Name: "pc.invalid", Key: pc.Public(), Addr: "[::1]:7575"}); err != nil {
		t.Fatal(err)
	}
	ds, err := resolveDests([]string{"vm", "vm:7601", "VM:7602", "pc.invalid:7603"}, list, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		addr string
		key  [identity.KeyLen]byte
		name string
	}{{"127.0.0.1:7575", vm.Public(), "vm"}, {"127.0.0.1:7601", vm.Public(), "vm"}, {"127.0.0.1:7602", vm.Public(), "vm"}, {"[::1]:7603", pc.Public(), "pc.invalid"}}
	for i, d := range ds {
		if d.addr.String() != want[i].addr || d.key != want[i].key || d.name != want[i].name {
			t.Errorf("%s: %v, peer %q; want %s, peer %q", d.to, d.addr, d.name, want[i].addr, want[i].name)
		}
	}
	_, err = resolveDests([]string{"pcc.invalid"}, list, nil, false, false)
	if err == nil || !strings.Contains(err.Error(), `unable to resolve --to "pcc.invalid"`) || !strings.Contains(err.Error(), `did you mean the paired machine "pc.invalid" ('keyrelay peers' lists them)?`) {
		t.Errorf("pcc.invalid: %v, want the paired machine pc.invalid suggested", err)
	}
	_, err = resolveDests([]string{"far-away.invalid:7601"}, list, nil, false, false)
	if err == nil || !strings.Contains(err.Error(), `("far-away.invalid" is no host name this machine resolves, nor a paired machine's name: vm, pc.invalid)`) {
		t.Errorf("far-away.invalid: %v, want the paired machines listed", err)
	}
	// A port of 0 is refused for a peer as for a host.
	if _, err := resolveDests([]string{"vm:0"}, list, nil, false, false); err == nil {
		t.Errorf("vm:0 accepted")
	}
}
