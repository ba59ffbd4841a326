package cmd

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/sender"
)

type nopInjector struct{}

func (nopInjector) Inject(inject.Event) error { return nil }
func (nopInjector) Close() error              { return nil }

// skewedRecv is a real receiver on loopback whose clock runs shift ahead
// of ours (Handle takes the time), with a --max-skew large enough to
// accept us: what a peer without NTP looks like.
func skewedRecv(t *testing.T, key []byte, shift time.Duration) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := receiver.New(receiver.Config{Conn: conn, Injector: nopInjector{}, PSK: key, MaxSkew: time.Hour})
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
	t.Cleanup(func() { conn.Close(); <-done })
	return conn.LocalAddr().String()
}

// TestDoctorClockOffset (issue 6 must-have 2: "with --peer, a round trip
// to a running recv (RTT, and clock offset if the replay defence depends
// on clocks)"): the offset is measured from the ack's wall clock
// (PROTOCOL.md §9), and one past half the default --max-skew fails with
// the NTP fix.
func TestDoctorClockOffset(t *testing.T) {
	isolate(t)
	key, err := secret.Generate()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "k")
	if err := secret.Write(keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	offsetRE := regexp.MustCompile(`clock offset to \S+: its clock is (?:(\S+) (ahead of|behind)|within 1ms of) ours`)
	for _, tc := range []struct {
		shift time.Duration
		fail  bool
	}{
		{0, false},
		{-5 * time.Second, false},
		{20 * time.Second, true},
		{-40 * time.Second, true},
	} {
		peer := skewedRecv(t, key, tc.shift)
		var out bytes.Buffer
		err := runDoctor(context.Background(), IO{Out: &out, Err: &out}, &DoctorOptions{
			Inject: "log", Input: "script", Listen: "127.0.0.1:0", KeyFile: keyFile, Peer: peer})
		text := out.String()
		if (err != nil) != tc.fail {
			t.Errorf("shift %v: err %v, want failure %v\n%s", tc.shift, err, tc.fail, text)
		}
		if !strings.Contains(text, "ok    round trip to "+peer) {
			t.Errorf("shift %v: no round trip line\n%s", tc.shift, text)
		}
		m := offsetRE.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("shift %v: no clock offset line\n%s", tc.shift, text)
			continue
		}
		var got time.Duration // "within 1ms of ours"
		if m[1] != "" {
			if got, err = time.ParseDuration(m[1]); err != nil {
				t.Fatal(err)
			}
		}
		if m[2] == "behind" {
			got = -got
		}
		// Millisecond clock fields and half a loopback RTT: a few ms.
		if d := got - tc.shift; d > 5*time.Millisecond || d < -5*time.Millisecond {
			t.Errorf("shift %v: measured %v\n%s", tc.shift, got, text)
		}
		if tc.fail && !strings.Contains(text, "FAIL  clock offset") || tc.fail && !strings.Contains(text, "NTP") {
			t.Errorf("shift %v: no failure with the NTP fix\n%s", tc.shift, text)
		}
	}
}

// TestClockOffset: the arithmetic of sender.ClockOffset (NTP's symmetric
// path): an ack that left at the receiver's T arrives rtt/2 later.
func TestClockOffset(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	rtt := 40 * time.Millisecond
	for _, shift := range []time.Duration{0, 3 * time.Second, -90 * time.Second} {
		left := now.Add(-rtt / 2).Add(shift) // by the receiver's clock
		if got := sender.ClockOffset(uint64(left.UnixMilli()), now, rtt); got != shift {
			t.Errorf("shift %v: ClockOffset = %v", shift, got)
		}
	}
}

// TestUinputNameAgrees: send --input evdev skips recv's own virtual
// keyboard by name; the two packages must agree on it, or a send and a recv
// on one machine would relay recv's keys back for ever.
func TestUinputNameAgrees(t *testing.T) {
	if capture.UinputName != inject.UinputName {
		t.Errorf("capture.UinputName %q != inject.UinputName %q", capture.UinputName, inject.UinputName)
	}
}

// TestDoctorEvdev (issue 12 must-have 4: "doctor checks it"): with
// --input evdev, a keyboard that cannot be read fails the check and names
// the fix; for another input it is shown but not counted.
func TestDoctorEvdev(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "event5")
	for _, input := range []string{"evdev", "script"} {
		var out bytes.Buffer
		err := runDoctor(context.Background(), IO{Out: &out, Err: &out}, &DoctorOptions{
			Inject: "log", Input: input, Listen: "127.0.0.1:0", KeyFile: "none", Devices: []string{missing}})
		text := out.String()
		line := "keyboards under /dev/input (--input evdev): evdev keyboard input unavailable: " + missing + " does not exist"
		switch {
		case input == "evdev" && (err == nil || !strings.Contains(text, "FAIL  "+line) || !strings.Contains(text, "usermod -aG input")):
			t.Errorf("--input evdev: err %v, want the evdev check failed with its fix\n%s", err, text)
		case input != "evdev" && !strings.Contains(text, "--    "+line):
			t.Errorf("--input %s: want the evdev check shown as not needed\n%s", input, text)
		}
	}
}
