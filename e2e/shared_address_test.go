//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// forwarder is a one-socket UDP relay, as a NAT that maps several
// machines to one address and port, or a tunnel's end: every datagram a
// client sends goes to the receiver from one socket, and every datagram
// the receiver sends back goes to every client heard (it cannot tell
// which one it is for; a sender drops what is not its own).
type forwarder struct {
	down, up net.PacketConn
	to       net.Addr
	mu       sync.Mutex
	clients  map[string]net.Addr
}

// newForwarder relays to the receiver at to from a loopback address of
// its own (f.addr()), until the test ends.
func newForwarder(t *testing.T, to string) *forwarder {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", to)
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{to: ua, clients: map[string]net.Addr{}}
	if f.down, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if f.up, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		b := make([]byte, 2048)
		for {
			n, from, err := f.down.ReadFrom(b)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			f.mu.Lock()
			f.clients[from.String()] = from
			f.mu.Unlock()
			f.up.WriteTo(b[:n], f.to)
		}
	}()
	go func() {
		defer wg.Done()
		b := make([]byte, 2048)
		for {
			n, _, err := f.up.ReadFrom(b)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			f.mu.Lock()
			for _, c := range f.clients {
				f.down.WriteTo(b[:n], c)
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		f.down.Close()
		f.up.Close()
		wg.Wait()
	})
	return f
}

func (f *forwarder) addr() string { return f.down.LocalAddr().String() }

// TestTwoPairedSendersBehindOneAddress (PROTOCOL.md §7.2, §8.7, §9.1): two
// paired machines whose packets reach recv from one address and port (a
// one-socket forwarder standing for a NAT or a tunnel) each keep their own
// session: a session belongs to its authenticated machine, and one
// machine's handshake does not end the other's. Both type every key of
// their script (40 taps, 50 ms apart, the second starting once the first
// has typed some), and each send's exit status is true: 0 only when all
// its keys were typed, and never "delivered" for keys recv dropped.
func TestTwoPairedSendersBehindOneAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recvPeers := filepath.Join(dir, "recv-peers.toml")
	recvID := filepath.Join(dir, "recv.identity")
	code, out, stderr := run(t, "", "id", "--identity", recvID)
	if code != 0 {
		t.Fatalf("id: exit %d\n%s", code, stderr)
	}
	recvKey := strings.Fields(out)[0]
	recv := start(t, "recv", "--inject", "log", "--listen", "127.0.0.1:0", "--identity", recvID, "--peers", recvPeers)
	fwd := newForwarder(t, recv.addr)

	type machine struct {
		name, key string
		id, peers string
		send      *proc
		typed     int
	}
	ms := []*machine{{name: "alpha", key: "KeyA"}, {name: "bravo", key: "KeyB"}}
	for _, m := range ms {
		m.id, m.peers = filepath.Join(dir, m.name+".identity"), filepath.Join(dir, m.name+"-peers.toml")
		code, out, stderr := run(t, "", "id", "--identity", m.id)
		if code != 0 {
			t.Fatalf("id: exit %d\n%s", code, stderr)
		}
		if code, _, stderr := run(t, "", "peers", "add", m.name, strings.Fields(out)[0], "--peers", recvPeers, "--identity", recvID); code != 0 {
			t.Fatalf("peers add on recv: exit %d\n%s", code, stderr)
		}
		if code, _, stderr := run(t, "", "peers", "add", "rx", recvKey, "--addr", fwd.addr(), "--peers", m.peers, "--identity", m.id); code != 0 {
			t.Fatalf("peers add on %s: exit %d\n%s", m.name, code, stderr)
		}
	}
	taps := func(key string) string {
		var b strings.Builder
		b.WriteString("pace 50ms\n")
		for range 40 {
			fmt.Fprintf(&b, "tap %s\n", key)
		}
		return script(t, b.String())
	}
	sendOf := func(m *machine) *proc {
		return start(t, "send", "--to", "rx", "--identity", m.id, "--peers", m.peers, "--script", taps(m.key))
	}
	downs := func(l line) {
		if l.Action != "down" {
			return
		}
		for _, m := range ms {
			if l.Key == m.key {
				m.typed++
			}
		}
	}
	// The second machine starts once the first has typed 10 taps: its
	// handshake and first packets then come while the first types.
	ms[0].send = sendOf(ms[0])
	for ms[0].typed < 10 {
		l, ok := recv.next(20 * time.Second)
		if !ok {
			t.Fatalf("%s typed %d taps, want 10 before %s starts\n%s", ms[0].name, ms[0].typed, ms[1].name, recv.stderr)
		}
		downs(l)
	}
	ms[1].send = sendOf(ms[1])
	codes := make([]int, len(ms))
	for i, m := range ms {
		codes[i] = m.send.wait(90 * time.Second)
	}
	for _, l := range recv.stop() {
		downs(l)
	}
	for i, m := range ms {
		said := m.send.stderr.String()
		t.Logf("%s: %d of 40 taps typed, send exit %d", m.name, m.typed, codes[i])
		if m.typed != 40 {
			t.Errorf("%s typed %d of 40 taps through the shared address, want all 40", m.name, m.typed)
		}
		// A send that exits 0 says every key event was delivered: that
		// must be true, whatever else failed.
		if codes[i] == 0 && m.typed != 40 {
			t.Errorf("%s's send exited 0 (delivered) with %d of 40 taps typed:\n%s", m.name, m.typed, said)
		}
		if codes[i] != 0 && m.typed == 40 {
			t.Errorf("%s's send exited %d with every tap typed:\n%s", m.name, codes[i], said)
		}
	}
	if t.Failed() {
		t.Logf("recv:\n%s", recv.stderr)
	}
}
