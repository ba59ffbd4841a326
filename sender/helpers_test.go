package sender_test

import (
	"testing"

	"github.com/keyrelay/keyrelay/identity"
)

// key is the key file's key (the handshake's PSK) of the sender's tests.
var key = []byte("feedback-test-key-0123456789abcd")

// newID is a new machine identity.
func newID(t testing.TB) *identity.Identity {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
