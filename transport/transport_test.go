package transport

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestWithDefaultPort(t *testing.T) {
	for in, want := range map[string]string{
		"host":          "host:7575",
		"host:9":        "host:9",
		"10.0.0.1":      "10.0.0.1:7575",
		"::1":           "[::1]:7575",
		"[::1]":         "[::1]:7575",
		"[fe80::1]:123": "[fe80::1]:123",
	} {
		if got := WithDefaultPort(in, "7575"); got != want {
			t.Errorf("WithDefaultPort(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":  "127.0.0.1:7575",
		"[::1]:9000": "[::1]:9000",
		"::1":        "[::1]:7575",
	} {
		if ua, err := Resolve(in, "7575"); err != nil || ua.String() != want {
			t.Errorf("Resolve(%q) = %v, %v; want %v", in, ua, err, want)
		}
	}
	if ua, err := Resolve("localhost:7", "7575"); err != nil || ua.Port != 7 {
		t.Errorf("Resolve(localhost:7) = %v, %v", ua, err)
	}
	if _, err := Resolve("127.0.0.1:0", "7575"); !errors.Is(err, ErrPortZero) {
		t.Errorf("port 0: %v, want ErrPortZero", err)
	}
	if _, err := Resolve("no-such-host.invalid", "7575"); err == nil {
		t.Error("an unresolvable host resolved")
	}
}

// TestIsBroadcast: what reaches many receivers, for which send neither
// waits for acks nor names a silent receiver.
func TestIsBroadcast(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"255.255.255.255", true}, {"224.0.0.1", true}, {"239.1.2.3", true}, {"ff02::1", true},
		{"127.0.0.1", false}, {"::1", false}, {"10.0.0.7", false},
	} {
		if got := IsBroadcast(net.ParseIP(tc.ip)); got != tc.want {
			t.Errorf("IsBroadcast(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// TestDirectedBroadcast: the all-ones host of a local IPv4 network reaches
// every host on it, except on /31 and /32 networks, which have no broadcast
// address (RFC 3021).
func TestDirectedBroadcast(t *testing.T) {
	nets := func(cidrs ...string) []net.Addr {
		var out []net.Addr
		for _, c := range cidrs {
			ip, n, err := net.ParseCIDR(c)
			if err != nil {
				t.Fatal(err)
			}
			n.IP = ip // an interface's address, not its network
			out = append(out, n)
		}
		return out
	}
	local := nets("192.168.1.20/24", "10.0.0.1/31", "10.9.9.9/32", "172.16.5.1/12", "fd00::1/64")
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"192.168.1.255", true}, {"172.31.255.255", true},
		{"192.168.1.20", false}, {"192.168.2.255", false},
		{"10.0.0.1", false}, {"10.9.9.9", false}, // /31, /32: hosts
		{"fd00::ffff:ffff:ffff:ffff", false}, // IPv6 has no broadcast
	} {
		if got := isDirectedBroadcast(net.ParseIP(tc.ip), local); got != tc.want {
			t.Errorf("isDirectedBroadcast(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// TestConn: a destination of each family goes out from that family's
// socket, and the answer comes back on one of Sockets (the ack path).
func TestConn(t *testing.T) {
	type peer struct {
		pc   net.PacketConn
		addr *net.UDPAddr
	}
	var peers []peer
	for _, listen := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		pc, err := net.ListenPacket(listen.network, listen.addr)
		if err != nil {
			if listen.network == "udp6" {
				t.Logf("no IPv6 loopback here (%v): IPv4 only", err)
				continue
			}
			t.Fatal(err)
		}
		defer pc.Close()
		peers = append(peers, peer{pc, pc.LocalAddr().(*net.UDPAddr)})
	}
	var dests []net.Addr
	for _, p := range peers {
		dests = append(dests, p.addr)
	}
	c, err := Open(dests)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Sockets()) != len(peers) {
		t.Fatalf("%d sockets for %d families", len(c.Sockets()), len(peers))
	}
	buf := make([]byte, 16)
	for i, p := range peers {
		if _, err := c.WriteTo([]byte{byte(i)}, p.addr); err != nil {
			t.Fatal(err)
		}
		p.pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := p.pc.ReadFrom(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("%v received %v from %v, %v", p.addr, buf[:n], from, err)
		}
		if _, err := p.pc.WriteTo([]byte("ack"), from); err != nil {
			t.Fatal(err)
		}
		s := c.Sockets()[i]
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _, err := s.ReadFrom(buf); err != nil || string(buf[:n]) != "ack" {
			t.Fatalf("the answer from %v: %q, %v", p.addr, buf[:n], err)
		}
	}
}
