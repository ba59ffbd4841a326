package udpsock

import (
	"bytes"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// These tests hold Listen's sockets to what net.ListenPacket's do. On Linux
// they run against Go's own (the reference); e2e's TestWine runs them,
// built for Windows, under Wine against udpsock_windows.go's.

func open(t *testing.T, network, addr string) net.PacketConn {
	t.Helper()
	pc, err := Listen(network, addr)
	if err != nil {
		t.Fatalf("Listen(%q, %q): %v", network, addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// read reads one datagram, failing the test after 10 s.
func read(t *testing.T, pc net.PacketConn, buf []byte) (int, net.Addr) {
	t.Helper()
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer pc.SetReadDeadline(time.Time{})
	n, from, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return n, from
}

// TestRoundTrip: a datagram arrives whole, with its sender's address as the
// sender's socket names itself; on a dual-stack socket (a wildcard "udp"
// address) from IPv4 too. The address-port read gives the same source.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name                string
		network, listen, to string
		from                string
	}{
		{"IPv4", "udp", "127.0.0.1:0", "127.0.0.1", "127.0.0.1:0"},
		{"IPv4 on udp4", "udp4", ":0", "127.0.0.1", "127.0.0.1:0"},
		{"IPv4 on a dual-stack socket", "udp", ":0", "127.0.0.1", "127.0.0.1:0"},
		{"IPv6", "udp6", "[::1]:0", "::1", "[::1]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := Listen(tc.network, tc.listen)
			if err != nil && tc.name == "IPv6" {
				t.Skipf("no IPv6 loopback here: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			sc := open(t, "udp", tc.from)
			to := &net.UDPAddr{IP: net.ParseIP(tc.to), Port: rc.LocalAddr().(*net.UDPAddr).Port}
			msg := []byte("keyrelay " + tc.name)
			if n, err := sc.WriteTo(msg, to); err != nil || n != len(msg) {
				t.Fatalf("WriteTo %v = %d, %v", to, n, err)
			}
			buf := make([]byte, 1500)
			n, from := read(t, rc, buf)
			if !bytes.Equal(buf[:n], msg) {
				t.Errorf("read %q, want %q", buf[:n], msg)
			}
			if from.String() != sc.LocalAddr().String() {
				t.Errorf("source %v, want the sender's %v", from, sc.LocalAddr())
			}
			// The same through the address-port read (dgram's).
			if _, err := sc.WriteTo(msg, to); err != nil {
				t.Fatal(err)
			}
			apr, ok := rc.(AddrPortReader)
			if !ok {
				t.Fatalf("%T reads no netip.AddrPort", rc)
			}
			rc.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, ap, err := apr.ReadFromUDPAddrPort(buf)
			if err != nil || !bytes.Equal(buf[:n], msg) {
				t.Fatalf("ReadFromUDPAddrPort: %q, %v", buf[:n], err)
			}
			if got := net.UDPAddrFromAddrPort(ap).String(); got != sc.LocalAddr().String() {
				t.Errorf("address-port source %v, want %v", got, sc.LocalAddr())
			}
			// And back, to the address the datagram came from.
			if _, err := rc.WriteTo([]byte("ack"), from); err != nil {
				t.Fatalf("answer to %v: %v", from, err)
			}
			if n, _ := read(t, sc, buf); string(buf[:n]) != "ack" {
				t.Errorf("answer %q, want ack", buf[:n])
			}
		})
	}
}

// TestLocalAddr: the socket names the port it was given (0: the one the
// system chose) and the family it listens on.
func TestLocalAddr(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	la, ok := pc.LocalAddr().(*net.UDPAddr)
	if !ok || la.Port == 0 || !la.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("LocalAddr %v, want 127.0.0.1 and a port", pc.LocalAddr())
	}
	again := open(t, "udp", "127.0.0.1:0")
	if again.LocalAddr().String() == pc.LocalAddr().String() {
		t.Errorf("two sockets on %v", pc.LocalAddr())
	}
}

// TestReadDeadline: a read waits until the deadline and then fails with a
// timeout (net.Error's Timeout, os.ErrDeadlineExceeded), as sender.Probe
// counts on; with the deadline cleared the socket reads again.
func TestReadDeadline(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	const wait = 100 * time.Millisecond
	start := time.Now()
	pc.SetReadDeadline(start.Add(wait))
	_, _, err := pc.ReadFrom(make([]byte, 64))
	took := time.Since(start)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if took < wait {
		t.Errorf("the read gave up after %v, before its %v deadline", took, wait)
	}
	pc.SetReadDeadline(time.Time{})
	sc := open(t, "udp", "127.0.0.1:0")
	if _, err := sc.WriteTo([]byte("after"), pc.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := read(t, pc, buf); string(buf[:n]) != "after" {
		t.Errorf("read %q after the deadline was cleared, want after", buf[:n])
	}
}

// TestPastDeadlineWakesRead: a deadline set in the past by another
// goroutine ends a waiting read with a timeout (pair's way to stop its
// reader); then the socket reads again.
func TestPastDeadlineWakesRead(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	done := make(chan error)
	go func() {
		_, _, err := pc.ReadFrom(make([]byte, 64))
		done <- err
	}()
	pc.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a deadline in the past did not end the read within 10s")
	}
	pc.SetReadDeadline(time.Time{})
	sc := open(t, "udp", "127.0.0.1:0")
	if _, err := sc.WriteTo([]byte("again"), pc.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := read(t, pc, buf); string(buf[:n]) != "again" {
		t.Errorf("read %q, want again", buf[:n])
	}
}

// TestCloseEndsRead: Close ends a waiting read with net.ErrClosed, as the
// receive loops count on to stop; a second Close fails, and so does a
// write.
func TestCloseEndsRead(t *testing.T) {
	pc, err := Listen("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, _, err := pc.ReadFrom(make([]byte, 64))
		done <- err
	}()
	if err := pc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read within 10s")
	}
	if err := pc.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
	if _, err := pc.WriteTo([]byte("x"), pc.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
}

// TestUnreachableDoesNotEndReads: a datagram sent to a port nobody listens
// on (an ICMP port unreachable comes back, which Windows reports as
// WSAECONNRESET on the next read unless told not to) does not disturb the
// socket: the next datagram from elsewhere is read. A sender whose
// receiver is down keeps reading on the socket its acks come to.
func TestUnreachableDoesNotEndReads(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	gone, err := Listen("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	to := gone.LocalAddr()
	gone.Close()
	for range 3 {
		if _, err := pc.WriteTo([]byte("anyone?"), to); err != nil {
			t.Fatalf("write to a closed port: %v", err)
		}
	}
	sc := open(t, "udp", "127.0.0.1:0")
	if _, err := sc.WriteTo([]byte("here"), pc.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := read(t, pc, buf); string(buf[:n]) != "here" {
		t.Errorf("read %q, want here", buf[:n])
	}
}

// TestLongDatagramIsCut: a datagram longer than the read's buffer fills it
// and the rest is dropped, with no error, as on Linux (dgram.NewReader's
// contract); the next datagram is whole.
func TestLongDatagramIsCut(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	sc := open(t, "udp", "127.0.0.1:0")
	long := bytes.Repeat([]byte("0123456789"), 10)
	for _, m := range [][]byte{long, []byte("short")} {
		if _, err := sc.WriteTo(m, pc.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 16)
	if n, _ := read(t, pc, buf); !bytes.Equal(buf[:n], long[:16]) {
		t.Errorf("a 100-byte datagram read into 16 bytes: %q, want %q", buf[:n], long[:16])
	}
	if n, _ := read(t, pc, buf); string(buf[:n]) != "short" {
		t.Errorf("next datagram %q, want short", buf[:n])
	}
}

// TestPortInUse: listening on a port another socket holds fails with an
// error matching syscall.EADDRINUSE, which recv and pair turn into "the
// port is in use".
func TestPortInUse(t *testing.T) {
	pc := open(t, "udp", "127.0.0.1:0")
	other, err := Listen("udp", pc.LocalAddr().String())
	if err == nil {
		other.Close()
		t.Fatalf("a second socket listens on %v", pc.LocalAddr())
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second listen on %v: %v, want one matching syscall.EADDRINUSE", pc.LocalAddr(), err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "listen" {
		t.Errorf("second listen: %#v, want a *net.OpError of listen", err)
	}
}

// TestBadAddress: what net.ListenPacket refuses, Listen refuses.
func TestBadAddress(t *testing.T) {
	for _, tc := range [][2]string{{"udp", "no-port"}, {"udp", "127.0.0.1:99999"}, {"tcp", ":0"}, {"udp4", "[::1]:0"}} {
		if pc, err := Listen(tc[0], tc[1]); err == nil {
			pc.Close()
			t.Errorf("Listen(%q, %q) succeeded", tc[0], tc[1])
		}
	}
}
