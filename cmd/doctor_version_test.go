package cmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/wire"
)

// fakeOtherVersion is a UDP socket that answers every datagram as a recv
// of protocol version v would (PROTOCOL.md §10): with a version notice
// echoing the datagram's session id and counter.
func fakeOtherVersion(t *testing.T, v uint8) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
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
			nb, _ := (&wire.Notice{Version: v, Session: binary.BigEndian.Uint64(buf[6:]), Counter: binary.BigEndian.Uint64(buf[14:]), Speaks: []uint8{v}}).Append(nil)
			pc.WriteTo(nb, from)
		}
	}()
	return pc.LocalAddr().String()
}

// TestDoctorNamesVersionMismatch (PROTOCOL.md §10): a --peer that answers
// the probe with a version notice fails with both versions named and the
// fix (the same release on both machines), not the "no answer" causes.
func TestDoctorNamesVersionMismatch(t *testing.T) {
	isolate(t)
	_, keyFile := newKeyFile(t, "")
	peer := fakeOtherVersion(t, wire.Version+1)
	var out bytes.Buffer
	err := runDoctor(context.Background(), IO{Out: &out, Err: &out}, &DoctorOptions{
		Role: roleSend, Inject: "log", Input: "script", Listen: "127.0.0.1:0", KeyFile: keyFile, Peer: peer, probeTimeout: 2 * time.Second})
	text := out.String()
	want := fmt.Sprintf("FAIL  round trip to %s: the recv there speaks keyrelay protocol version %d; this keyrelay speaks %d", peer, wire.Version+1, wire.Version)
	if err == nil || !strings.Contains(text, want) || !strings.Contains(text, "install the same keyrelay release on both machines") || strings.Contains(text, "no answer within") {
		t.Errorf("err %v; want %q and its fix\n%s", err, want, text)
	}
}
