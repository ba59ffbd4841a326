package sender

import (
	"crypto/cipher"
	"errors"
	"net/netip"
	"time"

	"github.com/keyrelay/keyrelay/replay"
	"github.com/keyrelay/keyrelay/wire"
)

// Dest is one destination of a Core's packets.
type Dest struct {
	// Addr is the destination as acks from it name it (host:port).
	Addr string
	// OneWay: no handshake (a broadcast or multicast address, or no
	// feedback): packets go sealed with the session's own keys, and a
	// receiver checks their wall clock (PROTOCOL.md §8.4).
	OneWay bool
}

// link is the session's handshake with one destination (PROTOCOL.md
// §8.3): a hello in every packet until the receiver's ticket comes, then
// packets sealed with keys derived from it. A receiver that restarts
// answers the old ticket's packets with a new ticket, which replaces it
// at once (issue 15: a restarted receiver is followed at once), with
// fresh ack state.
type link struct {
	Dest
	has    bool        // a ticket came
	ticket wire.Ticket // the receiver's ticket
	echo   uint64      // the packet counter the ticket answered
	since  uint64      // what the ticket's packets carry as Since
	first  uint64      // the counter of the first packet under the ticket
	sealer *wire.Sealer
	opener cipher.AEAD
	acks   replay.Filter // acks under this ticket
	newest uint64        // newest packet counter acked under this ticket
	stamp  uint64        // newest event stamp acked under it (applied there)
	// unanswered: no ticket came within PeerTimeout, and the log said
	// so. Its packets stay hellos, carrying no key (PROTOCOL.md §8.4: a
	// unicast destination never falls back to one-way).
	unanswered bool
}

var (
	errTicketForOther  = errors.New("ticket from an address that is no destination")
	errStaleTicket     = errors.New("ticket answering an old packet (a replay, or a late duplicate)")
	errTicketForeignID = errors.New("ticket for another session")
)

// sameAddr compares two host:port strings as addresses (an IPv4-mapped
// IPv6 address is its IPv4 address), or as strings if they do not parse.
func sameAddr(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := netip.ParseAddrPort(a)
	y, err2 := netip.ParseAddrPort(b)
	return err1 == nil && err2 == nil && x.Addr().Unmap() == y.Addr().Unmap() && x.Port() == y.Port()
}

// linkFor is the link a ticket from the address from belongs to: the
// destination of that address, or, with a single handshaking
// destination, that one (a receiver with several addresses may answer from
// another than the one it was sent to; the ticket is authenticated).
func (c *Core) linkFor(from string) *link {
	var only *link
	n := 0
	for _, l := range c.links {
		if l.OneWay {
			continue
		}
		if sameAddr(l.Addr, from) {
			return l
		}
		only = l
		n++
	}
	if n == 1 {
		return only
	}
	return nil
}

// handleTicket takes a receiver's ticket. It is accepted when it answers a
// packet sent within 2 PeerTimeout, and, if the link has a ticket already,
// answers a later packet than that one did and the receiver has acked no
// packet from then on under the old one (only a receiver that can no
// longer open them, a restarted one, asks again; a ticket another
// receiver was tricked into sending for a replayed packet changes
// nothing while this one acks).
func (c *Core) handleTicket(b []byte, from string, now time.Time) error {
	var keyFor func(uint64) ([]byte, error)
	if c.keys.handshake != nil {
		keyFor = func(uint64) ([]byte, error) { return c.keys.handshake, nil }
	}
	h, t, err := wire.ParseTicket(b, keyFor)
	if err != nil {
		return err
	}
	if h.Session != c.keys.id {
		return errTicketForeignID
	}
	l := c.linkFor(from)
	if l == nil {
		return errTicketForOther
	}
	at, ok := c.sentAt(h.Counter)
	if !ok || h.Counter > c.keys.nonce || now.Sub(at) > 2*c.cfg.PeerTimeout {
		return errStaleTicket
	}
	if l.has && (t == l.ticket || h.Counter <= l.echo || l.newest >= h.Counter) {
		return errStaleTicket
	}
	since := uint64(0)
	if l.has {
		// The receiver restarted: it types what was first sent in the
		// packet it could not open, or later (what the old one may have
		// typed is not typed twice).
		// (what it acked as applied is certainly not typed twice).
		since = max(c.topBefore(h.Counter), l.stamp)
		c.logf("receiver %s restarted: new ticket, typing goes on", l.Addr)
	} else if l.unanswered {
		c.logf("receiver %s answered the handshake: the keys typed meanwhile go to it now", l.Addr)
	}
	if err := c.keys.take(l, t, h.Counter, since); err != nil {
		return err
	}
	c.stats.Tickets++
	// The queue goes to it at once, as after an event: keys typed while
	// the handshake ran are in it.
	c.send(now)
	c.startBurst(now)
	return nil
}

// topBefore is the newest stamp the packets before counter carried.
func (c *Core) topBefore(counter uint64) uint64 {
	if counter <= 1 {
		return 0
	}
	r := c.sent[(counter-1)%sentRing]
	if r.counter != counter-1 {
		return 0
	}
	return r.top
}

// awaitingTicket reports whether a handshaking destination has no ticket
// yet: its packets are hellos, and the keys typed meanwhile wait for it
// (inGrace).
func (c *Core) awaitingTicket() bool {
	for _, l := range c.links {
		if !l.OneWay && !l.has {
			return true
		}
	}
	return false
}

// noteUnanswered says, once per destination, that one has not answered a
// hello within PeerTimeout of the start. Its packets stay hellos: a
// sender that fell back to one-way here would let whoever drops the
// tickets for that long downgrade the session to one a recording can be
// replayed from (PROTOCOL.md §8.4). Keys typed meanwhile wait, within
// Outage (inGrace), and go out once a ticket comes.
func (c *Core) noteUnanswered(now time.Time) {
	if now.Sub(c.start) < c.cfg.PeerTimeout {
		return
	}
	for _, l := range c.links {
		if !l.OneWay && !l.has && !l.unanswered {
			l.unanswered = true
			c.logf("no handshake answer from %s within %v: no key goes to it until it answers (hellos go on; a unicast destination never gets one-way packets)", l.Addr, c.cfg.PeerTimeout)
		}
	}
}

// Unanswered appends to dst the destinations whose handshake has not been
// answered: no ticket came from them (yet).
func (c *Core) Unanswered(dst []string) []string {
	for _, l := range c.links {
		if !l.OneWay && !l.has {
			dst = append(dst, l.Addr)
		}
	}
	return dst
}
