package sender

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/wire"
)

// ProbeResult is what one probe (Probe) measured.
type ProbeResult struct {
	// RTT is the round trip of the first packet acked, the receiver's
	// hold time taken out (PROTOCOL.md §9).
	RTT time.Duration
	// ClockOffset is the receiver's wall clock minus ours (ClockOffset).
	ClockOffset time.Duration
}

var (
	// ErrNoAnswer: nothing answered the probe's session at all.
	ErrNoAnswer = errors.New("no answer")
	// ErrNoAcks: the receiver answered the handshake (PROTOCOL.md §8.3),
	// but acked no packet of the session.
	ErrNoAcks = errors.New("the handshake was answered but nothing was acked")
)

// VersionError is a probe's answer from a receiver of another protocol
// version: a version notice (PROTOCOL.md §10) listing what it speaks.
type VersionError struct{ Speaks []uint8 }

func (e VersionError) Error() string {
	return "the receiver speaks keyrelay protocol " + wire.DescribeVersions(e.Speaks)
}

// ProbeConfig says how a probe reaches its receiver: as send would (the
// same identity, the receiver's key, the key file, or --insecure).
type ProbeConfig struct {
	Identity *identity.Identity
	PeerKey  [identity.KeyLen]byte
	PSK      []byte
	Insecure bool
}

// Probe runs one short session with the receiver at to over conn, with the
// Core that send runs (so its handshake, keys and acks are send's own, not a
// copy that could drift from them): the session holds no key, and ends at
// the first ack that gives a round trip and the receiver's clock (its first
// ack gives both, PROTOCOL.md §9), when timeout has passed, or when
// ctx is done. A receiver that falls silent after it has nothing to
// release: the probe's session ended, it was not lost. Probe reads conn
// until it returns; the caller closes it.
func Probe(ctx context.Context, conn net.PacketConn, to net.Addr, pc ProbeConfig, timeout time.Duration) (ProbeResult, error) {
	begun := time.Now()
	var werr error
	core, err := NewCore(CoreConfig{
		PSK:      pc.PSK,
		Identity: pc.Identity,
		Insecure: pc.Insecure,
		Feedback: true,
		Dests:    []Dest{{Addr: to.String(), PeerKey: pc.PeerKey}},
		Output: func(b []byte, _ int) {
			if _, err := conn.WriteTo(b, to); err != nil && werr == nil {
				werr = err
			}
		},
	}, begun)
	if err != nil {
		return ProbeResult{}, err
	}
	deadline := begun.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	core.Start(begun)
	buf := make([]byte, wire.MaxPacketSize)
	var peers []PeerStatus
	for {
		if werr != nil {
			return ProbeResult{}, werr
		}
		if err := ctx.Err(); err != nil {
			return ProbeResult{}, err
		}
		next := core.Next()
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
		if err := conn.SetReadDeadline(next); err != nil {
			return ProbeResult{}, err
		}
		n, from, err := conn.ReadFrom(buf)
		now := time.Now()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return ProbeResult{}, err
			}
			if !now.Before(deadline) {
				if core.Stats().Handshakes > 0 {
					return ProbeResult{}, ErrNoAcks
				}
				return ProbeResult{}, ErrNoAnswer
			}
			core.Tick(now)
			continue
		}
		// Not an answer to this session (another program, a forged or
		// stale datagram): counted by the core, and the probe goes on.
		_ = core.Ack(buf[:n], from.String(), now)
		peers = core.Peers(peers[:0], now)
		for _, p := range peers {
			switch {
			case p.ClockKnown:
				return ProbeResult{RTT: p.SRTT, ClockOffset: p.ClockOffset}, nil
			case p.Speaks != nil:
				return ProbeResult{}, VersionError{p.Speaks}
			}
		}
	}
}
