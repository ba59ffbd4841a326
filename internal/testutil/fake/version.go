package fake

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/keyrelay/keyrelay/wire"
)

// OtherVersion starts a UDP socket on loopback that answers every
// datagram as a recv of protocol version v would (PROTOCOL.md §10): with a
// version notice echoing the datagram's session id and counter. It
// returns the socket's address; the socket closes when the test ends.
func OtherVersion(tb testing.TB, v uint8) string {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, wire.MaxPacketSize)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n < wire.HeaderLen {
				continue
			}
			nb, err := (&wire.Notice{Version: v, Session: binary.BigEndian.Uint64(buf[6:]),
				Counter: binary.BigEndian.Uint64(buf[14:]), Speaks: []uint8{v}}).Append(nil)
			if err == nil {
				pc.WriteTo(nb, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}
