package dgram

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// TestRawReadsGiveTheSourceAsNetDoes: on Linux a UDP socket is read with a
// raw recvfrom (recvfrom_linux.go), and each source comes out as the
// net.UDPAddr the socket's own reads give: IPv4, IPv6, and IPv4 on a
// dual-stack socket (an IPv4-mapped address, shown as IPv4).
func TestRawReadsGiveTheSourceAsNetDoes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		listen, from string // the receiving and the sending socket's addresses
		to           string // the address the sender writes to, with the listener's port
	}{
		{"IPv4", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1"},
		{"IPv6", "[::1]:0", "[::1]:0", "::1"},
		{"IPv4 on a dual-stack socket", "[::]:0", "127.0.0.1:0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := net.ListenPacket("udp", tc.listen)
			if err != nil {
				t.Skipf("no %s here: %v", tc.listen, err)
			}
			defer rc.Close()
			sc, err := net.ListenPacket("udp", tc.from)
			if err != nil {
				t.Skipf("no %s here: %v", tc.from, err)
			}
			defer sc.Close()
			r := NewReader(rc, 1, 64)
			if r.raw == nil {
				t.Fatal("a *net.UDPConn is not read with recvfrom")
			}
			to, err := net.ResolveUDPAddr("udp", net.JoinHostPort(tc.to, strconv.Itoa(rc.LocalAddr().(*net.UDPAddr).Port)))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second from the cache
				if _, err := sc.WriteTo([]byte("hi"), to); err != nil {
					t.Fatal(err)
				}
				b, from, err := r.Read()
				if err != nil || string(b) != "hi" {
					t.Fatalf("read %q, %v", b, err)
				}
				want := sc.LocalAddr().(*net.UDPAddr)
				got, ok := from.Addr.(*net.UDPAddr)
				if !ok || from.S != want.String() || !got.IP.Equal(want.IP) || got.Port != want.Port {
					t.Errorf("source %v (%q), want %v", from.Addr, from.S, want)
				}
			}
		})
	}
}

// TestRawReadEndsWhenClosed: closing the socket ends a read waiting on it
// with an error, as the receive loops count on to stop.
func TestRawReadEndsWhenClosed(t *testing.T) {
	rc := listen(t)
	r := NewReader(rc, 1, 64)
	done := make(chan error)
	go func() {
		_, _, err := r.Read()
		done <- err
	}()
	rc.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v, want net.ErrClosed", err)
	}
}

// TestRawReadsNameEachSource: datagrams from two sources, interleaved and
// repeated, each come out with their own source (the last source is
// remembered to skip the cache: it must never answer for another).
func TestRawReadsNameEachSource(t *testing.T) {
	rc := listen(t)
	r := NewReader(rc, 1, 64)
	var senders [2]net.PacketConn
	for i := range senders {
		senders[i] = listen(t)
	}
	for i, who := range []int{0, 0, 1, 0, 1, 1, 0} {
		sc := senders[who]
		if _, err := sc.WriteTo([]byte{byte(i)}, rc.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		b, from, err := r.Read()
		if err != nil || len(b) != 1 || b[0] != byte(i) {
			t.Fatalf("datagram %d: read %v, %v", i, b, err)
		}
		if want := sc.LocalAddr().String(); from.S != want || from.Addr.String() != want {
			t.Errorf("datagram %d from sender %d: source %v (%q), want %s", i, who, from.Addr, from.S, want)
		}
	}
}
