package netsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
)

// Wrap returns pc with its writes impaired by c; reads pass through. The
// wrapper's writes never block on the delay: delayed datagrams are written
// later from timers.
func Wrap(pc net.PacketConn, c Config) net.PacketConn {
	return &wrapped{PacketConn: pc, im: newImpairer(c)}
}

type wrapped struct {
	net.PacketConn
	im *impairer
}

func (w *wrapped) WriteTo(b []byte, to net.Addr) (int, error) {
	p := append([]byte(nil), b...)
	w.im.schedule(func() {
		if _, err := w.PacketConn.WriteTo(p, to); err == nil {
			w.im.stats.Delivered.Add(1)
		}
	})
	return len(b), nil
}

// proxyIdle is how long a client's upstream socket lives without traffic.
const proxyIdle = 2 * time.Minute

// Proxy relays UDP datagrams from clients to Target through the Forward
// impairment, and the replies back through the Backward impairment. Each
// client gets its own upstream socket, so replies find their way back.
type Proxy struct {
	Listen, Target    string
	Forward, Backward Config
	// Logf reports upstream errors; nil is silent.
	Logf func(format string, args ...any)

	conn     net.PacketConn
	target   *net.UDPAddr
	fwd, bwd *impairer
	back     net.PacketConn // conn with Backward impairment
	mu       sync.Mutex
	clients  map[string]*upstream
}

type upstream struct {
	conn net.PacketConn
	fwd  net.PacketConn
	last time.Time
}

// Start checks the configs, resolves Target and listens; it returns the
// address clients send to.
func (p *Proxy) Start() (net.Addr, error) {
	if err := p.Forward.Validate(); err != nil {
		return nil, err
	}
	if err := p.Backward.Validate(); err != nil {
		return nil, err
	}
	t, err := net.ResolveUDPAddr("udp", p.Target)
	if err != nil {
		return nil, fmt.Errorf("unable to resolve target %s: %w", p.Target, err)
	}
	p.target = t
	p.conn, err = udpsock.Listen("udp", p.Listen)
	if err != nil {
		return nil, fmt.Errorf("unable to listen on %s: %w", p.Listen, err)
	}
	p.fwd = newImpairer(p.Forward)
	b := p.Backward
	b.Seed ^= 0x5bd1e995
	p.bwd = newImpairer(b)
	p.back = &wrapped{PacketConn: p.conn, im: p.bwd}
	p.clients = map[string]*upstream{}
	return p.conn.LocalAddr(), nil
}

// SetLoss changes each direction's loss probability (Config.Loss) from
// the next datagram on, after Start: a test lets a handshake through a
// clean link and then makes it lossy. The other impairments stay as
// they were.
func (p *Proxy) SetLoss(forward, backward float64) error {
	for _, l := range []float64{forward, backward} {
		if !(l >= 0 && l <= 1) {
			return fmt.Errorf("loss %v out of range 0..1", l)
		}
	}
	if p.fwd == nil {
		return errors.New("proxy: SetLoss before Start")
	}
	p.fwd.setLoss(forward)
	p.bwd.setLoss(backward)
	return nil
}

// Stats returns what each direction did.
func (p *Proxy) Stats() (forward, backward StatsSnapshot) {
	return p.fwd.stats.Snapshot(), p.bwd.stats.Snapshot()
}

// Serve relays until ctx is done, then closes every socket.
func (p *Proxy) Serve(ctx context.Context) error {
	if p.conn == nil {
		return errors.New("proxy: Serve before Start")
	}
	stop := context.AfterFunc(ctx, func() { p.conn.Close() })
	defer stop()
	defer p.closeAll()
	buf := make([]byte, 64*1024)
	for {
		n, from, err := p.conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("proxy: %w", err)
		}
		up, err := p.upstreamFor(from)
		if err != nil {
			p.logf("%v", err)
			continue
		}
		up.fwd.WriteTo(buf[:n], p.target)
	}
}

func (p *Proxy) upstreamFor(client net.Addr) (*upstream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for k, u := range p.clients {
		if now.Sub(u.last) > proxyIdle {
			u.conn.Close()
			delete(p.clients, k)
		}
	}
	u := p.clients[client.String()]
	if u == nil {
		c, err := udpsock.Listen("udp", ":0")
		if err != nil {
			return nil, fmt.Errorf("proxy: unable to open an upstream socket: %w", err)
		}
		u = &upstream{conn: c, fwd: &wrapped{PacketConn: c, im: p.fwd}}
		p.clients[client.String()] = u
		go p.replies(u, client)
	}
	u.last = now
	return u, nil
}

// replies relays what the target answers a client back to it.
func (p *Proxy) replies(u *upstream, client net.Addr) {
	buf := make([]byte, 64*1024)
	for {
		n, _, err := u.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		p.back.WriteTo(buf[:n], client)
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.clients {
		u.conn.Close()
	}
	p.conn.Close()
}

func (p *Proxy) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}
