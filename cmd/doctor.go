package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// DoctorOptions are the flags of `keyrelay doctor`.
type DoctorOptions struct {
	Inject  string
	Input   string
	Listen  string
	KeyFile string
	Peer    string
	Devices []string

	config *configFile // the config file the settings came from, if any
}

// check is one line of the doctor's report.
type check struct {
	name   string
	needed bool  // a failure makes doctor exit non-zero
	err    error // nil: fine
	ok     string
	fix    string
}

// NewCmdDoctor builds `keyrelay doctor`.
func NewCmdDoctor(stdio IO) *cobra.Command {
	opts := &DoctorOptions{}
	c := &cobra.Command{
		Use:     "doctor [--inject I] [--input S] [--peer HOST:PORT]",
		Example: doctorExample,
		Short:   "Check what send and recv need on this machine, and say how to fix what is missing",
		Long: `Check, one line each, what the chosen injector and key source need: an X
display with XTEST and evdev keycodes (x11), XTEST (robotgo), RECORD (hook),
/dev/uinput (uinput), a terminal (terminal input), the key file (present, mode 0600, fingerprint) and
the UDP port recv listens on. With --peer, a round trip to a running recv
(it must share the key): RTT. Exit status 1 if something the chosen
injector or source needs is missing.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runDoctor(c.Context(), stdio, opts) },
	}
	f := c.Flags()
	f.StringVar(&opts.Inject, "inject", "auto", "the injector recv will use (auto, x11, robotgo, uinput, log)")
	f.StringVar(&opts.Input, "input", "terminal", "the key source send will use (terminal, x11, evdev, script; hook is x11)")
	f.StringArrayVar(&opts.Devices, "device", nil, "with --input evdev: the /dev/input/event* devices send will read (repeatable; default: every keyboard)")
	f.StringVar(&opts.Listen, "listen", ":"+DefaultPort, "the address recv will listen on")
	f.StringVar(&opts.KeyFile, "key-file", "", "the key file (default $"+secret.Env+")")
	f.StringVar(&opts.Peer, "peer", "", "a running recv to test a round trip with (HOST[:PORT])")
	registerConfigFlag(f)
	c.PreRunE = func(c *cobra.Command, _ []string) (err error) {
		_, opts.config, err = configure(c)
		return err
	}
	return c
}

func runDoctor(ctx context.Context, stdio IO, o *DoctorOptions) error {
	inj := o.Inject
	if inj == "auto" {
		inj = autoInjector()
	}
	var checks []check
	add := func(c check) { checks = append(checks, c) }

	// The config file (a broken one stopped doctor before this, with the
	// place of the mistake).
	switch cf := o.config; {
	case cf != nil && cf.Found:
		add(check{name: "config file", ok: cf.Path + " read ('keyrelay config' shows every setting and its source)"})
	case cf != nil && cf.Path != "":
		add(check{name: "config file", ok: "none at " + cf.Path + " (optional: flags, KEYRELAY_ variables and defaults apply)"})
	}

	// The key.
	path := o.KeyFile // $KEYRELAY_KEY_FILE and the config file applied (configure)
	var key []byte
	if path == "" {
		add(check{name: "key file", needed: true, err: errors.New("none given"),
			fix: "make one with 'keyrelay keygen --out ~/.config/keyrelay/key', copy it to the other machine, and put key-file = \"key\" in " + displayDefaultConfigPath() + " (or pass --key-file, or set " + secret.Env + ")"})
	} else {
		k, warning, err := secret.Load(path)
		key = k
		switch {
		case err != nil:
			add(check{name: "key file", needed: true, err: err, fix: "make one with 'keyrelay keygen --out " + path + "'"})
		case warning != "":
			add(check{name: "key file mode", needed: true, err: errors.New(warning), fix: "chmod 600 " + path})
		default:
			add(check{name: "key file", ok: fmt.Sprintf("%s, mode 0600, fingerprint %s", path, secret.Fingerprint(k))})
		}
	}

	// X display, XTEST and evdev keycodes (x11), XTEST (robotgo) and RECORD
	// (hook).
	layout, x11Err := inject.CheckX11()
	add(check{name: "X display, XTEST and evdev keycodes (--inject x11)", needed: inj == "x11", err: x11Err,
		ok:  fmt.Sprintf("DISPLAY=%s answers, has XTEST and evdev keycodes; its layout is %q (physical keys type what this layout puts on them)", os.Getenv("DISPLAY"), layout),
		fix: "run inside the graphical session or set DISPLAY (e.g. DISPLAY=:0), allow this user (xhost/XAUTHORITY); without X use --inject uinput"})
	displayErr := inject.CheckDisplay()
	add(check{name: "X display and XTEST (--inject robotgo)", needed: inj == "robotgo", err: displayErr,
		ok:  "DISPLAY=" + os.Getenv("DISPLAY") + " answers and has XTEST",
		fix: "run inside the graphical session or set DISPLAY (e.g. DISPLAY=:0), allow this user (xhost/XAUTHORITY); without X use --inject uinput"})
	hookErr := capture.CheckHook()
	add(check{name: "X RECORD extension (--input x11 without --grab)", needed: o.Input == "hook" || o.Input == "x11", err: hookErr,
		ok:  "DISPLAY=" + os.Getenv("DISPLAY") + " has RECORD",
		fix: "enable RECORD in the X server (Xorg: Load \"record\" in the Module section; Xvfb: do not pass -extension RECORD), or use send --grab (it needs no RECORD), or --input terminal"})
	add(check{name: "/dev/uinput (--inject uinput)", needed: inj == "uinput", err: inject.CheckUinput(inject.DefaultUinputPath),
		ok: inject.DefaultUinputPath + " is writable", fix: "sudo modprobe uinput; a udev rule KERNEL==\"uinput\", GROUP=\"input\", MODE=\"0660\" and membership of group input"})
	kbds, evdevErr := capture.EvdevKeyboards(o.Devices)
	add(check{name: "keyboards under /dev/input (--input evdev)", needed: o.Input == "evdev", err: evdevErr,
		ok:  "send --input evdev reads " + strings.Join(kbds, ", "),
		fix: "Linux only; to read /dev/input/event*: sudo usermod -aG input $USER (then log in again), or a udev rule giving your user access (TAG+=\"uaccess\"); name a keyboard with --device /dev/input/eventN (ls -l /dev/input/by-id)"})
	add(check{name: "terminal (--input terminal)", needed: o.Input == "terminal", err: capture.CheckTerminal(),
		ok: "/dev/tty opens", fix: "run send in a terminal, or use --script FILE or --input hook"})

	// The UDP port.
	if pc, err := net.ListenPacket("udp", o.Listen); err != nil {
		msg := err
		if errors.Is(err, syscall.EADDRINUSE) {
			msg = fmt.Errorf("%s is in use (a keyrelay recv already running?)", o.Listen)
		}
		add(check{name: "UDP port for recv", needed: true, err: msg, fix: "stop the other program, or choose another port with recv --listen (and send --to HOST:PORT)"})
	} else {
		pc.Close()
		add(check{name: "UDP port for recv", ok: o.Listen + " is free"})
	}

	if o.Peer != "" {
		rtt, offset, err := probePeer(ctx, o.Peer, key)
		add(check{name: "round trip to " + o.Peer, needed: true, err: err,
			ok:  fmt.Sprintf("a recv answered in %v (same key; clocks within its --max-skew)", rtt.Round(time.Microsecond)),
			fix: "start 'keyrelay recv' there with the same key (compare fingerprints), open UDP " + DefaultPort + " in its firewall, keep both clocks in sync (NTP)"})
		if err == nil {
			// The replay defence (recv --max-skew, default 30s) rejects
			// packets from a clock too far off; warn at half of it, while
			// the relay still works, before drift makes it stop.
			var clockErr error
			if offset > receiver.DefaultMaxSkew/2 || offset < -receiver.DefaultMaxSkew/2 {
				clockErr = fmt.Errorf("its clock is %s: past recv's --max-skew (default %v) it rejects every packet", describeOffset(offset), receiver.DefaultMaxSkew)
			}
			add(check{name: "clock offset to " + o.Peer, needed: true, err: clockErr,
				ok:  fmt.Sprintf("its clock is %s (±%v; recv rejects packets past its --max-skew, default %v)", describeOffset(offset), (rtt/2 + time.Millisecond).Round(time.Millisecond), receiver.DefaultMaxSkew),
				fix: "keep both clocks in sync with NTP (timedatectl set-ntp true; chrony or systemd-timesyncd)"})
		}
	}

	failed := 0
	for _, c := range checks {
		switch {
		case c.err == nil:
			fmt.Fprintf(stdio.Out, "ok    %s: %s\n", c.name, c.ok)
		case c.needed:
			failed++
			fmt.Fprintf(stdio.Out, "FAIL  %s: %v\n      fix: %s\n", c.name, c.err, c.fix)
		default:
			fmt.Fprintf(stdio.Out, "--    %s: %v (not needed for --inject %s --input %s)\n", c.name, c.err, inj, o.Input)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d check(s) failed", failed)
	}
	return nil
}

// probePeer sends one sealed queue packet (nothing pressed) to a running
// recv and waits for its ack: a round trip through the network, the key and
// the receiver's clock check. It returns the RTT (the receiver's hold time
// taken out) and the receiver's clock minus ours, from the ack's wall clock.
func probePeer(ctx context.Context, peer string, key []byte) (rtt, offset time.Duration, err error) {
	if key == nil {
		return 0, 0, errors.New("no key to probe with")
	}
	addrs, err := resolveAll([]string{peer})
	if err != nil {
		return 0, 0, err
	}
	conn, err := net.ListenPacket("udp", ":0")
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	session, err := sender.NewSessionID()
	if err != nil {
		return 0, 0, err
	}
	out, _ := wire.SessionAEAD(key, session, wire.SenderToReceiver)
	back, _ := wire.SessionAEAD(key, session, wire.ReceiverToSender)
	q := wire.Queue{Header: wire.Header{Type: wire.TypeQueue, Session: session, Counter: 1},
		Wall: uint64(time.Now().UnixMilli()), Events: make([]eventqueue.Event, 4)}
	b, err := q.AppendSealed(nil, out)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if _, err := conn.WriteTo(b, addrs[0]); err != nil {
		return 0, 0, err
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, wire.MaxPacketSize)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return 0, 0, fmt.Errorf("no answer within 2s (no recv there, another key, clocks more than its --max-skew apart, or a firewall; recv's log names a wrong key or clock): %w", err)
		}
		var a wire.Ack
		if _, err := wire.OpenAck(buf[:n], back, nil, &a); err == nil && a.Header.Session == session {
			now := time.Now()
			rtt := now.Sub(start) - time.Duration(a.Delay)*time.Microsecond
			return rtt, sender.ClockOffset(a.Wall, now, rtt), nil
		}
	}
}
