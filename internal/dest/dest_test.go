package dest

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/peers"
)

// TestResolveAll: send's --to addresses resolve through transport.Resolve,
// and the errors name the flag.
func TestResolveAll(t *testing.T) {
	as, err := ResolveAll([]string{"127.0.0.1", "[::1]:9000", "localhost:7"})
	if err != nil {
		t.Fatal(err)
	}
	if as[0].String() != "127.0.0.1:7575" || as[1].String() != "[::1]:9000" || as[2].(*net.UDPAddr).Port != 7 {
		t.Errorf("resolved %v", as)
	}
	if _, err := ResolveAll([]string{"127.0.0.1:0"}); err == nil || err.Error() != `--to "127.0.0.1:0": port 0 is not a receiver's port` {
		t.Errorf("port 0: %v", err)
	}
}

// FuzzNamedDests: --to's text (comma lists, NAME=HOST[:PORT]) never
// panics, and what it accepts has a name and an address for each
// destination, names unique (case ignored).
func FuzzNamedDests(f *testing.F) {
	for _, s := range []string{"a=127.0.0.1:1,b=[::1]:2", "mac.lan", "=x", "a=", "local=h", "a=h,a=i", "a b=h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := Named(config.SplitList([]string{s}), nil)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range ds {
			if d.Name == "" || d.Addr == "" || seen[strings.ToLower(d.Name)] {
				t.Fatalf("%q gave %+v", s, ds)
			}
			seen[strings.ToLower(d.Name)] = true
		}
	})
}

// FuzzDestTable: a [[send.to]] table of any TOML never panics, and one
// it accepts has a usable name and an address.
func FuzzDestTable(f *testing.F) {
	f.Add("name = \"mac\"\naddr = \"mac.lan\"\nhotkey = \"ControlRight+Digit1\"\nmap = { MetaLeft = \"ControlLeft\" }\nlocal-keys = [\"AudioVolumeUp\"]\n")
	f.Add("name = \"x\"\naddr = 1\n")
	f.Add("name = \"x\"\naddr = \"h\"\nmap = { MetaLeft = 3 }\n")
	f.Fuzz(func(t *testing.T, text string) {
		var m map[string]any
		if _, err := toml.Decode(text, &m); err != nil {
			return
		}
		d, _, err := parseTable(m)
		if err != nil {
			return
		}
		if d.Name == "" || d.Addr == "" || checkName(d.Name) != nil {
			t.Fatalf("%q accepted as %+v", text, d)
		}
	})
}

// TestNamesIgnoreCase: destination names, like peers' names, ignore case:
// two destinations whose names differ only in case are refused (they
// would be one name to keyrelay switch), and so is a destination named
// Local (keyrelay switch local's word for this machine).
func TestNamesIgnoreCase(t *testing.T) {
	if _, err := Named([]string{"pc=127.0.0.1:1", "PC=127.0.0.1:2"}, nil); err == nil || !strings.Contains(err.Error(), `named "pc" and "PC", one name as case is ignored`) {
		t.Errorf("pc and PC: %v, want them refused as one name", err)
	}
	if _, err := Named([]string{"Local=127.0.0.1:1"}, nil); err == nil || !strings.Contains(err.Error(), `name "local" is taken`) {
		t.Errorf("Local: %v, want it refused", err)
	}
}

// TestDefaultDestHotkeys: a switching send with --grab gives each
// destination without a hotkey ControlRight+Digit1, +Digit2, … by its place
// (README, "Several machines"), never one that is --hotkey or another
// destination's own, and none past the ninth.
func TestDefaultDestHotkeys(t *testing.T) {
	hk := func(s string) capture.Hotkey {
		h, err := capture.ParseHotkey(s)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		hotkey string
		own    []string // each destination's own hotkey, "" for none
		want   []string
	}{
		{"none given", capture.DefaultHotkey, []string{"", "", ""}, []string{"ControlRight+Digit1", "ControlRight+Digit2", "ControlRight+Digit3"}},
		{"one given keeps it", capture.DefaultHotkey, []string{"", "ScrollLock", ""}, []string{"ControlRight+Digit1", "ScrollLock", "ControlRight+Digit3"}},
		{"a default another has", capture.DefaultHotkey, []string{"ControlRight+Digit2", ""}, []string{"ControlRight+Digit2", ""}},
		{"a default that is --hotkey", "ControlRight+Digit1", []string{"", ""}, []string{"", "ControlRight+Digit2"}},
		{"ten destinations", capture.DefaultHotkey, make([]string, 10), []string{"ControlRight+Digit1", "ControlRight+Digit2", "ControlRight+Digit3", "ControlRight+Digit4", "ControlRight+Digit5", "ControlRight+Digit6", "ControlRight+Digit7", "ControlRight+Digit8", "ControlRight+Digit9", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dests []Spec
			for i, own := range tc.own {
				d := Spec{Name: fmt.Sprint("d", i)}
				if own != "" {
					d.Hotkey = hk(own)
				}
				dests = append(dests, d)
			}
			DefaultHotkeys(dests, hk(tc.hotkey))
			for i, d := range dests {
				if got := d.Hotkey.String(); got != tc.want[i] {
					t.Errorf("destination %d: hotkey %q, want %q", i, got, tc.want[i])
				}
			}
		})
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
	ds, err := Resolve([]string{"vm", "vm:7601", "VM:7602", "pc.invalid:7603"}, list, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		addr string
		key  [identity.KeyLen]byte
		name string
	}{{"127.0.0.1:7575", vm.Public(), "vm"}, {"127.0.0.1:7601", vm.Public(), "vm"}, {"127.0.0.1:7602", vm.Public(), "vm"}, {"[::1]:7603", pc.Public(), "pc.invalid"}}
	for i, d := range ds {
		if d.Addr.String() != want[i].addr || d.Key != want[i].key || d.Name != want[i].name {
			t.Errorf("%s: %v, peer %q; want %s, peer %q", d.To, d.Addr, d.Name, want[i].addr, want[i].name)
		}
	}
	_, err = Resolve([]string{"pcc.invalid"}, list, nil, false, false)
	if err == nil || !strings.Contains(err.Error(), `unable to resolve --to "pcc.invalid"`) || !strings.Contains(err.Error(), `did you mean the paired machine "pc.invalid" ('keyrelay peers' lists them)?`) {
		t.Errorf("pcc.invalid: %v, want the paired machine pc.invalid suggested", err)
	}
	_, err = Resolve([]string{"far-away.invalid:7601"}, list, nil, false, false)
	if err == nil || !strings.Contains(err.Error(), `("far-away.invalid" is no host name this machine resolves, nor a paired machine's name: vm, pc.invalid)`) {
		t.Errorf("far-away.invalid: %v, want the paired machines listed", err)
	}
	// A port of 0 is refused for a peer as for a host.
	if _, err := Resolve([]string{"vm:0"}, list, nil, false, false); err == nil {
		t.Errorf("vm:0 accepted")
	}
}
