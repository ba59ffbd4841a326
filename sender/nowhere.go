package sender

import (
	"fmt"

	"github.com/keyrelay/keyrelay/handshake"
	"github.com/keyrelay/keyrelay/wire"
)

// Keys typed into nothing. A receiver whose injector can tell that a key
// reached no application (x11: no window had the keyboard focus; hidg: no
// USB host took the report; windows: no window in the foreground) counts
// the session's key events that did, and every ack after them carries the
// count, from the receiver instance's start, and why (PROTOCOL.md §9).
// Those events arrived, and the ledger counts them delivered to the
// receiver; the count is what send's summary and exit status add: typed
// into nothing is not delivered to an application.
//
// A count is the receiver instance's: a restarted receiver counts from 0.
// Each ack's count is at least that of every ack the instance sent before
// it under the same keypair, and of every one under an older keypair (it
// acks under the keypair of the newest packet, §9). So the link keeps the
// newest keypair's count, and when a newer keypair's ack says less, the
// receiver restarted: the old instance's count is kept apart. An ack that
// arrives late, under an older keypair, changes nothing.

// nowhere is what one link's receiver said it typed into nothing.
type nowhere struct {
	past uint64             // earlier instances' counts
	now  uint64             // the count of the instance acking under by
	by   *handshake.Keypair // the newest keypair a count came under
	gen  int                // by's place in the link's keypairs: newer is more
	why  wire.Why           // why the latest reached no application
	said bool               // the log said so
}

// total is every instance's count.
func (n *nowhere) total() uint64 { return n.past + n.now }

// noteNowhere takes the count of ack a, opened by keypair k (nil in
// plaintext), from l's receiver.
func (c *Core) noteNowhere(l *link, a *wire.Ack, k *handshake.Keypair) {
	n := &l.nowhere
	gen := l.keypairGen(k)
	switch {
	case k == nil || k == n.by:
		n.now = max(n.now, a.Nowhere)
	case gen > n.gen:
		if a.Nowhere < n.now {
			n.past += n.now // a new instance, counting from 0
		}
		n.now, n.by, n.gen = a.Nowhere, k, gen
	default:
		return // late, under an older keypair
	}
	if a.Nowhere > 0 {
		n.why = a.Why
	}
	if n.total() > 0 && !n.said {
		n.said = true
		c.logf("receiver %s types into no application: %s; %s", l.Addr, NowhereWhy(n.why), NowhereFix(n.why))
	}
}

// keypairGen is k's place among l's keypairs: how many l had taken up to
// it (the current one's is the most); 0 for none of them (plaintext).
func (l *link) keypairGen(k *handshake.Keypair) int {
	switch {
	case k == nil:
		return 0
	case k == l.current:
		return l.handshakes
	case k == l.previous:
		return l.handshakes - 1
	}
	return 0
}

// nowhereTexts is, for each reason a receiver gives for key events it typed
// into no application, what send's log and summary say of it and what to
// do about it.
var nowhereTexts = map[wire.Why]struct{ why, fix string }{
	wire.WhyNoFocus: {
		"no window had the keyboard focus there",
		"focus the window that should get the keys before sending (click it, or xdotool windowfocus --sync), or run a window manager",
	},
	wire.WhyNoUSBHost: {
		"the USB host took none of the keyboard gadget's reports there (no computer has configured the gadget, or none reads it)",
		"plug the receiver's USB device port into the computer to type into, with that computer on and awake (recv's log says what the gadget saw)",
	},
	wire.WhyNoForeground: {
		"no window was in the foreground of that Windows desktop (locked, at the sign-in screen or a UAC prompt, or no window active)",
		"unlock that machine and bring the window that should get the keys to the front before sending",
	},
}

// NowhereWhy says why a receiver typed key events into no application,
// for the log and send's summary.
func NowhereWhy(w wire.Why) string {
	if n, ok := nowhereTexts[w]; ok {
		return n.why
	}
	return fmt.Sprintf("a reason this keyrelay does not know (%d: the receiver runs a newer release)", w)
}

// NowhereFix says what to do about it.
func NowhereFix(w wire.Why) string {
	if n, ok := nowhereTexts[w]; ok {
		return n.fix
	}
	return "see the receiver's log"
}
