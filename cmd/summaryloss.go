package cmd

import (
	"fmt"

	"github.com/keyrelay/keyrelay/sender"
)

// lossText is a receiver's loss in send's summary: measured over the
// packets whose fate its acks told, or said to be unmeasured when none
// was told (a session too short for an ack to settle a packet), rather
// than a loss of 0.0% over 0 packets.
func lossText(p sender.PeerStatus) string {
	if p.Settled == 0 {
		return "loss not measured (no packet's fate acknowledged yet)"
	}
	return fmt.Sprintf("loss %.1f%% (%d of %d packets)", 100*p.Loss, p.Lost, p.Settled)
}
