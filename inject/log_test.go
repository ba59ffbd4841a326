package inject

import (
	"bytes"
	"testing"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
)

func TestLogLines(t *testing.T) {
	var b bytes.Buffer
	l := &Log{W: &b}
	l.Inject(Key{Code: keys.KeyA, Down: true, Session: 0xab})
	l.Inject(Key{Code: keys.KeyA, Down: false, Cause: eventqueue.Timeout, Session: 0xab})
	l.Inject(Key{Code: 0x32, Down: true, Cause: eventqueue.Resync, Session: 1})
	want := `{"key":"KeyA","action":"down","session":"00000000000000ab"}
{"key":"KeyA","action":"up","reason":"timeout","session":"00000000000000ab"}
{"key":"0x32","action":"down","reason":"resync","session":"0000000000000001"}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
