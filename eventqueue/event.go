package eventqueue

import (
	"fmt"

	"github.com/keyrelay/keyrelay/keys"
)

// Kind says whether an Event is a key press, a key release, or neither. The
// neither kind fills a fresh queue (the seed: "events that are neither key up
// events nor key down events").
type Kind uint8

const (
	None Kind = 0
	Down Kind = 1
	Up   Kind = 2
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Down:
		return "down"
	case Up:
		return "up"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one entry of the queue. Stamp orders events within one sender
// session; see the package doc for how stamps are made.
type Event struct {
	Key   keys.Key
	Kind  Kind
	Stamp uint64
}
