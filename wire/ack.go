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
	// Missing says which of the AckBits packets before Newest were not
	// received: bit i set means packet Newest-1-i was not (Glenn Fiedler's
	// ack_bits inverted, so that an ack of a link losing nothing is one
	// byte, not eight). Bits naming counters below 1 are 0: those packets
	// do not exist (MissingMask).
	Missing uint64
	// Stamp is the newest event stamp the receiver has applied.
	Stamp uint64
	// Delay is how long, in microseconds, the receiver held packet Newest
	// before sending this ack; the sender subtracts it from the RTT sample.
	Delay uint64
	// Wall is the receiver's wall clock (Unix milliseconds) when the ack
	// left, or 0: not given. With the RTT it gives the offset between the
	// two clocks, which the receiver's one-way replay defence (--max-skew,
	// §8.6) depends on; the receiver gives it about once a second, which is
	// all a slowly drifting offset needs (PROTOCOL.md §9).
	Wall uint64
	// Nowhere is how many of the session's key events this receiver
	// instance typed into no application (no window had the keyboard
	// focus), counted from its start; 0: none, or the receiver cannot
	// tell. Why says why the latest of them reached none (a Why value;
	// 0 exactly when Nowhere is). Both are left out of an ack when
	// Nowhere is 0 (PROTOCOL.md §9).
	Nowhere uint64
	Why     Why
}

// Why is the reason an ack gives for key events typed into no
// application (Ack.Why, PROTOCOL.md §9). A decoder takes any non-zero
// value: a newer receiver may give a reason this build does not know.
type Why uint8

// The reasons defined so far.
const (
	// WhyNoFocus: no window had the keyboard focus (X11: the focus was
	// None, the root window, or the pointer's window with the pointer over
	// none), so the server gave the keys to no application.
	WhyNoFocus Why = 1
	// WhyNoUSBHost: the USB host took no report of the keyboard gadget
	// (hidg: the write failed with ESHUTDOWN, the host has not configured
	// it, or timed out, the host does not read it).
	WhyNoUSBHost Why = 2
	// WhyNoForeground: no window was in the foreground of the Windows
	// desktop (GetForegroundWindow gave none: the desktop locked, the
	// secure desktop up, or no window active).
	WhyNoForeground Why = 3
)

// MissingMask is the bits of Ack.Missing that name a packet for an ack of
// newest: bit i for counter newest-1-i, from 1 up (PROTOCOL.md §9). The
// others must be 0.
func MissingMask(newest uint64) uint64 {
	if newest > AckBits {
		return ^uint64(0)
	}
	if newest == 0 {
		return 0
	}
	return 1<<(newest-1) - 1
}

// Received reports whether the ack says packet counter arrived.
func (a *Ack) Received(counter uint64) bool {
	switch {
	case counter == a.Newest:
		return counter != 0
	case counter == 0 || counter > a.Newest || a.Newest-counter > AckBits:
		return false
	}
	return a.Missing&(1<<(a.Newest-counter-1)) == 0
}

func (a *Ack) appendBody(b []byte) []byte {
	b = binary.AppendUvarint(b, a.Newest)
	b = binary.AppendUvarint(b, a.Missing)
	b = binary.AppendUvarint(b, a.Stamp)
	b = binary.AppendUvarint(b, a.Delay)
	b = binary.AppendUvarint(b, a.Wall)
	if a.Nowhere == 0 {
		return b
	}
	b = binary.AppendUvarint(b, a.Nowhere)
	return append(b, byte(a.Why))
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
	if (a.Nowhere == 0) != (a.Why == 0) {
		return fmt.Errorf("%w: %d key events typed into nothing, reason %d (both 0, or neither)", ErrQueue, a.Nowhere, a.Why)
	}
	return checkMissing(a.Newest, a.Missing)
}

// checkMissing refuses missing bits that name packets below counter 1:
// they do not exist, and a set bit there would let two acks that say the
// same thing differ (PROTOCOL.md §4: the format is canonical).
func checkMissing(newest, missing uint64) error {
	if extra := missing &^ MissingMask(newest); extra != 0 {
		return fmt.Errorf("%w: ack of packet %d reports packets below 1 missing (bits %#x)", ErrQueue, newest, extra)
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
	if dst.Missing, n, err = uvarint(p); err != nil {
		return fmt.Errorf("missing bits: %w", err)
	}
	p = p[n:]
	if err := checkMissing(dst.Newest, dst.Missing); err != nil {
		return err
	}
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
	p = p[n:]
	dst.Nowhere, dst.Why = 0, 0
	if len(p) == 0 {
		return nil
	}
	// The keys typed into nothing: present only when not 0, so that each
	// ack has one encoding.
	if dst.Nowhere, n, err = uvarint(p); err != nil {
		return fmt.Errorf("keys typed into nothing: %w", err)
	}
	p = p[n:]
	if dst.Nowhere == 0 {
		return fmt.Errorf("%w: a count of keys typed into nothing of 0 (left out when 0)", ErrQueue)
	}
	if len(p) == 0 {
		return fmt.Errorf("why keys were typed into nothing: %w", ErrTruncated)
	}
	if dst.Why = Why(p[0]); dst.Why == 0 {
		return fmt.Errorf("%w: keys typed into nothing for reason 0", ErrQueue)
	}
	if len(p) > 1 {
		return fmt.Errorf("%w: %d bytes", ErrTrailing, len(p)-1)
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
