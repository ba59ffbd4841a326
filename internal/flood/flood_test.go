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
	open := func(s uint64) (cipher.AEAD, error) { return wire.SessionAEAD(key, s, wire.SenderToReceiver) }
	kinds := map[string]int{}
	for _, b := range Datagrams(6000, 1) {
		var q wire.Queue
		if _, err := wire.OpenQueue(b, open, nil, &q); err == nil {
			t.Fatalf("a flood datagram opened: % x", b)
		} else {
			kinds[err.Error()[:8]]++
		}
	}
	if len(kinds) < 4 {
		t.Errorf("the flood exercises only %d kinds of rejection: %v", len(kinds), kinds)
	}
}
