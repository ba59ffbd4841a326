package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
	"github.com/keyrelay/keyrelay/internal/netio/wake"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/statusboard"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/receiver"
)

// RecvOptions are a recv's settings: keyrelay recv's flags, as the
// command line, the environment and the config file give them.
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

	// IdentityPath and PeersPath are the identity and peers files as the
	// flags, the environment, the config file or the default name them
	// (config.SharedPath).
	IdentityPath, PeersPath string
}

// Check checks the settings that flags alone cannot: a usage error names
// the setting and what it wants.
func (o *RecvOptions) Check() error {
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
		return config.Involving(fmt.Errorf("--insecure with --listen %s and no --allow would let anyone who can reach this port type on this machine (and read what is typed): with --insecure, listen on loopback only (--listen 127.0.0.1:%s, for tests or behind a tunnel) or accept only the senders named with --allow ADDR or CIDR; or use a key (keyrelay keygen) and drop --insecure", listen, config.DefaultPort), "insecure", "listen", "allow")
	}
	if err := checkInjectorDevice(o.Inject, o.Device); err != nil {
		return err
	}
	if err := checkInjectorLayout(o.Inject, o.Layout); err != nil {
		return err
	}
	names := InjectorNames()
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
func newInjector(choice, device, layout string, out io.Writer, logf func(string, ...any)) (inject.Injector, string, error) {
	b, err := chooseInjector(choice, logf)
	if err != nil {
		return nil, "", err
	}
	// The flag's default is the first device injector's: another's own
	// default applies when --device was not given (or is empty).
	if b.Device != nil && (device == "" || device == DefaultDevice()) {
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
	inj, err := b.New(inject.Options{Device: device, Layout: l, Out: out, Logf: logf})
	if err != nil {
		return nil, "", err
	}
	return inj, b.Name, nil
}

// Recv runs a recv with the settings o until ctx is done: it checks them,
// opens the socket and the injector, and types what the senders it
// accepts send, showing each session's status on errw (and the key log
// of --inject log on out), and logging its figures at the end.
func Recv(ctx context.Context, o *RecvOptions, out, errw io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.Layout != "" {
		// A misspelt layout is a usage error, said before anything else
		// (the identity, the peers); newInjector loads it for real.
		if _, err := xkblayout.Load(os.DirFS(xkblayout.Dir), o.Layout, nil); errors.Is(err, xkblayout.ErrUnknown) {
			return config.Involving(fmt.Errorf("--layout: %w", err), "layout")
		}
	}
	logfAll, logger := statusboard.NewLogf(errw, "recv", o.LogFormat)
	// Status: one line per session, redrawn on a terminal, logged every
	// 10 s elsewhere. Not with --inject log on a terminal: the key log is
	// on the same screen.
	showStatus := !o.Quiet && !(writesStdout(o.Inject) && statusboard.IsTerminal(out))
	board := &statusboard.Board{W: errw, Term: showStatus && statusboard.IsTerminal(errw) && o.LogFormat != "json", Logger: logger, Width: statusboard.TermWidth(errw)}
	logfAll = board.Wrap(logfAll)
	if o.Debug {
		logfAll(DebugNote) // even with --quiet: what the log holds must be known
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
		if id, err = loadIdentity(o.IdentityPath, logfAll); err != nil {
			return err
		}
		if watch, err = peers.NewWatch(o.PeersPath, logfAll, errf); err != nil {
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
	inj, name, err := newInjector(o.Inject, o.Device, o.Layout, out, logf)
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
	shown := showStatus && !writesStdout(name) || showStatus && !statusboard.IsTerminal(out)
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

// InjectorNames are --inject's values: auto, then every injector.
func InjectorNames() []string {
	return append([]string{"auto"}, inject.Names()...)
}

// chooseInjector resolves --inject auto on this machine, logging a
// fallback's note with why nothing better applied.
func chooseInjector(choice string, logf func(string, ...any)) (inject.Backend, error) {
	if choice != "auto" {
		b, ok := inject.Lookup(choice)
		if !ok {
			return b, fmt.Errorf("unknown injector %q (choose one of: %s)", choice, strings.Join(InjectorNames(), ", "))
		}
		return b, nil
	}
	b, unmet, ok := inject.Choose(inject.OSHost())
	if !ok {
		return b, fmt.Errorf("--inject auto found no injector that works here (%s): choose one with --inject", strings.Join(unmet, ", "))
	}
	if b.Auto.Note != "" && logf != nil {
		logf("%s: %s", strings.Join(unmet, " and "), b.Auto.Note)
	}
	return b, nil
}

// writesStdout reports whether the injector named name writes to standard
// output (recv then draws no status there).
func writesStdout(name string) bool {
	b, ok := inject.Lookup(name)
	return ok && b.Caps.Stdout
}

// DefaultDevice is --device's default: the first device injector's.
func DefaultDevice() string {
	if ds := inject.WithDevice(); len(ds) > 0 {
		return ds[0].Device.Default
	}
	return ""
}

// checkInjectorDevice refuses --device (given: neither empty nor its
// default) with an injector that opens no device of the user's choice.
func checkInjectorDevice(choice, device string) error {
	if device == "" || device == DefaultDevice() {
		return nil
	}
	if b, ok := inject.Lookup(choice); ok && b.Device != nil {
		return nil
	}
	var what, flags []string
	for _, b := range inject.WithDevice() {
		what = append(what, b.Device.What)
		flags = append(flags, "--inject "+b.Name)
	}
	return config.Involving(fmt.Errorf("--device %s names %s, which only %s types through: add %s, or drop --device",
		device, strings.Join(what, " or "), strings.Join(flags, " or "), strings.Join(flags, " or ")), "device", "inject")
}

// checkInjectorLayout refuses a --layout that is no layout's name, or
// given with an injector that types characters some other way or not at
// all. With --inject auto, newInjector checks the one it picks.
func checkInjectorLayout(choice, layout string) error {
	if layout == "" {
		return nil
	}
	if err := xkblayout.CheckName(layout); err != nil {
		return config.Involving(err, "layout")
	}
	if choice == "auto" {
		return nil
	}
	if b, ok := inject.Lookup(choice); !ok || b.NamedLayout != nil {
		return nil // an unknown --inject is Check's to report
	}
	return layoutRefused(choice, layout)
}

// layoutRefused is the usage error for a --layout given with an injector
// choice that types characters without one.
func layoutRefused(choice, layout string) error {
	var flags []string
	for _, b := range inject.WithLayout() {
		flags = append(flags, "--inject "+b.Name)
	}
	return config.Involving(fmt.Errorf("--layout %s is for injectors whose target's layout cannot be asked (%s); --inject %s types characters on its own or not at all: drop --layout, or use %s",
		layout, spell.JoinOr(flags), choice, spell.JoinOr(flags)), "layout", "inject")
}

// loadLayout reads the layout --layout names for the injector b, from
// this machine's XKB data; nil when none is named.
func loadLayout(b inject.Backend, layout string) (*xkblayout.Layout, error) {
	if layout == "" {
		return nil, nil
	}
	if b.NamedLayout == nil {
		// --inject auto picked it (Check refused the others).
		return nil, layoutRefused("auto (which picked "+b.Name+" here)", layout)
	}
	var compose io.Reader
	if f, err := os.Open(xkblayout.ComposeFile); err == nil {
		defer f.Close()
		compose = f
	}
	l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), layout, compose)
	if err != nil {
		if errors.Is(err, xkblayout.ErrUnknown) {
			return nil, config.Involving(fmt.Errorf("--layout: %w", err), "layout")
		}
		return nil, fmt.Errorf("--layout %s: %w", layout, err)
	}
	return l, nil
}

// hostAddr reports whether a is an address of one of this machine's
// network interfaces: the receiver accepts its own identity from one
// (receiver.Config.Local). Asked at each such handshake, as addresses
// come and go.
func hostAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if h, ok := netip.AddrFromSlice(n.IP); ok && h.Unmap() == a.Unmap() {
				return true
			}
		}
	}
	return false
}
