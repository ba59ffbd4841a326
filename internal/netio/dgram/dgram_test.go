package dgram

import (
	"bytes"
	"fmt"
	"net"
	"testing"
)

func listen(t *testing.T) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP here: %v", err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// TestReadDoesNotAllocate: once a source has been seen, reading a
// datagram from it allocates nothing.
func TestReadDoesNotAllocate(t *testing.T) {
	rc, sc := listen(t), listen(t)
	r := NewReader(rc, 4, 64)
	msg := []byte("datagram")
	to := rc.LocalAddr().(*net.UDPAddr).AddrPort()
	src := sc.LocalAddr().String()
	read := func() {
		if _, err := sc.(*net.UDPConn).WriteToUDPAddrPort(msg, to); err != nil {
			t.Fatal(err)
		}
		b, from, err := r.Read()
		if err != nil || !bytes.Equal(b, msg) || from.S != src {
			t.Fatalf("read %q from %q (%v), want %q from %s", b, from.S, err, msg, src)
		}
	}
	read()
	// The write allocates nothing either (WriteToUDPAddrPort).
	if n := testing.AllocsPerRun(200, read); n != 0 {
		t.Errorf("%v allocations per datagram read, want 0", n)
	}
}

// TestBuffersLastInFlight: a datagram's bytes stay as read while inFlight
// more are read, whatever their length, and each source is given as the
// address it is (a net.Addr to write back to, and its string).
func TestBuffersLastInFlight(t *testing.T) {
	for _, inFlight := range []int{1, 3, 65} {
		t.Run(fmt.Sprint(inFlight), func(t *testing.T) {
			rc, a, b := listen(t), listen(t), listen(t)
			r := NewReader(rc, inFlight, 16)
			type got struct {
				b    []byte
				from Addr
			}
			var kept []got
			for i := range inFlight + 1 {
				src := []net.PacketConn{a, b}[i%2]
				if _, err := src.WriteTo(bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%16), rc.LocalAddr()); err != nil {
					t.Fatal(err)
				}
				d, from, err := r.Read()
				if err != nil {
					t.Fatal(err)
				}
				if from.S != src.LocalAddr().String() || from.Addr.String() != from.S {
					t.Fatalf("datagram %d from %s (%s), want %s", i, from.S, from.Addr, src.LocalAddr())
				}
				kept = append(kept, got{d, from})
			}
			for i, k := range kept {
				if want := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%16); !bytes.Equal(k.b, want) {
					t.Errorf("datagram %d is %q after %d more were read, want %q", i, k.b, len(kept)-1-i, want)
				}
			}
		})
	}
}
