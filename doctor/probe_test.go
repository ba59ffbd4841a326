package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/sender"
)

// probeAs is how probePeer reaches a recv made by relaytest.Serve with key
// (plaintext if nil) and identity id.
func probeAs(key []byte, id *identity.Identity) sender.ProbeConfig {
	if key == nil {
		return sender.ProbeConfig{Insecure: true}
	}
	return sender.ProbeConfig{PSK: key, Identity: id, PeerKey: id.Public()}
}

// TestDoctorProbeHoldsNoKey: doctor's probe does not look like a lost
// session on the receiver: the probe is a session
// of none entries, so when it falls silent the receiver releases nothing:
// it ended, nothing was lost (recv logs such a session as ended, not timed
// out).
func TestDoctorProbeHoldsNoKey(t *testing.T) {
	key, _ := secret.Generate()
	var inj fake.Recorder
	var logs []string
	id := relaytest.MachineID(t)
	addr, r, stop := relaytest.Serve(t, "127.0.0.1:0", receiver.Config{Injector: &inj, PSK: key, Identity: id,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}, 0)
	if _, _, err := probePeer(context.Background(), addr, probeAs(key, id), time.Second); err != nil {
		t.Fatal(err)
	}
	stop() // the receiver is ours now
	if s := r.Stats(); s.Accepted < 1 || s.Sessions != 1 {
		t.Fatalf("the probe did not reach the receiver as one session: %v", s)
	}
	pressed, held := len(inj.Events()), r.Held()
	r.Expire(time.Now().Add(time.Minute))
	if pressed != 0 || len(held) != 0 || len(inj.Events()) != pressed {
		t.Errorf("the probe typed %d key events and held %v; its silence released %d more; want none", pressed, held, len(inj.Events())-pressed)
	}
	if l := strings.Join(logs, "\n"); !strings.Contains(l, "this machine") {
		t.Errorf("receiver log:\n%s", l)
	}
}

// TestDoctorProbeIsHandshaken (doctor checks what send does): the probe
// starts with the handshake as send does (PROTOCOL.md §8.3), so a recv
// that takes only handshaken senders (the default) answers it, with a
// key file and without; one that answers the handshake but acks nothing
// (--acks=false) is named as such, not as absent; one whose peers list
// lacks this machine is no answer.
func TestDoctorProbeIsHandshaken(t *testing.T) {
	key, _ := secret.Generate()
	id := relaytest.MachineID(t)
	for _, psk := range [][]byte{key, nil} {
		addr, r, stop := relaytest.Serve(t, "127.0.0.1:0", receiver.Config{Injector: fake.Nop{}, PSK: psk, Identity: id}, 0)
		if _, _, err := probePeer(context.Background(), addr, sender.ProbeConfig{PSK: psk, Identity: id, PeerKey: id.Public()}, time.Second); err != nil {
			t.Errorf("key %v: a recv did not answer the probe: %v", psk != nil, err)
		}
		stop()
		if s := r.Stats(); s.Sessions != 1 || s.Refused != 0 || s.Responses == 0 {
			t.Errorf("key %v: receiver stats %+v, want one handshaken session and nothing refused", psk != nil, s)
		}
	}
	stranger, _ := identity.Generate()
	addr, _, _ := relaytest.Serve(t, "127.0.0.1:0", receiver.Config{Injector: fake.Nop{}, PSK: key, Identity: id}, 0)
	if _, _, err := probePeer(context.Background(), addr, sender.ProbeConfig{PSK: key, Identity: stranger, PeerKey: id.Public()}, 600*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not paired there") {
		t.Errorf("probe from an unpaired machine: %v", err)
	}
	addr, _, _ = relaytest.Serve(t, "127.0.0.1:0", receiver.Config{Injector: fake.Nop{}, PSK: key, NoAcks: true, Identity: id}, 0)
	_, _, err := probePeer(context.Background(), addr, probeAs(key, id), 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "answered the handshake but acked nothing") || !strings.Contains(err.Error(), "--acks=false") {
		t.Errorf("probe of a recv --acks=false: %v", err)
	}
}

// TestDoctorMakesTheIdentityRecvUses: with no identity yet, doctor makes it
// as send and recv do on first use, so its probe of this machine's own
// recv, started at the same moment and making the same file, is made under
// the identity that recv accepts (PROTOCOL.md §8.1: a machine accepts its
// own identity), whichever of the two writes the file first.
func TestDoctorMakesTheIdentityRecvUses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, identity.FileName)
	o := &Options{Role: RoleRecv, Inject: "log", Input: "terminal", Listen: "127.0.0.1:0", IdentityPath: path, PeersPath: filepath.Join(dir, "peers.toml"), ProbeTimeout: 300 * time.Millisecond}
	rep, err := Run(context.Background(), o)
	if err != nil || rep.Failed() > 0 {
		t.Fatalf("doctor: %v, %+v", err, rep)
	}
	id, err := identity.Load(path)
	if err != nil {
		t.Fatalf("doctor made no identity at %s: %v\n%+v", path, err, rep.Checks)
	}
	i := slices.IndexFunc(rep.Checks, func(c Check) bool { return c.Name == "identity" })
	if i < 0 || !strings.HasPrefix(rep.Checks[i].OK, "made now at "+path) || o.id == nil || o.id.Public() != id.Public() {
		t.Errorf("doctor did not say it made the identity, or probes under another one\n%+v", rep.Checks)
	}
}
