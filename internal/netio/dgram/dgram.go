// Package dgram reads datagrams off a socket without an allocation per
// datagram: into a ring of buffers allocated once, with each source
// address made once (a net.Addr and its string) and reused for every
// datagram from it; on Linux with a raw recvfrom(2), which does not wake
// the runtime's monitor thread (recvfrom_linux.go). The receive loops of
// recv and send (its acks) read one datagram per key event, and per idle
// resend, all day. A socket of udpsock's (Windows) is read by its
// address-port read, as a net.UDPConn is.
package dgram

import (
	"net"
	"net/netip"

	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
)

// maxAddrs bounds the addresses remembered: past it the cache starts over
// (a flood from many sources costs an allocation per new source, as with no
// cache, and no memory).
const maxAddrs = 1024

// Reader reads datagrams from one socket. Its methods are not safe for
// concurrent use: one goroutine reads.
type Reader struct {
	pc    net.PacketConn
	udp   udpsock.AddrPortReader // pc, when it is one (net.UDPConn, udpsock's): read without an address allocated
	raw   *rawReader             // pc's raw reads, where there are (Linux)
	bufs  [][]byte
	next  int
	addrs map[netip.AddrPort]Addr
	raws  map[sourceKey]Addr // raw's sources
	// The last raw source and its Addr: a relay's datagrams come from
	// one peer, and comparing a key costs less than hashing it into
	// raws, which an idle receiver did ten times a second on a cold cache.
	lastKey  sourceKey
	lastAddr Addr
}

// Addr is a datagram's source: the net.Addr the socket gave (to write
// back to) and its String.
type Addr struct {
	net.Addr
	S string
}

// NewReader reads pc. A datagram's bytes stay valid until inFlight more
// datagrams have been read after it: a reader handing datagrams to a
// channel of capacity c, read by one goroutine that handles one at a time,
// needs inFlight c+1 (the c in the channel and the one being handled).
// Each buffer holds size bytes; a longer datagram is cut to size, as
// ReadFrom does.
func NewReader(pc net.PacketConn, inFlight, size int) *Reader {
	r := &Reader{pc: pc, bufs: make([][]byte, inFlight+1), addrs: map[netip.AddrPort]Addr{}}
	r.udp, _ = pc.(udpsock.AddrPortReader)
	if r.raw = newRawReader(pc); r.raw != nil {
		r.raws = map[sourceKey]Addr{}
	}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
	}
	return r
}

// Read reads the next datagram: its bytes, in the reader's own buffer
// (see NewReader for how long they stay valid), and its source.
func (r *Reader) Read() ([]byte, Addr, error) {
	buf := r.bufs[r.next]
	if r.raw != nil {
		n, k, err := r.raw.readFrom(buf)
		if err != nil {
			return nil, Addr{}, err
		}
		r.next = (r.next + 1) % len(r.bufs)
		if r.lastAddr.Addr != nil && k == r.lastKey {
			return buf[:n], r.lastAddr, nil
		}
		a, ok := r.raws[k]
		if !ok {
			if len(r.raws) >= maxAddrs {
				clear(r.raws)
			}
			ua := k.udpAddr()
			a = Addr{ua, ua.String()}
			r.raws[k] = a
		}
		r.lastKey, r.lastAddr = k, a
		return buf[:n], a, nil
	}
	if r.udp == nil {
		n, from, err := r.pc.ReadFrom(buf)
		if err != nil {
			return nil, Addr{}, err
		}
		r.next = (r.next + 1) % len(r.bufs)
		return buf[:n], Addr{from, from.String()}, nil
	}
	n, ap, err := r.udp.ReadFromUDPAddrPort(buf)
	if err != nil {
		return nil, Addr{}, err
	}
	r.next = (r.next + 1) % len(r.bufs)
	a, ok := r.addrs[ap]
	if !ok {
		if len(r.addrs) >= maxAddrs {
			clear(r.addrs)
		}
		ua := net.UDPAddrFromAddrPort(ap)
		a = Addr{ua, ua.String()}
		r.addrs[ap] = a
	}
	return buf[:n], a, nil
}
