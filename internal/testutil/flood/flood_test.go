package flood

import (
	"crypto/cipher"
	"testing"

	"github.com/keyrelay/keyrelay/wire"
)

// TestNothingOpens: no flood datagram opens with a real key; every one fails
// a check (the flood tests rely on this to say "nothing forged").
func TestNothingOpens(t *testing.T) {
	key := make([]byte, wire.KeyLen)
	kinds := map[string]int{}
	for _, b := range Datagrams(6000, 1) {
		var q wire.Queue
		var a cipher.AEAD
		if h, err := wire.ParseHeader(b); err == nil {
			a, _ = wire.OneWayAEAD(key, h.Session)
		} else {
			a, _ = wire.OneWayAEAD(key, 1)
		}
		var sig wire.Signed
		if _, err := wire.OpenQueue(b, a, nil, &q, &sig); err == nil {
			t.Fatalf("a flood datagram opened: % x", b)
		} else {
			kinds[err.Error()[:8]]++
		}
	}
	if len(kinds) < 4 {
		t.Errorf("the flood exercises only %d kinds of rejection: %v", len(kinds), kinds)
	}
}
