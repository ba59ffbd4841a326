package sender_test

import (
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// TestOneWayIsSignedByThisMachine (PROTOCOL.md §5, §8.6): a one-way
// destination needs this machine's identity, whose signature every one-way
// packet carries (a receiver takes them only from machines it pairs), and
// a queue of at most wire.MaxSafeOneWayEvents, since the signer and the
// signature take 96 bytes of the datagram; the packets it sends open
// with the key file and name this machine as their signer, with a
// signature that holds.
func TestOneWayIsSignedByThisMachine(t *testing.T) {
	psk := make([]byte, wire.KeyLen)
	id := newID(t)
	var sent [][]byte
	cfg := sender.CoreConfig{PSK: psk, Dests: []sender.Dest{{Addr: "10.0.0.255:7575", OneWay: true}},
		Output: func(b []byte, _ int) { sent = append(sent, append([]byte(nil), b...)) }}
	for _, tc := range []struct {
		name  string
		self  *identity.Identity
		queue int
		err   string
	}{
		{"no identity", nil, 16, "needs this machine's identity"},
		{"a queue too long", id, wire.MaxSafeOneWayEvents + 1, "takes at most 74"},
		{"the longest queue", id, wire.MaxSafeOneWayEvents, ""},
	} {
		c := cfg
		c.Identity, c.QueueLen = tc.self, tc.queue
		_, err := sender.NewCore(c, t0)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	cfg.Identity = id
	c, err := sender.NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t0)
	if len(sent) == 0 {
		t.Fatal("nothing sent")
	}
	h, err := wire.ParseHeader(sent[0])
	if err != nil || h.Flags != wire.OneWaySealed {
		t.Fatalf("header %+v, %v: want flags SEALED|ONEWAY|SIGNED", h, err)
	}
	a, err := wire.OneWayAEAD(psk, h.Session)
	if err != nil {
		t.Fatal(err)
	}
	var q wire.Queue
	var sig wire.Signed
	if _, err := wire.OpenOneWay(sent[0], h, a, nil, &q, &sig); err != nil {
		t.Fatal(err)
	}
	pub, err := identity.EdwardsPublic(sig.Signer)
	if sig.Signer != id.Public() || err != nil || !identity.Verify(pub, sig.Message, sig.Signature[:]) {
		t.Errorf("signed by %x (this machine %x), signature good %v", sig.Signer, id.Public(), err == nil && identity.Verify(pub, sig.Message, sig.Signature[:]))
	}
}
