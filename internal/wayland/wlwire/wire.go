// Package wlwire is the few parts of the Wayland wire protocol that recv's
// virtual keyboard needs (inject's Wayland injector): messages encoded and
// parsed here, pure, and a client connection (conn_linux.go) that sends them
// with file descriptors and reads the compositor's events. It is not a
// general Wayland client: it knows no interface beyond the request and
// event numbers its caller passes.
//
// A message, in the host's byte order (the Wayland wire format):
//
//	0      4          6       8
//	+------+----------+-------+-----------------------------+
//	|object| opcode   | size  | arguments (size-8 bytes)     |
//	+------+----------+-------+-----------------------------+
//
// opcode is the low and size the high 16 bits of the second word; size
// counts the header and is a multiple of 4. A string is its length with
// the terminating NUL, then the bytes and NUL padded to 4; an array is its
// length, then the bytes padded to 4. File descriptors travel beside the
// bytes (SCM_RIGHTS), in the order the arguments name them.
package wlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header offsets and sizes.
const (
	headerLen = 8
	// MaxMessage is the largest message libwayland sends or takes (its
	// WL_MAX_MESSAGE_SIZE, 4096 bytes).
	MaxMessage = 4096
)

var order = binary.NativeEndian

// ErrMalformed is wrapped by Parse's and Args' errors for bytes that are
// not a Wayland message or argument.
var ErrMalformed = errors.New("malformed wayland message")

// Message is one request or event: its object, its opcode and its encoded
// arguments.
type Message struct {
	Object uint32
	Opcode uint16
	Args   []byte
}

// Append appends m to b as it goes on the wire.
func (m Message) Append(b []byte) ([]byte, error) {
	size := headerLen + len(m.Args)
	if size > MaxMessage || len(m.Args)%4 != 0 {
		return b, fmt.Errorf("%w: %d argument bytes for object %d opcode %d (at most %d, a multiple of 4)", ErrMalformed, len(m.Args), m.Object, m.Opcode, MaxMessage-headerLen)
	}
	b = order.AppendUint32(b, m.Object)
	b = order.AppendUint32(b, uint32(size)<<16|uint32(m.Opcode))
	return append(b, m.Args...), nil
}

// Parse reads the first message in b and returns it and the bytes it took.
// n is 0, with no error, when b holds only part of a message: read more.
// The message's Args alias b.
func Parse(b []byte) (m Message, n int, err error) {
	if len(b) < headerLen {
		return Message{}, 0, nil
	}
	word := order.Uint32(b[4:])
	size := int(word >> 16)
	if size < headerLen || size%4 != 0 {
		return Message{}, 0, fmt.Errorf("%w: size %d (at least %d, a multiple of 4)", ErrMalformed, size, headerLen)
	}
	if len(b) < size {
		return Message{}, 0, nil
	}
	return Message{Object: order.Uint32(b), Opcode: uint16(word), Args: b[headerLen:size]}, size, nil
}

// Args builds a message's arguments. The zero value is empty and ready.
type Args []byte

// Uint appends a uint (also an object or new_id argument).
func (a Args) Uint(v uint32) Args { return order.AppendUint32(a, v) }

// String appends a string.
func (a Args) String(s string) Args {
	a = order.AppendUint32(a, uint32(len(s)+1))
	a = append(a, s...)
	return append(a, make([]byte, pad(len(s)+1)-len(s))...)
}

func pad(n int) int { return (n + 3) &^ 3 }

// Reader reads a message's arguments in order. After the first error every
// read returns the zero value and Err says what was wrong.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads args.
func NewReader(args []byte) *Reader { return &Reader{b: args} }

// Err is the first error met, nil if none.
func (r *Reader) Err() error { return r.err }

// Uint reads a uint, an object id or a new_id.
func (r *Reader) Uint() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.err = fmt.Errorf("%w: an argument cut short", ErrMalformed)
		return 0
	}
	v := order.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

// Array reads an array; the bytes alias the message.
func (r *Reader) Array() []byte {
	n := r.Uint()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) || pad(int(n)) > len(r.b) {
		r.err = fmt.Errorf("%w: an array of %d bytes in %d", ErrMalformed, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[pad(int(n)):]
	return v
}

// String reads a string (the empty string for a null one).
func (r *Reader) String() string {
	v := r.Array()
	if r.err != nil || len(v) == 0 {
		return ""
	}
	if v[len(v)-1] != 0 {
		r.err = fmt.Errorf("%w: a string without its terminating NUL", ErrMalformed)
		return ""
	}
	return string(v[:len(v)-1])
}
