package transport

import (
	"errors"
	"net"
	"testing"
	"time"
)

// The raw sendto path (sendto_linux.go) is the one WriteTo takes on Linux,
// delivers what it is given byte for byte on each family (TestConn), and
// allocates nothing per packet: the sender's send path makes no
// allocation (BENCHMARKS.md, The sender's targets).
func TestRawWriteToDoesNotAllocate(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	dest := pc.LocalAddr().(*net.UDPAddr)
	c, err := Open([]net.Addr{dest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.raw4 == nil {
		t.Fatal("no raw writer for the IPv4 socket")
	}
	b := []byte("keyrelay raw sendto")
	if _, ok, err := c.raw4.writeTo(b, dest, false); !ok || err != nil {
		t.Fatalf("raw write: tried %v, %v", ok, err)
	}
	got := make([]byte, 64)
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc.ReadFrom(got)
	if err != nil || string(got[:n]) != string(b) {
		t.Fatalf("received %q, %v; want %q", got[:n], err, b)
	}
	// 201 small datagrams fit the receiving socket's buffer: nothing
	// needs to read them.
	if n := testing.AllocsPerRun(200, func() { c.WriteTo(b, dest) }); n != 0 {
		t.Errorf("WriteTo: %v allocations per packet, want 0", n)
	}
}

// A write error from the raw path reads as the net package's would.
func TestRawWriteToError(t *testing.T) {
	c, err := Open([]net.Addr{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = c.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("write on a closed socket: %v, want a *net.OpError for write", err)
	}
}

// BenchmarkWriteTo compares the raw sendto with the net package's WriteTo
// on the same socket (CPU per packet; the allocations shown are the
// reading goroutine's, the sender's own are TestRawWriteToDoesNotAllocate).
func BenchmarkWriteTo(b *testing.B) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	dest := pc.LocalAddr().(*net.UDPAddr)
	c, err := Open([]net.Addr{dest})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pkt := make([]byte, 116)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.WriteTo(pkt, dest)
		}
	})
	b.Run("net", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.v4.WriteTo(pkt, dest)
		}
	})
}

// A receiver's Writer answers each source from its own socket with the
// raw sendto: an IPv4 socket, and a dual-stack one (IPv4 sources
// IPv4-mapped) to an IPv4 and an IPv6 source; what arrives is what was
// written, and answering allocates nothing.
func TestWriterAnswersEachSource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listen   string // the receiver's socket
		from     string // the source's
		v6       bool   // the receiver's socket is IPv6
		sourceAt string // the address the source sends to, with the receiver's port
	}{
		{"IPv4 socket", "127.0.0.1:0", "127.0.0.1:0", false, "127.0.0.1"},
		{"dual-stack socket, IPv4 source", "[::]:0", "127.0.0.1:0", true, "127.0.0.1"},
		{"dual-stack socket, IPv6 source", "[::]:0", "[::1]:0", true, "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := net.ListenPacket("udp", tc.listen)
			if err != nil {
				t.Skipf("no %s here: %v", tc.listen, err)
			}
			defer rc.Close()
			src, err := net.ListenPacket("udp", tc.from)
			if err != nil {
				t.Skipf("no %s here: %v", tc.from, err)
			}
			defer src.Close()
			w := NewWriter(rc)
			if w.raw == nil || w.v6 != tc.v6 {
				t.Fatalf("raw writer %v, IPv6 socket %v; want one, %v", w.raw != nil, w.v6, tc.v6)
			}
			to := &net.UDPAddr{IP: net.ParseIP(tc.sourceAt), Port: rc.LocalAddr().(*net.UDPAddr).Port}
			if _, err := src.WriteTo([]byte("hello"), to); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			rc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, from, err := rc.ReadFrom(buf)
			if err != nil {
				t.Fatal(err)
			}
			b := []byte("ack")
			if n, err := w.WriteTo(b, from); n != len(b) || err != nil {
				t.Fatalf("WriteTo %v: %d, %v", from, n, err)
			}
			src.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _, err := src.ReadFrom(buf)
			if err != nil || string(buf[:n]) != "ack" {
				t.Fatalf("the source received %q, %v; want %q", buf[:n], err, b)
			}
			if n := testing.AllocsPerRun(100, func() { w.WriteTo(b, from) }); n != 0 {
				t.Errorf("WriteTo: %v allocations per packet, want 0", n)
			}
		})
	}
}

// TestRawWritesReachEachDestination: writes to two destinations,
// interleaved and repeated, each reach their own (the last destination is
// remembered to skip the address map: it must never stand for another).
func TestRawWritesReachEachDestination(t *testing.T) {
	var dests [2]net.PacketConn
	var addrs [2]*net.UDPAddr
	for i := range dests {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		dests[i], addrs[i] = pc, pc.LocalAddr().(*net.UDPAddr)
	}
	c, err := Open([]net.Addr{addrs[0], addrs[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.raw4 == nil {
		t.Fatal("no raw writer for the IPv4 socket")
	}
	buf := make([]byte, 8)
	for i, to := range []int{0, 0, 1, 0, 1, 1, 0} {
		if _, err := c.WriteTo([]byte{byte(i)}, addrs[to]); err != nil {
			t.Fatal(err)
		}
		dests[to].SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := dests[to].ReadFrom(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("datagram %d to destination %d: received %v, %v", i, to, buf[:n], err)
		}
	}
}
