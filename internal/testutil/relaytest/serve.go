package relaytest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/receiver"
)

// MachineID is this machine's identity as keyrelay's commands find it
// (the default file, made if missing) when the test isolated the config
// directory under the temporary directory, else a new one: a recv on
// loopback shares it, as send and recv on one machine do.
func MachineID(t *testing.T) *identity.Identity {
	t.Helper()
	if p, err := config.DefaultPath(); err == nil && strings.HasPrefix(p, os.TempDir()) {
		id, _, err := identity.LoadOrCreate(filepath.Join(filepath.Dir(p), identity.FileName))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Serve runs a receiver made from cfg on a UDP socket bound to listen,
// handing it every packet with a clock shift away from ours, until the
// returned stop (also at cleanup); after stop the test owns the receiver.
// Without a key or an identity in cfg it is plaintext (Insecure); with a
// key and no identity it has MachineID's.
func Serve(t *testing.T, listen string, cfg receiver.Config, shift time.Duration) (addr string, r *receiver.Receiver, stop func()) {
	t.Helper()
	conn, err := net.ListenPacket("udp", listen)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Conn = conn
	if cfg.PSK == nil && cfg.Identity == nil {
		cfg.Insecure = true
	}
	if !cfg.Insecure && cfg.Identity == nil {
		cfg.Identity = MachineID(t)
	}
	r, err = receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			r.Handle(buf[:n], from, time.Now().Add(shift))
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			conn.Close()
			<-done
		}
	}
	t.Cleanup(stop)
	return conn.LocalAddr().String(), r, stop
}
