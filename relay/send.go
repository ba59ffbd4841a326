package relay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/netio/wake"
	"github.com/keyrelay/keyrelay/internal/statusboard"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// SendResult is what a send leaves once its Senders have run: each
// one's report and figures, for the summary and the verdict, which are
// its caller's to say, and the logs to say them in.
type SendResult struct {
	// Routed: a Sender per destination (a routing.Group), each summed up
	// under its destination's name; else one Sender for every
	// destination.
	Routed bool
	Sent   []Sent
	// Fingerprint is this machine's identity's, "" with --insecure.
	Fingerprint string
	// Logf logs as send does (nothing with --quiet), Errf even with
	// --quiet; Logger is their slog.Logger (--log-format json's records).
	Logf, Errf func(string, ...any)
	Logger     *slog.Logger
}

// Sent is one Sender of a send that has run.
type Sent struct {
	Name   string // its destination's name (a routed send's)
	Addr   string // its destination's address (a routed send's)
	Sender *sender.Sender
	Stats  sender.Stats
}

// Send runs a send with the settings o until its source ends or ctx is
// done: it checks them, makes the key source, resolves the destinations,
// and relays the source's keys through one Sender to every destination
// or, when o is Routed, a Sender per destination (a routing.Group), with
// the control socket open for keyrelay switch and status, showing its
// status on errw. It returns what it sent once its Senders have run (nil
// when they never did) and the error that ended it: one of their Run
// (a *sender.NoAnswerError, a *sender.SilentError ...), or why it could
// not start.
func Send(ctx context.Context, o *SendOptions, in io.Reader, errw io.Writer) (*SendResult, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	// An early source (a script file, checked whole) is made before
	// resolving or sending anything; the others once the session is.
	b, _ := capture.LookupSource(o.Input) // Check checked the name
	var src sender.Source
	sopts := o.SourceOptions()
	sopts.Stdin = in
	if b.Early {
		var err error
		if src, err = b.New(sopts); err != nil {
			return nil, err
		}
	}
	logf, logger := statusboard.NewLogf(errw, "send", o.LogFormat)
	// Status: one line per destination, redrawn on a terminal (not with the
	// terminal source, which owns the terminal), logged every 10 s
	// elsewhere.
	showStatus := !o.Quiet && !b.Caps.Terminal
	board := &statusboard.Board{W: errw, Term: showStatus && statusboard.IsTerminal(errw) && o.LogFormat != "json", Logger: logger, Width: statusboard.TermWidth(errw)}
	logf = board.Wrap(logf)
	errf := logf
	if o.Quiet {
		logf = func(string, ...any) {}
	}
	if o.Debug {
		errf(DebugNote) // even with --quiet: what the log holds must be known
	}
	var id *identity.Identity
	list := &peers.List{}
	if !o.Key.Insecure {
		var err error
		if id, err = loadIdentity(o.IdentityPath, errf); err != nil {
			return nil, err
		}
		if list, err = loadPeersAt(o.PeersPath); err != nil {
			return nil, err
		}
	}
	resolved, err := dest.Resolve(o.addrs(), list, id, !o.Feedback, o.Key.Insecure)
	if err != nil {
		return nil, err
	}
	dests := dest.Addrs(resolved)
	if err := checkOneWay(o, dests); err != nil {
		return nil, err
	}
	oneWay := false
	for _, d := range resolved {
		oneWay = oneWay || d.OneWay
	}
	// A one-way packet carries the sending machine's public key and
	// signature too (PROTOCOL.md §5): a longer queue might not fit in a
	// datagram.
	if oneWay && o.Queue > wire.MaxSafeOneWayEvents {
		want := fmt.Sprintf("a one-way destination takes at most %d, as its packets carry the sending machine's signature too (PROTOCOL.md §5)", wire.MaxSafeOneWayEvents)
		return nil, config.BadValue("queue", want, fmt.Sprintf("--queue %d: %s", o.Queue, want))
	}
	key, err := o.Key.load(logf, oneWay)
	if err != nil {
		return nil, err
	}
	if o.Wait > 0 && !answersAny(dests) {
		return nil, config.Involving(fmt.Errorf("--wait: --to %s is broadcast or multicast, which no receiver answers (one-way): nothing to wait for (drop --wait)", joinAddrs(dests)), "wait", "to")
	}
	ss := &sendSession{errw: errw, o: o, source: b, src: src, sopts: sopts, resolved: resolved, key: key, id: id,
		logf: logf, errf: errf, board: board, showStatus: showStatus}
	if o.Routed() {
		return ss.runGroup(ctx)
	}
	return ss.run(ctx)
}

// sendSession is a send set up to run: its options, its key source (made
// already when early, a script; else made once the senders are), the
// destinations resolved, the key and identity, and where it logs and
// shows its status. run sends every key to every destination in one
// queue; runGroup routes them to a Sender per destination.
type sendSession struct {
	errw       io.Writer
	o          *SendOptions
	source     capture.SourceBackend
	src        sender.Source
	sopts      capture.SourceOptions
	resolved   []dest.Resolved
	key        []byte
	id         *identity.Identity
	logf, errf func(string, ...any) // errf is said even with --quiet
	board      *statusboard.Board
	showStatus bool
}

// config is the configuration of a Sender to ds over conn.
func (ss *sendSession) config(conn *transport.Conn, ds []dest.Resolved) sender.Config {
	o := ss.o
	cfg := sender.Config{
		Conn: conn, Dests: dest.SenderDests(ds), QueueLen: o.Queue, Interval: o.Interval,
		Linger: o.Linger, Logf: ss.logf, PSK: ss.key, PeerTimeout: o.Timeout, Outage: o.Outage, Debug: o.Debug,
		Identity: ss.id, Insecure: o.Key.Insecure, Wait: o.Wait,
		// A script plays on for no one once its receiver is gone: it stops
		// (exit 3) instead; with several destinations, for every one once
		// any one is silent past --outage (routing.Group.Run says why). A
		// person typing sees the status and decides.
		StopWhenSilent: ss.source.Caps.Script,
	}
	if o.Feedback {
		cfg.Feedback = conn.Sockets()
	}
	return cfg
}

// run sends every key to every destination in one queue (one
// destination, or mirror): one Sender.
func (ss *sendSession) run(ctx context.Context) (*SendResult, error) {
	o, b, src, logf, errf := ss.o, ss.source, ss.src, ss.logf, ss.errf
	dests := dest.Addrs(ss.resolved)
	conn, err := transport.Open(dests)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	cfg := ss.config(conn, ss.resolved)
	// The loop's timer fires through the network poller where there is a
	// timerfd: a runtime timer also wakes the runtime's monitor thread at
	// every resend (package wake). Run closes it.
	if t, err := wake.New(); err == nil {
		cfg.Timer = t
	}
	s, err := sender.New(cfg)
	if err != nil {
		if cfg.Timer != nil {
			cfg.Timer.Close()
		}
		return nil, err
	}
	if !b.Early {
		ss.sopts.Label = joinAddrs(dests)
		if !o.Quiet {
			ss.sopts.Status = ss.errw
		}
		if !o.Quiet && b.Caps.Terminal {
			// Its status line is send's only one (ss.showStatus).
			ss.sopts.Liveness = liveness(s, dests, o.Feedback, o.Timeout)
		}
		if src, err = b.New(ss.sopts); err != nil {
			return nil, err
		}
	}
	// Every send answers keyrelay status, and switch where its source
	// can switch; one that cannot open its socket runs without.
	var names []string
	for _, d := range o.dests {
		names = append(names, d.Name)
	}
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	defer stopCtrl()
	if err := control.Listen(ctrlCtx, control.Path(), &control.Plain{Sender: s, Source: src, Input: o.Input, Names: names, Addrs: dests}); err != nil {
		errf("no keyrelay switch or status for this send: %v", err)
	}
	if !o.Quiet {
		if script, ok := src.(*capture.Script); ok && len(script.HeldAtEnd) > 0 {
			what := fmt.Sprintf("%d keys", len(script.HeldAtEnd))
			if o.Debug {
				what = fmt.Sprintf("%v", script.HeldAtEnd)
			}
			logf("note: the script leaves %s held; they are released at the end", what)
		}
		logf("session %016x: sending to %s (queue %d, every %v)", s.Session(), joinAddrs(dests), o.Queue, o.Interval)
		if o.Wait > 0 {
			logf("waiting up to %v for the receivers to answer before %s", o.Wait, map[bool]string{true: "playing the script", false: "reading keys"}[b.Caps.Script])
		}
	}
	statusCtx, stopStatus := context.WithCancel(ctx)
	statusDone := make(chan struct{})
	status := sendStatus(s, dests, src, o.Timeout, o.Debug)
	if ss.showStatus {
		go func() { defer close(statusDone); ss.board.Run(statusCtx, status) }()
	} else {
		close(statusDone)
	}
	// Say it while it matters: a receiver that has not answered within
	// --timeout will likely never answer.
	var silent *time.Timer
	if o.Feedback && !b.Caps.Terminal {
		silent = time.AfterFunc(o.Wait+o.Timeout, func() { warnSilent(dests, s, o.Timeout, fingerprintOf(ss.id), errf) })
	}
	stats, err := s.Run(ctx, src)
	if silent != nil {
		silent.Stop()
	}
	stopStatus()
	<-statusDone
	if ss.showStatus {
		text, _ := status()
		ss.board.Finish(text)
	}
	return ss.result(false, Sent{Sender: s, Stats: stats}), err
}

// result is what the send's Senders left.
func (ss *sendSession) result(routed bool, sent ...Sent) *SendResult {
	return &SendResult{Routed: routed, Sent: sent, Fingerprint: fingerprintOf(ss.id), Logf: ss.logf, Errf: ss.errf, Logger: ss.board.Logger}
}

// oneWayCost is what a one-way sender gives up, for the errors that ask
// for --one-way.
const oneWayCost = "a one-way session has no handshake, so its only replay protection is the wall clock (PROTOCOL.md §8.6): a recording of it can be typed again, in full, into a receiver that runs recv --one-way with the key file and pairs this machine (restarted since, or another) within recv's --max-skew of when it was made; give --one-way if that is acceptable here (the receivers must run recv --one-way too)"

// checkOneWay refuses a broadcast or multicast destination without
// --one-way: it cannot handshake (one packet reaches many receivers),
// so it is one-way, and that must be asked for (PROTOCOL.md §8.6).
func checkOneWay(o *SendOptions, dests []net.Addr) error {
	if o.OneWay {
		return nil
	}
	for _, d := range dests {
		if ua, ok := d.(*net.UDPAddr); ok && transport.IsBroadcast(ua.IP) {
			kind := "a broadcast address"
			if ua.IP.IsMulticast() {
				kind = "a multicast group"
			}
			return config.Involving(fmt.Errorf("--to %v is %s, which is one-way and needs --one-way: %s", ua, kind, oneWayCost), "to", "one-way")
		}
	}
	return nil
}

// answersAny reports whether a destination can answer (unicast): one a
// --wait can wait for.
func answersAny(dests []net.Addr) bool {
	for _, d := range dests {
		if ua, ok := d.(*net.UDPAddr); ok && !transport.IsBroadcast(ua.IP) {
			return true
		}
	}
	return false
}

// WhyNoAnswer lists what makes a receiver stay silent, for port, fp
// being this machine's identity's fingerprint ("" with --insecure).
func WhyNoAnswer(port, fp string) string {
	paired := ""
	if fp != "" {
		paired = "this machine not paired there (its keyrelay peers must list identity " + fp + ": 'keyrelay pair'), another --key-file there (both ends need the same one, or none), "
	}
	return "nothing listening there (is keyrelay recv running, on port " + port + "?), " + paired + "--insecure on one end only, or a firewall dropping UDP " + port
}

// fingerprintOf is id's fingerprint, "" without one (--insecure).
func fingerprintOf(id *identity.Identity) string {
	if id == nil {
		return ""
	}
	return identity.Fingerprint(id.Public())
}

// warnSilent says which unicast destinations have not answered after
// timeout, and the likely causes.
func warnSilent(dests []net.Addr, s *sender.Sender, timeout time.Duration, fp string, logf func(string, ...any)) {
	heard := map[string]bool{}
	for _, p := range s.Peers() {
		heard[p.Addr] = true
	}
	unanswered := unansweredAddrs(s)
	for _, d := range dests {
		ua := d.(*net.UDPAddr)
		switch {
		case transport.IsBroadcast(ua.IP) || heard[ua.String()]:
		case slices.Contains(unanswered, ua.String()):
			logf("no handshake with %s after %v (%s): no key goes to it until it answers (keys typed meanwhile wait up to --outage); %s", ua, timeout, handshakeWhy(s, ua.String()), WhyNoAnswer(strconv.Itoa(ua.Port), fp))
		default:
			logf("no answer from %s after %v: %s", ua, timeout, WhyNoAnswer(strconv.Itoa(ua.Port), fp))
		}
	}
}

// joinAddrs lists addresses for a log line: "a, b".
func joinAddrs(as []net.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// loadPeersAt loads the peers file at path (a missing one is empty).
func loadPeersAt(path string) (*peers.List, error) {
	l, err := peers.Load(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "peers"}
	}
	return l, nil
}
