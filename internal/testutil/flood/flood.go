// Package flood makes hostile datagrams for keyrelay's flood tests: random
// bytes, and packets that pass more and more of the receiver's cheap checks
// (magic, version, flags, layout) but cannot authenticate. None of them can
// inject a key into a receiver with a key the flooder does not have.
package flood

import (
	"math/rand/v2"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/wire"
)

// Datagrams returns n datagrams, deterministic for a seed, cycling through
// the kinds below.
func Datagrams(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	wrongKey, self := make([]byte, wire.KeyLen), make([]byte, identity.KeyLen)
	for i := range wrongKey {
		wrongKey[i], self[i] = byte(rng.Uint32()), byte(rng.Uint32())
	}
	flooder, err := identity.FromPrivate(self)
	if err != nil {
		panic(err) // a programming error: the key is 32 bytes
	}
	out := make([][]byte, 0, n)
	for i := range n {
		q := wire.Queue{
			Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: rng.Uint64() | 1, Counter: rng.Uint64N(1000) + 1},
			Clock:  rng.Uint64N(10_000),
			Events: []eventqueue.Event{{Key: keys.Key(keys.KeyA) + keys.Key(rng.IntN(26)), Kind: eventqueue.Down, Stamp: 5}, {}, {}},
		}
		var b []byte
		switch i % 6 {
		case 0: // random bytes of any size, oversized ones included
			b = make([]byte, rng.IntN(1400))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		case 1: // a plaintext packet: well formed, but a keyed receiver wants sealed ones
			b, _ = q.Append(nil)
		case 2: // one-way sealed with a key the receiver does not have
			a, _ := wire.OneWayAEAD(wrongKey, q.Header.Session)
			b, _ = q.AppendSealed(nil, a, flooder)
		case 3: // a valid handshaken header with a random index and "ciphertext"
			h := q.Header
			h.Flags = wire.FlagSealed
			b = h.Append(nil)
			for range 20 + rng.IntN(200) {
				b = append(b, byte(rng.Uint32()))
			}
		case 4: // a truncated header
			b, _ = q.Append(nil)
			b = b[:rng.IntN(wire.HeaderLen)]
		case 5: // a wrong version
			b, _ = q.Append(nil)
			b[2] = byte(rng.IntN(250) + 3)
		}
		out = append(out, b)
	}
	return out
}
