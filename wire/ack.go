package wire

import (
	"encoding/binary"
	"fmt"
)

// AckBits is the number of packets before Ack.Newest an ack reports on.
const AckBits = 64

// Ack is a feedback packet from a receiver to a sender session
// (PROTOCOL.md §9). Its header's session id is the sender's; its counter is
// the receiver's own, counting the acks it sealed under the keypair (their
// nonce), or sent in plaintext (flags ONEWAY, --insecure). A handshaken
// link's ack (flags SEALED) carries the sender's index after the header and
// is sealed by package handshake; one-way sessions are never acked.
type Ack struct {
	Header Header
	// Newest is the newest packet counter received from the session.
	Newest uint64
	// Bits says which of the AckBits packets before Newest were received:
	// bit i set means packet Newest-1-i was (seed 001's ack_bits).
	Bits uint64
	// Stamp is the newest event stamp the receiver has applied.
	Stamp uint64
	// Delay is how long, in microseconds, the receiver held packet Newest
	// before sending this ack; the sender subtracts it from the RTT sample.
	Delay uint64
	// Wall is the receiver's wall clock (Unix milliseconds) when the ack
	// left: with the RTT it gives the offset between the two clocks, which
	// the receiver's replay defence (--max-skew, §8.4) depends on.
	Wall uint64
}

// Received reports whether the ack says packet counter arrived.
func (a *Ack) Received(counter uint64) bool {
	switch {
	case counter == a.Newest:
		return true
	case counter > a.Newest || a.Newest-counter > AckBits:
		return false
	}
	return a.Bits&(1<<(a.Newest-counter-1)) != 0
}

func (a *Ack) appendBody(b []byte) []byte {
	b = binary.AppendUvarint(b, a.Newest)
	b = binary.BigEndian.AppendUint64(b, a.Bits)
	b = binary.AppendUvarint(b, a.Stamp)
	b = binary.AppendUvarint(b, a.Delay)
	return binary.AppendUvarint(b, a.Wall)
}

func (a *Ack) validate() error {
	if a.Header.Type != TypeAck {
		return fmt.Errorf("%w: ack packet with type %d", ErrType, a.Header.Type)
	}
	if err := a.Header.check(); err != nil {
		return err
	}
	if a.Newest == 0 {
		return fmt.Errorf("%w: ack of packet 0", ErrQueue)
	}
	return nil
}

// Append appends the plaintext ack (--insecure, flags ONEWAY) to b.
func (a *Ack) Append(b []byte) ([]byte, error) {
	if err := a.validate(); err != nil {
		return b, err
	}
	if a.Header.Flags != FlagOneWay {
		return b, fmt.Errorf("%w: %#02x on a plaintext ack (want ONEWAY)", ErrFlags, a.Header.Flags)
	}
	return a.appendBody(a.Header.Append(b)), nil
}

// AppendBody appends only the plaintext body of a (PROTOCOL.md §9), for a
// handshaken link's keypair to seal.
func (a *Ack) AppendBody(b []byte) ([]byte, error) {
	if err := a.validate(); err != nil {
		return b, err
	}
	return a.appendBody(b), nil
}

// ParseAckBody decodes the plaintext body of an ack under header h,
// already parsed and, if sealed, opened.
func ParseAckBody(h Header, p []byte, dst *Ack) error {
	dst.Header = h
	var n int
	var err error
	if dst.Newest, n, err = uvarint(p); err != nil {
		return fmt.Errorf("newest: %w", err)
	}
	p = p[n:]
	if dst.Newest == 0 {
		return fmt.Errorf("%w: ack of packet 0", ErrQueue)
	}
	if len(p) < 8 {
		return fmt.Errorf("ack bits: %w", ErrTruncated)
	}
	dst.Bits = binary.BigEndian.Uint64(p)
	p = p[8:]
	if dst.Stamp, n, err = uvarint(p); err != nil {
		return fmt.Errorf("stamp: %w", err)
	}
	p = p[n:]
	if dst.Delay, n, err = uvarint(p); err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	p = p[n:]
	if dst.Wall, n, err = uvarint(p); err != nil {
		return fmt.Errorf("wall clock: %w", err)
	}
	if len(p) > n {
		return fmt.Errorf("%w: %d bytes", ErrTrailing, len(p)-n)
	}
	return nil
}

// ParseAck decodes a plaintext ack (flags ONEWAY).
func ParseAck(b []byte, dst *Ack) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Type != TypeAck {
		return fmt.Errorf("%w: %d where an ack was expected", ErrType, h.Type)
	}
	if h.Flags&FlagSealed != 0 {
		return ErrSealed
	}
	return ParseAckBody(h, b[HeaderLen:], dst)
}
