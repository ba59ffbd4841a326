package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/statusboard"
	"github.com/keyrelay/keyrelay/internal/udpsock"
	"github.com/keyrelay/keyrelay/internal/wake"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/wire"
)

// RecvOptions are the flags of `keyrelay recv`.
type RecvOptions struct {
	Listen    string
	Inject    string
	Device    string // --device
	Layout    string // --layout
	Timeout   time.Duration
	Balanced  bool
	Key       KeyOptions
	Allow     []string
	MaxSkew   time.Duration
	Acks      bool
	OneWay    bool
	Debug     bool
	Identity  string // --identity
	Peers     string // --peers
	Quiet     bool
	LogFormat string

	// The identity and peers files as the flags, the environment, the
	// config file or the default name them (sharedPath).
	identityPath, peersPath string
}

// NewCmdRecv builds `keyrelay recv`.
func NewCmdRecv(stdio IO, runF func(context.Context, *RecvOptions) error) *cobra.Command {
	opts := &RecvOptions{}
	c := &cobra.Command{
		Use:     "recv [--listen ADDR] [--inject INJECTOR]",
		Example: recvExample,
		Short:   "Receive key events and inject them",
		// The word people type for it, and its usual misspellings, are
		// too far from "recv" for cobra's own suggestions.
		SuggestFor: []string{"receive", "recieve", "receiver", "reciever", "recive", "receve"},
		Long: `Receive key events and type them on this machine. Only paired machines
(keyrelay pair, keyrelay peers) and this machine's own send can type. Each
sender's session is tracked on its own, and the keys of one silent for
--timeout are released, so none stays stuck down.

Injectors (--inject):
` + injectorShortHelp() + `

A physical key types what this machine's layout puts on it; text (from a
terminal, a script's type) arrives as the same text whatever the layouts.
On SIGINT, SIGTERM, SIGHUP or SIGQUIT recv releases every key and exits 0.

What each injector needs and does, and every flag: man keyrelay-recv.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			var err error
			if opts.identityPath, err = config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName); err != nil {
				return err
			}
			if opts.peersPath, err = config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName); err != nil {
				return err
			}
			return runRecv(c.Context(), stdio, opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Listen, "listen", ":"+DefaultPort, "UDP address to listen on")
	f.StringVar(&opts.Inject, "inject", "auto", "where keys go (see above)")
	deviceDefault, deviceHelp := injectorDevice()
	f.StringVar(&opts.Device, "device", deviceDefault, deviceHelp)
	f.StringVar(&opts.Layout, "layout", "", injectorLayoutHelp())
	f.DurationVar(&opts.Timeout, "timeout", receiver.DefaultTimeout, "release the keys of a sender silent this long (the stuck-key guard; longer while its packets are being lost, up to 10 times; send's --timeout is only about liveness)")
	f.BoolVar(&opts.Balanced, "balanced", true, "never inject a second key-down for a held key (release it first)")
	opts.Key.register(f)
	registerIdentityFlag(f, &opts.Identity)
	registerPeersFlag(f, &opts.Peers)
	f.StringArrayVar(&opts.Allow, "allow", nil, "accept packets only from this network or address (repeatable; e.g. 192.168.1.0/24, 10.0.0.7, fd00::/8)")
	f.BoolVar(&opts.Acks, "acks", true, "answer each sender with small ack packets (RTT, loss, liveness; at most one per 5ms per sender, one a second while nothing changes)")
	f.BoolVar(&opts.OneWay, "one-way", false, "accept one-way senders (send --one-way: broadcast, multicast, --feedback=false) of paired machines, whose identity signs each packet; off by default: their only replay defence is --max-skew, so a recording of their session could be typed again here within it (PROTOCOL.md §8.6); handshaken senders' recordings never can")
	f.DurationVar(&opts.MaxSkew, "max-skew", receiver.DefaultMaxSkew, "reject one-way packets whose sender clock differs from ours by more than this (their replay defence; needs clocks in sync; handshaken senders need no clock)")
	f.BoolVar(&opts.Debug, "debug", false, "name keys in log and status lines (the keys a session holds, a key that failed to type): passwords typed included; without, counts only (command line only)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors (no status lines)")
	f.StringVar(&opts.LogFormat, "log-format", "text", "log lines as text or json (status lines too, when not on a terminal)")
	config.AddFlag(f)
	configurable(c)
	manual(c, `Receive key events from senders and inject them. Each sender session is
tracked on its own: stale and duplicate packets change nothing, a session
silent for --timeout has its keys released, and a key stays down while any
session holds it.

Injectors (--inject):
`+injectorHelp()+`

Layouts: a physical key types what this machine's layout puts on it, so when
you relay a keyboard (send --input hook) use the same layout on both machines;
text from a terminal or a script's type arrives as the same text whatever the
layouts. The README's "Keys and layouts" has the details.

Only senders that answer its handshake can type: a one-way sender (send
--one-way: broadcast, multicast, --feedback=false) is refused, counted and
logged once a minute unless recv runs with --one-way, and even then only a
paired machine types, whose identity signs each one-way packet: the key file
alone types nothing (PROTOCOL.md §8.6).

On SIGINT, SIGTERM, SIGHUP or SIGQUIT recv releases every key it holds and
exits 0.`)
	commonFlags(c, "listen", "inject", "layout", "allow", "timeout", "quiet", "config")
	briefly(c, map[string]string{
		"inject": "where keys go: " + strings.Join(injectorNames(), ", "),
		"layout": "with " + joinOr(layoutInjectors()) + ": the XKB layout text is typed through",
		"config": "settings file (default ~/.config/keyrelay/config.toml; keyrelay config)",
	})
	return c
}

func (o *RecvOptions) validate() error {
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return config.BadValue("log-format", "unknown format (choose text or json)", fmt.Sprintf("unknown --log-format %q (choose text or json)", o.LogFormat))
	}
	if o.MaxSkew <= 0 {
		return config.BadValue("max-skew", "must be positive", "--max-skew must be positive")
	}
	if o.Timeout < 10*time.Millisecond {
		return config.BadValue("timeout", "too short (minimum 10ms)", fmt.Sprintf("--timeout %v is too short (minimum 10ms)", o.Timeout))
	}
	listen, err := config.ListenAddr(o.Listen)
	if err != nil {
		return err
	}
	o.Listen = listen
	allow, err := config.ParseAllow(o.Allow)
	if err != nil {
		return err
	}
	if o.Key.Insecure && len(allow) == 0 && !loopbackListen(listen) {
		return config.Involving(fmt.Errorf("--insecure with --listen %s and no --allow would let anyone who can reach this port type on this machine (and read what is typed): with --insecure, listen on loopback only (--listen 127.0.0.1:%s, for tests or behind a tunnel) or accept only the senders named with --allow ADDR or CIDR; or use a key (keyrelay keygen) and drop --insecure", listen, DefaultPort), "insecure", "listen", "allow")
	}
	if err := checkInjectorDevice(o.Inject, o.Device); err != nil {
		return err
	}
	if err := checkInjectorLayout(o.Inject, o.Layout); err != nil {
		return err
	}
	names := injectorNames()
	if slices.Contains(names, o.Inject) {
		return nil
	}
	want := fmt.Sprintf("unknown injector (choose one of: %s)%s", strings.Join(names, ", "), spell.Suggest(o.Inject, names))
	return config.BadValue("inject", want, fmt.Sprintf("unknown --inject %q (choose one of: %s)%s", o.Inject, strings.Join(names, ", "), spell.Suggest(o.Inject, names)))
}

// loopbackListen reports whether listen (HOST:PORT, from listenAddr) is on
// a loopback address only: "localhost", or an address that is loopback.
// An empty host is every address.
func loopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// recvStatus makes the status lines of a receiver: one per session heard
// in the last minute. A session whose packets are being lost says after
// how long a silence its keys are released (its allowance, longer than
// timeout).
func recvStatus(r *receiver.Receiver, timeout time.Duration, debug bool) func() ([]string, [][]any) {
	lastPackets, last := map[uint64]int{}, time.Now()
	return func() ([]string, [][]any) {
		now := time.Now()
		dt := now.Sub(last).Seconds()
		last = now
		var text []string
		var attrs [][]any
		for _, s := range r.Status() {
			if now.Sub(s.LastHeard) > time.Minute {
				continue
			}
			pps := float64(s.Packets-lastPackets[s.ID]) / dt
			lastPackets[s.ID] = s.Packets
			state := "live"
			if !s.Live {
				state = fmt.Sprintf("ended %v ago", now.Sub(s.LastHeard).Round(time.Second))
			}
			line := fmt.Sprintf("← %016x %-22s %-14s %5.1f pkt/s  %s", s.ID, s.Addr, state, pps, heldText(s.Held, debug))
			attr := []any{"session", fmt.Sprintf("%016x", s.ID), "from", s.Addr, "live", s.Live, "packets_per_s", math.Round(pps*10) / 10}
			attr = append(attr, heldAttrs(s.Held, debug)...)
			if s.Allowance > timeout {
				line += allowanceNote(s)
				attr = append(attr, "loss_pct", math.Round(100*s.Loss), "released_after", s.Allowance.Round(time.Millisecond).String())
			}
			text = append(text, line)
			attrs = append(attrs, attr)
		}
		// Senders of another protocol version: nothing of theirs is
		// typed, and the status says why (PROTOCOL.md §10).
		for _, v := range r.Versions() {
			if now.Sub(v.LastHeard) > time.Minute {
				continue
			}
			text = append(text, fmt.Sprintf("← %-39s speaks keyrelay protocol %s, this receiver %d: nothing it sends is typed", v.Addr, wire.DescribeVersions(v.Speaks), wire.Version))
			attrs = append(attrs, []any{"from", v.Addr, "protocol_version", int(v.Speaks[len(v.Speaks)-1]), "ours", wire.Version, "live", false})
		}
		if len(text) == 0 {
			text = []string{"← no sender yet"}
		}
		return text, attrs
	}
}

// allowanceNote says, for a session losing packets, after how long a
// silence its keys are released.
func allowanceNote(s receiver.SessionStatus) string {
	return fmt.Sprintf("  %.0f%% lost: released after %v silent", 100*s.Loss, s.Allowance.Round(10*time.Millisecond))
}

// hangingIndent wraps text at width after the head, indenting the lines
// after the first under the text.
func hangingIndent(head, text string, width int) string {
	var b strings.Builder
	b.WriteString(head)
	col := len(head)
	for i, w := range strings.Fields(text) {
		if i > 0 && col+1+len([]rune(w)) > width {
			b.WriteString("\n" + strings.Repeat(" ", len(head)))
			col = len(head)
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len([]rune(w))
	}
	return b.String()
}

// What recv's receiver finds in each injector, checked when building: the
// receiver looks for lock setting and for a backend going away by type
// assertion, so a method renamed on one side would otherwise be lost
// silently at run time.
var (
	_ receiver.Injector   = inject.Injector(nil)
	_ receiver.LockSetter = (*inject.X11)(nil)
	_ receiver.LockSetter = (*inject.Log)(nil)
	_ receiver.LockSetter = (*inject.Hidg)(nil)
	_ receiver.LockSetter = (*inject.Wayland)(nil)
	_ receiver.LockSetter = (*inject.Uinput)(nil)
	_ receiver.LockSetter = (*inject.Windows)(nil)
	_ receiver.LockSetter = (*inject.MacOS)(nil)
	_ receiver.Watched    = (*inject.X11)(nil)
	_ receiver.Watched    = (*inject.Wayland)(nil)
	// recv's summary asks for this (unfocusedNote).
	_ interface{ Unfocused() int } = (*inject.X11)(nil)
)

// newInjector makes the injector --inject names, checking what it needs
// before any key arrives.
func newInjector(choice, device, layout string, stdio IO, logf func(string, ...any)) (inject.Injector, string, error) {
	b, err := chooseInjector(choice, logf)
	if err != nil {
		return nil, "", err
	}
	// The flag's default is the first device injector's: another's own
	// default applies when --device was not given (or is empty).
	if def, _ := injectorDevice(); b.Device != nil && (device == "" || device == def) {
		device = b.Device.Default
	}
	l, err := loadLayout(b, layout)
	if err != nil {
		return nil, "", err
	}
	if l != nil && logf != nil {
		// Said, as recv cannot see the target: a layout other than
		// the target's types other characters.
		logf("characters are typed through the layout %s (%s): the target must use it", l.Name(), l.Description())
	}
	inj, err := b.New(inject.Options{Device: device, Layout: l, Out: stdio.Out, Logf: logf})
	if err != nil {
		return nil, "", err
	}
	return inj, b.Name, nil
}

func runRecv(ctx context.Context, stdio IO, o *RecvOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Layout != "" {
		// A misspelt layout is a usage error, said before anything else
		// (the identity, the peers); newInjector loads it for real.
		if _, err := xkblayout.Load(os.DirFS(xkblayout.Dir), o.Layout, nil); errors.Is(err, xkblayout.ErrUnknown) {
			return config.Involving(fmt.Errorf("--layout: %w", err), "layout")
		}
	}
	logfAll, logger := statusboard.NewLogf(stdio.Err, "recv", o.LogFormat)
	// Status: one line per session, redrawn on a terminal, logged every
	// 10 s elsewhere. Not with --inject log on a terminal: the key log is
	// on the same screen.
	showStatus := !o.Quiet && !(writesStdout(o.Inject) && statusboard.IsTerminal(stdio.Out))
	board := &statusboard.Board{W: stdio.Err, Term: showStatus && statusboard.IsTerminal(stdio.Err) && o.LogFormat != "json", Logger: logger, Width: statusboard.TermWidth(stdio.Err)}
	logfAll = board.Wrap(logfAll)
	if o.Debug {
		logfAll(debugNote) // even with --quiet: what the log holds must be known
	}
	// errf is said even with --quiet: errors.
	errf := logfAll
	quiet := func(string, ...any) {}
	if o.Quiet {
		logfAll = quiet
	}
	key, err := o.Key.load(logfAll, o.OneWay)
	if err != nil {
		return err
	}
	var id *identity.Identity
	var watch *peers.Watch
	if !o.Key.Insecure {
		if id, err = loadIdentity(o.identityPath, "recv", logfAll); err != nil {
			return err
		}
		if watch, err = peers.NewWatch(o.peersPath, logfAll, errf); err != nil {
			return config.SettingError{Err: err, Setting: "peers"}
		}
		n := watch.Len()
		machines := "paired machines"
		if n == 1 {
			machines = "paired machine"
		}
		logfAll("accepts %d %s (keyrelay peers) and this one", n, machines)
	}
	allow, err := config.ParseAllow(o.Allow)
	if err != nil {
		return err
	}
	conn, err := udpsock.Listen("udp", o.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("unable to listen on %s: the port is in use (another keyrelay recv?); choose another with --listen", o.Listen)
		}
		return fmt.Errorf("unable to listen on %s: %w", o.Listen, err)
	}
	defer conn.Close()
	logf := func(format string, args ...any) {
		if !o.Quiet {
			logfAll(format, args...)
		}
	}
	inj, name, err := newInjector(o.Inject, o.Device, o.Layout, stdio, logf)
	if err != nil {
		return err
	}
	defer inj.Close()
	rcfg := receiver.Config{
		Conn: conn, Injector: inj, Timeout: o.Timeout, Unbalanced: !o.Balanced, Logf: logf,
		PSK: key, Allow: allow, MaxSkew: o.MaxSkew, NoAcks: !o.Acks, OneWay: o.OneWay, Debug: o.Debug,
		Identity: id, Insecure: o.Key.Insecure, Local: hostAddr,
		Timer: pollTimer(),
	}
	if watch != nil {
		rcfg.Peer, rcfg.Recheck = watch.Lookup, watch.Recheck
	}
	r, err := receiver.New(rcfg)
	if err != nil {
		return err
	}
	logf("listening on %v (inject: %s, timeout %v)", conn.LocalAddr(), name, o.Timeout)
	statusCtx, stopStatus := context.WithCancel(ctx)
	statusDone := make(chan struct{})
	status := recvStatus(r, o.Timeout, o.Debug)
	shown := showStatus && !writesStdout(name) || showStatus && !statusboard.IsTerminal(stdio.Out)
	if shown {
		go func() { defer close(statusDone); board.Run(statusCtx, status) }()
	} else {
		close(statusDone)
	}
	stats, err := r.Run(ctx)
	stopStatus()
	<-statusDone
	if shown {
		text, _ := status()
		board.Finish(text)
	}
	logf("%v%s", stats, unfocusedNote(inj))
	return err
}

// unfocusedNote is the summary's count of keys an X11 injector typed while
// no window had the keyboard focus (they reached no application), "" when
// there were none or the injector cannot tell.
func unfocusedNote(inj inject.Injector) string {
	u, ok := inj.(interface{ Unfocused() int })
	if !ok || u.Unfocused() == 0 {
		return ""
	}
	return fmt.Sprintf(", %d key presses typed while no window had the keyboard focus", u.Unfocused())
}

// pollTimer is the receive loop's timer: one that fires through the
// network poller where there is a timerfd (package wake: a runtime timer
// also wakes the runtime's monitor thread), else nil, a time.Timer.
func pollTimer() receiver.Timer {
	t, err := wake.New()
	if err != nil {
		return nil
	}
	return t
}
