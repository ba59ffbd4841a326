package netsim

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// queueLen is how many datagrams a conn buffers before dropping, like a
// socket's receive buffer.
const queueLen = 1024

// Network is an in-memory datagram network. Safe for concurrent use.
type Network struct {
	mu    sync.Mutex
	def   Config
	conns map[string]*conn
	links map[[2]string]*impairer
}

// NewNetwork returns a network whose links all impair as def, unless SetLink
// says otherwise.
func NewNetwork(def Config) *Network {
	return &Network{def: def, conns: map[string]*conn{}, links: map[[2]string]*impairer{}}
}

// SetLink sets the impairment of datagrams from one address to another.
func (n *Network) SetLink(from, to string, c Config) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[[2]string{from, to}] = newImpairer(c)
}

// Partition cuts (down) or restores the direction from → to.
func (n *Network) Partition(from, to string, down bool) {
	n.link(from, to).setDown(down)
}

// Stats returns what the direction from → to did.
func (n *Network) Stats(from, to string) StatsSnapshot {
	return n.link(from, to).stats.Snapshot()
}

func (n *Network) link(from, to string) *impairer {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := [2]string{from, to}
	l := n.links[k]
	if l == nil {
		// Each direction gets its own stream of decisions, derived from the
		// seed and the endpoints, so adding a link does not change others.
		c := n.def
		c.Seed ^= hash(from + "→" + to)
		l = newImpairer(c)
		n.links[k] = l
	}
	return l
}

func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// Listen returns a conn bound to addr ("10.0.0.1:5000").
func (n *Network) Listen(addr string) (net.PacketConn, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("netsim: bad address %q: %w", addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, taken := n.conns[a.String()]; taken {
		return nil, fmt.Errorf("netsim: address %s already in use", a)
	}
	c := &conn{net: n, addr: a, in: make(chan datagram, queueLen), closed: make(chan struct{}), wake: make(chan struct{}, 1)}
	n.conns[a.String()] = c
	return c, nil
}

type datagram struct {
	b    []byte
	from net.Addr
}

// conn is one endpoint of a Network.
type conn struct {
	net       *Network
	addr      *net.UDPAddr
	in        chan datagram
	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	deadline  time.Time
	wake      chan struct{} // a new read deadline was set
}

func (c *conn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		dl := c.deadline
		c.mu.Unlock()
		var expired <-chan time.Time
		var timer *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, nil, c.opErr("read", os.ErrDeadlineExceeded)
			}
			timer = time.NewTimer(d)
			expired = timer.C
		}
		n, from, err, again := c.wait(b, expired)
		if timer != nil {
			timer.Stop()
		}
		if !again {
			return n, from, err
		}
	}
}

// wait takes one datagram, or reports why not; again is true when the read
// deadline changed and ReadFrom must look at it again.
func (c *conn) wait(b []byte, expired <-chan time.Time) (n int, from net.Addr, err error, again bool) {
	select {
	case p := <-c.in:
		return copy(b, p.b), p.from, nil, false
	case <-c.closed:
		return 0, nil, c.opErr("read", net.ErrClosed), false
	case <-expired:
		return 0, nil, c.opErr("read", os.ErrDeadlineExceeded), false
	case <-c.wake:
		return 0, nil, nil, true
	}
}

func (c *conn) WriteTo(b []byte, to net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, c.opErr("write", net.ErrClosed)
	default:
	}
	c.net.mu.Lock()
	dst := c.net.conns[to.String()]
	c.net.mu.Unlock()
	if dst == nil {
		return len(b), nil // nobody there: lost, as UDP would
	}
	p := datagram{b: append([]byte(nil), b...), from: c.addr}
	l := c.net.link(c.addr.String(), dst.addr.String())
	l.schedule(func() {
		select {
		case <-dst.closed:
		case dst.in <- p:
			l.stats.Delivered.Add(1)
		default:
			l.stats.Overflow.Add(1)
		}
	})
	return len(b), nil
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.net.mu.Lock()
		delete(c.net.conns, c.addr.String())
		c.net.mu.Unlock()
	})
	return nil
}

func (c *conn) LocalAddr() net.Addr { return c.addr }

func (c *conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *conn) SetWriteDeadline(time.Time) error { return nil }

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Addr: c.addr, Err: err}
}
