// Package relaytest runs a real receiver and the sender that feeds it, for
// tests: over a netsim network (in a testing/synctest bubble, virtual
// time) or over sockets the test gives (real loopback UDP). Its own tests
// are the relay's: a sender and a receiver together, under loss, delay,
// restarts and attacks (the sender's and the receiver's packages test each
// end alone, with package fake's doubles, and import neither the other end
// nor this package). Only tests import it.
package relaytest

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// The addresses the two ends listen on in Config.Net, for SetLink and
// Partition.
const (
	RecvAddr = "10.0.0.2:7575"
	SendAddr = "10.0.0.1:40000"
)

// Config says how to set up a Relay.
type Config struct {
	// Net is the network the ends listen on (at RecvAddr and SendAddr)
	// when RecvConn or SendConn is nil.
	Net *netsim.Network
	// RecvConn and SendConn are the receiver's and the sender's sockets,
	// when the test makes them itself.
	RecvConn, SendConn net.PacketConn
	// PSK is the key file's key: Receiver.PSK and Sender.PSK where they
	// are nil (the second factor of the handshake).
	PSK []byte
	// Insecure: both ends in plaintext (Receiver.Insecure, Sender.Insecure).
	Insecure bool
	// Identity is both ends' identity, as send and recv on one machine
	// share it, where Receiver.Identity and Sender.Identity are nil; nil:
	// a new one (unless Insecure).
	Identity *identity.Identity
	// Feedback: the sender reads acks on SendConn, unless Sender.Feedback
	// names the sockets already.
	Feedback bool
	// Receiver is the receiver's config; Conn is RecvConn, and a nil
	// Injector is fake.Nop.
	Receiver receiver.Config
	// Sender is the sender's config; Conn is SendConn, and no Dests is
	// the receiver's address.
	Sender sender.Config
}

// Relay is a receiver running in its own goroutine and a sender made to
// feed it; the test runs the sender (Sender.Run) and then calls Stop.
type Relay struct {
	Receiver *receiver.Receiver
	Sender   *sender.Sender

	sendConn net.PacketConn
	stop     context.CancelFunc
	done     chan struct{}
	err      error
}

// Start listens (where cfg gives no sockets), starts the receiver and makes
// the sender. A failure to do so fails tb.
func Start(tb testing.TB, cfg Config) *Relay {
	tb.Helper()
	listen := func(c net.PacketConn, addr string) net.PacketConn {
		if c != nil {
			return c
		}
		c, err := cfg.Net.Listen(addr)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	rc := listen(cfg.RecvConn, RecvAddr)
	sc := listen(cfg.SendConn, SendAddr)

	id := cfg.Identity
	if id == nil && !cfg.Insecure {
		var err error
		if id, err = identity.Generate(); err != nil {
			tb.Fatal(err)
		}
	}
	// Without feedback no handshake completes: the relay is one-way at
	// both ends (send and recv --one-way), sealed with the key file.
	oneWay := !cfg.Feedback && len(cfg.Sender.Feedback) == 0 && !cfg.Insecure
	rcfg := cfg.Receiver
	rcfg.Conn = rc
	rcfg.Insecure = rcfg.Insecure || cfg.Insecure
	rcfg.OneWay = rcfg.OneWay || oneWay
	if rcfg.Identity == nil {
		rcfg.Identity = id
		if rcfg.Local == nil && cfg.Sender.Identity == nil {
			// Both ends share the identity: they are one machine, and
			// the sender's address is one of its own (the receiver
			// accepts its own identity from this machine only).
			if a, err := netip.ParseAddrPort(sc.LocalAddr().String()); err == nil {
				rcfg.Local = func(x netip.Addr) bool { return x == a.Addr() }
			}
		}
	}
	if rcfg.Injector == nil {
		rcfg.Injector = fake.Nop{}
	}
	if rcfg.PSK == nil {
		rcfg.PSK = cfg.PSK
	}
	r, err := receiver.New(rcfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	rl := &Relay{Receiver: r, sendConn: sc, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(rl.done)
		_, rl.err = r.Run(ctx)
	}()

	scfg := cfg.Sender
	scfg.Conn = sc
	scfg.Insecure = scfg.Insecure || cfg.Insecure
	if scfg.Identity == nil {
		scfg.Identity = id
	}
	if len(scfg.Dests) == 0 {
		scfg.Dests = []sender.Dest{{UDP: rc.LocalAddr()}}
	}
	for i, d := range scfg.Dests {
		if d.PeerKey == ([identity.KeyLen]byte{}) && rcfg.Identity != nil {
			scfg.Dests[i].PeerKey = rcfg.Identity.Public()
		}
		scfg.Dests[i].OneWay = d.OneWay || oneWay
	}
	if scfg.PSK == nil {
		scfg.PSK = cfg.PSK
	}
	if cfg.Feedback && len(scfg.Feedback) == 0 {
		scfg.Feedback = []net.PacketConn{sc}
	}
	rl.Sender, err = sender.New(scfg)
	if err != nil {
		stop()
		<-rl.done
		tb.Fatal(err)
	}
	return rl
}

// Stop closes the sender's socket (acks still in flight find it closed),
// stops the receiver and waits for it, and returns its Run error. The
// receiver releases what it holds as it stops: a Recorder's Notify channel
// must still be read.
func (rl *Relay) Stop() error {
	rl.sendConn.Close()
	rl.stop()
	<-rl.done
	return rl.err
}

// Feeder runs the relay's sender on a channel source and times key events
// from entering the sender to their injection, which the receiver's
// injector (a fake.Recorder with Notify) reports. The loopback latency
// benchmarks and the report share it.
type Feeder struct {
	rl       *Relay
	src      fake.Chan
	injected chan fake.Arrival
	done     chan struct{}
}

// Feed starts rl.Sender on a channel source; injected is the Notify
// channel of the receiver's fake.Recorder.
func (rl *Relay) Feed(injected chan fake.Arrival) *Feeder {
	f := &Feeder{rl: rl, src: make(fake.Chan), injected: injected, done: make(chan struct{})}
	go func() { defer close(f.done); rl.Sender.Run(context.Background(), f.src) }()
	return f
}

// Latency sends ev and waits for its injection: the time between. It
// fails tb if the event has not arrived within 5 s.
func (f *Feeder) Latency(tb testing.TB, ev fake.Event) time.Duration {
	t0 := time.Now()
	f.src <- ev
	select {
	case a := <-f.injected:
		return a.At.Sub(t0)
	case <-time.After(5 * time.Second):
		tb.Fatalf("%v did not arrive within 5s", ev.Key)
		return 0
	}
}

// Close ends the source, waits for the sender to finish, and stops the
// relay, reading what the receiver releases as it stops.
func (f *Feeder) Close() {
	close(f.src)
	<-f.done
	go func() {
		for range f.injected {
		}
	}()
	f.rl.Stop()
}

// Percentiles sorts lat and returns its median and 99th percentile.
func Percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}
