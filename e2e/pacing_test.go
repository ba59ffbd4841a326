//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSilentReceiverIsPacedOverLoopback (PROTOCOL.md §9, pacing to a silent
// receiver): the receiver of a script typing 20 taps a second is killed 2 s
// in and its port taken by a socket that reads and never answers; the
// datagrams send sends it in the next 10 s are counted: the first second's
// events and bursts backing off (about 120), then a few a second, and one
// per 20 ms in the last second of --outage, where unpaced sending would be
// thousands (PROTOCOL.md §9).
func TestSilentReceiverIsPacedOverLoopback(t *testing.T) {
	// Serial: it counts datagrams per second, and takes over the killed
	// receiver's port.
	var sb strings.Builder
	sb.WriteString("pace 25ms\n")
	for i := range 280 {
		fmt.Fprintf(&sb, "tap Key%c\n", 'A'+i%26)
	}
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0")
	send := start(t, "send", "--script", script(t, sb.String()), "--to", recv.addr)
	time.Sleep(2 * time.Second)
	recv.cmd.Process.Signal(syscall.SIGKILL)
	<-recv.done
	pc, err := net.ListenPacket("udp", recv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var n, late int
	t0 := time.Now()
	pc.SetReadDeadline(t0.Add(10 * time.Second))
	buf := make([]byte, 2048)
	for {
		if _, _, err := pc.ReadFrom(buf); err != nil {
			break
		}
		n++
		if time.Since(t0) > 2*time.Second {
			late++
		}
	}
	t.Logf("%d datagrams in the 10 s after the receiver was killed, %d of them in the last 8 s", n, late)
	// 4 a second and the initiations (one a second), and 50 in the last
	// second of --outage (5 s), while the backlog waits for it.
	if n > 350 || late > 8*6+50 {
		t.Errorf("%d datagrams to a killed receiver in 10 s (%d in the last 8 s), want at most 350 (98)", n, late)
	}
	send.cmd.Process.Signal(syscall.SIGINT)
	send.wait(15 * time.Second)
}
