package inject

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/keyrelay/keyrelay/keys"
)

// Log writes one JSON object per injected key to W, one Write per line so a
// reader sees each event as soon as it happens. A physical key has "key"
// (its W3C name), a character "char" (the character itself):
//
//	{"key":"KeyA","action":"down","session":"0123456789abcdef"}
//	{"key":"KeyA","action":"up","reason":"timeout","session":"0123456789abcdef"}
//	{"char":"é","action":"down","session":"0123456789abcdef"}
//	{"locks":"caps","action":"set","session":"0123456789abcdef"}
//
// reason is present only for synthetic events (see eventqueue.Cause). Log is
// safe for concurrent use.
type Log struct {
	W  io.Writer
	mu sync.Mutex
}

// LogLine is the JSON form of one Log line.
type LogLine struct {
	Key     string `json:"key,omitempty"`
	Char    string `json:"char,omitempty"`
	Locks   string `json:"locks,omitempty"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Session string `json:"session"`
}

// Inject writes k as one line.
func (l *Log) Inject(k Event) error {
	line := LogLine{Action: "up", Reason: k.Cause.String(), Session: fmt.Sprintf("%016x", k.Session)}
	if r, ok := k.Key.Char(); ok {
		line.Char = string(r)
	} else {
		line.Key = k.Key.String()
	}
	if k.Down {
		line.Action = "down"
	}
	return l.write(line)
}

// write writes one line with one Write.
func (l *Log) write(line LogLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.W.Write(b); err != nil {
		return fmt.Errorf("unable to write key log: %w", err)
	}
	return nil
}

// SetLocks writes the lock state a sender asks for as one line, action
// "set": {"locks":"caps","action":"set","session":"…"} (caps, num, caps,num
// or none).
func (l *Log) SetLocks(locks keys.Locks, session uint64) error {
	return l.write(LogLine{Locks: locks.String(), Action: "set", Session: fmt.Sprintf("%016x", session)})
}

// Close does nothing: the writer belongs to the caller.
func (l *Log) Close() error { return nil }
