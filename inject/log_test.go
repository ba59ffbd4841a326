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
	l.Inject(Event{Key: keys.Key(keys.KeyA), Down: true, Session: 0xab})
	l.Inject(Event{Key: keys.Key(keys.KeyA), Down: false, Cause: eventqueue.Timeout, Session: 0xab})
	l.Inject(Event{Key: 0x32, Down: true, Cause: eventqueue.Resync, Session: 1})
	l.Inject(Event{Key: keys.Char('é'), Down: true, Session: 1})
	l.Inject(Event{Key: keys.Char('"'), Down: false, Cause: eventqueue.Missing, Session: 1})
	l.SetLocks(keys.LocksKnown|keys.LockCaps|keys.LockEpoch, 1)
	want := `{"key":"KeyA","action":"down","session":"00000000000000ab"}
{"key":"KeyA","action":"up","reason":"timeout","session":"00000000000000ab"}
{"key":"0x32","action":"down","reason":"resync","session":"0000000000000001"}
{"char":"é","action":"down","session":"0000000000000001"}
{"char":"\"","action":"up","reason":"missing","session":"0000000000000001"}
{"locks":"caps","action":"set","session":"0000000000000001"}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
