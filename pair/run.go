package pair

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// UI is the person at this machine.
type UI interface {
	// Confirm shows the code and the peer it would pair with, and asks
	// whether the other machine shows the same code. It runs in its own
	// goroutine, while Status may still be called; if the pairing ends
	// first (the other side said no, a timeout, ctx), its answer is
	// ignored and Listen or Dial return without waiting for it.
	Confirm(code string, peer Info) (bool, error)
	// Status tells the person what the pairing waits for.
	Status(msg string)
}

// RunOptions are Options plus what only the loops need.
type RunOptions struct {
	Options
	// Rand supplies the pairing id and nonces (crypto/rand if nil).
	Rand io.Reader
	// Target names the listener in Dial's messages as the person typed it
	// (HOST:PORT); the address it dialed if empty.
	Target string
}

// Listen waits on conn for one pairing request (`keyrelay pair`, machine
// B), runs it with the person through ui, and returns the peer's Info and
// address once both people confirmed the same code. conn stays the
// caller's: Listen leaves it open, with no read deadline.
func Listen(ctx context.Context, conn net.PacketConn, self Info, dh DH, ui UI, opts RunOptions) (Info, net.Addr, error) {
	r := &runner{conn: conn, ui: ui}
	c, err := NewListener(self, dh, opts.rand(), time.Now(), opts.Options)
	if err != nil {
		return Info{}, nil, err
	}
	// The person types this machine's name (its host name by default)
	// there, with the port unless it is recv's default, which the dialer
	// assumes.
	there := self.Name
	if p := port(conn.LocalAddr()); p != "7575" {
		there += ":" + p
	}
	ui.Status(fmt.Sprintf("waiting for a pairing request on UDP %v: run `keyrelay pair %s` on the other machine (its address if that name does not reach this one)", conn.LocalAddr(), there))
	peer, err := r.run(ctx, c)
	if err != nil {
		return Info{}, nil, err
	}
	return peer, r.peer, nil
}

// Dial asks the listener at addr to pair (`keyrelay pair HOST`, machine
// A), runs the pairing with the person through ui, and returns the
// listener's Info once both people confirmed the same code. conn stays the
// caller's.
func Dial(ctx context.Context, conn net.PacketConn, addr net.Addr, self Info, dh DH, ui UI, opts RunOptions) (Info, error) {
	if addr == nil {
		return Info{}, errors.New("no address to pair with")
	}
	target := opts.Target
	if target == "" {
		target = addr.String()
	}
	r := &runner{conn: conn, ui: ui, peer: addr}
	c, err := NewDialer(self, dh, addr.String(), opts.rand(), time.Now(), opts.Options)
	if err != nil {
		return Info{}, err
	}
	ui.Status(fmt.Sprintf("asking %s to pair...", target))
	peer, err := r.run(ctx, c)
	switch {
	case errors.Is(err, ErrNoAnswer):
		return Info{}, fmt.Errorf("no keyrelay pair waiting at %s: run `keyrelay pair` there first, or a firewall drops UDP port %s: %w", target, port(addr), err)
	case errors.Is(err, ErrRecv):
		return Info{}, fmt.Errorf("%s: stop recv there and run `keyrelay pair` in its place: %w", target, err)
	}
	return peer, err
}

func (o RunOptions) rand() io.Reader {
	if o.Rand != nil {
		return o.Rand
	}
	return rand.Reader
}

func port(a net.Addr) string {
	s := a.String()
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

type datagram struct {
	b    []byte
	from net.Addr
}

type answer struct {
	yes bool
	err error
}

// runner is the loop around a Core: one goroutine reads the socket, the
// person answers in another, and this one owns the core and its timer.
type runner struct {
	conn net.PacketConn
	ui   UI
	peer net.Addr // where the core's datagrams go
}

func (r *runner) run(ctx context.Context, c *Core) (Info, error) {
	in := make(chan datagram, 16)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 1500)
		for {
			n, from, err := r.conn.ReadFrom(buf)
			if err != nil {
				select {
				case <-stop:
				case readErr <- err:
				}
				return
			}
			select {
			case in <- datagram{append([]byte(nil), buf[:n]...), from}:
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		// Wake the reader, wait for it, and hand conn back as it was.
		close(stop)
		_ = r.conn.SetReadDeadline(time.Unix(1, 0))
		<-readerDone
		_ = r.conn.SetReadDeadline(time.Time{})
	}()

	answers := make(chan answer, 1) // never blocks a late Confirm
	asked := false
	phase := c.Phase()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.flush(c)
		if p := c.Phase(); p != phase {
			phase = p
			r.status(c, p)
		}
		if c.Phase() == Done {
			return c.Result()
		}
		if !asked && c.Phase() == Comparing {
			asked = true
			code, peer := c.Code()
			go func() {
				yes, err := r.ui.Confirm(code, peer)
				answers <- answer{yes, err}
			}()
		}
		timer.Reset(time.Until(c.Next()))
		select {
		case d := <-in:
			had := c.PeerAddr() != ""
			c.Handle(time.Now(), d.b, d.from.String())
			if !had && c.PeerAddr() != "" {
				r.peer = d.from
			}
		case a := <-answers:
			if a.err != nil {
				c.Abort(time.Now(), fmt.Errorf("unable to ask for confirmation: %w", a.err))
			} else {
				c.Answer(time.Now(), a.yes)
			}
		case <-timer.C:
			c.Tick(time.Now())
		case err := <-readErr:
			c.Abort(time.Now(), fmt.Errorf("unable to read from the socket: %w", err))
		case <-ctx.Done():
			c.Abort(time.Now(), ctx.Err())
		}
	}
}

// flush sends what the core queued; a failed send is the same as a lost
// datagram, which the core resends.
func (r *runner) flush(c *Core) {
	for _, b := range c.Take() {
		if r.peer != nil {
			_, _ = r.conn.WriteTo(b, r.peer)
		}
	}
}

func (r *runner) status(c *Core, p Phase) {
	_, peer := c.Code()
	switch p {
	case AwaitingPeer:
		r.ui.Status(fmt.Sprintf("waiting for %s to confirm...", peer.Name))
	case Done:
		if _, err := c.Result(); errors.Is(err, ErrRejected) {
			r.ui.Status("pairing rejected: nothing was stored")
		}
	}
}

// DefaultName is this machine's name for pairing: its hostname, cut to
// its first label if it is too long, or an error saying how to choose one.
func DefaultName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("unable to read the hostname: %w", err)
	}
	if len(h) > MaxName {
		h, _, _ = strings.Cut(h, ".")
	}
	if err := CheckName(h); err != nil {
		return "", fmt.Errorf("the hostname cannot name this machine: %w", err)
	}
	return h, nil
}
