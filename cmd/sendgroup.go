package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
)

// routed reports whether send routes keys per destination (a Group): to
// one target at a time (switching), or through a destination's own key
// map or local keys. Otherwise every key goes to every destination in one
// queue, as send has always done.
func (o *SendOptions) routed() bool {
	if o.switching() {
		return true
	}
	for _, d := range o.dests {
		if len(d.Map) > 0 || len(d.Local) > 0 || d.Characters {
			return true
		}
	}
	return false
}

// switching reports whether keys go to one destination at a time:
// --switch, or any destination with a hotkey. Otherwise mirror mode:
// every key to every destination.
func (o *SendOptions) switching() bool {
	if o.Switch {
		return true
	}
	for _, d := range o.dests {
		if len(d.Hotkey) > 0 {
			return true
		}
	}
	return false
}

// groupRun is one destination of a routed send: its own socket and
// Sender (its own balanced queue and session).
type groupRun struct {
	name  string
	chars bool // gets characters (keys = "characters")
	dest  dest.Resolved
	conn  *transport.Conn
	s     *sender.Sender
}

// keys is what the destination gets, as status says it.
func (r *groupRun) keys() string {
	if r.chars {
		return "characters"
	}
	return "physical"
}

// runGroup routes the source's keys to a Sender per destination
// (sender.Group): switching, a destination's own key map or local keys,
// or characters mode.
func (ss *sendSession) runGroup(ctx context.Context) error {
	o, b, src, logf, errf := ss.o, ss.source, ss.src, ss.logf, ss.errf
	var runs []*groupRun
	var cfgs []sender.Config
	defer func() {
		for _, r := range runs {
			r.conn.Close()
		}
	}()
	for i, d := range ss.resolved {
		conn, err := transport.Open([]net.Addr{d.Addr})
		if err != nil {
			return err
		}
		r := &groupRun{name: o.dests[i].Name, chars: o.dests[i].Characters, dest: d, conn: conn}
		runs = append(runs, r)
		cfgs = append(cfgs, ss.config(conn, []dest.Resolved{d}))
	}
	// Switching starts at the first destination, until a hotkey or
	// keyrelay switch picks another; mirror's target is every one.
	router := sender.NewRouter(dest.Routes(o.dests), !o.switching(), 0)
	layoutNote := ""
	var km charmode.Keymap
	if o.characters() {
		var err error
		if km, err = o.keymap(b); err != nil {
			return err
		}
		router.SetTranslator(charmode.New(km))
		if l, ok := km.(*xkblayout.Layout); ok {
			layoutNote = fmt.Sprintf("the layout %s (%s)", l.Name(), l.Description())
		} else {
			layoutNote = b.Keymap.What
		}
	}
	g, err := sender.NewGroup(cfgs, router)
	if err != nil {
		return err
	}
	if t, ok := km.(*charmode.Table); ok {
		// The source's keymap: follow it, so that characters are the
		// ones the desktop types after a layout change too.
		followCtx, stopFollow := context.WithCancel(ctx)
		followed := make(chan struct{})
		defer func() { stopFollow(); <-followed }()
		go func() {
			defer close(followed)
			err := b.Keymap.Follow(followCtx, t, func(t *charmode.Table) {
				g.SetKeymap(t)
				if !o.Quiet {
					logf("the keymap of %s changed: characters follow it from the next key", b.Keymap.Where())
				}
			})
			if err != nil && followCtx.Err() == nil {
				errf("characters no longer follow changes of %s (a change now leaves them as they were): %v", b.Keymap.What, err)
			}
		}()
	}
	for i, s := range g.Senders() {
		runs[i].s = s
	}
	var all []net.Addr
	for _, r := range runs {
		all = append(all, r.dest.Addr)
	}
	if src == nil {
		ss.sopts.Label = joinAddrs(all)
		if !o.Quiet {
			ss.sopts.Status = ss.stdio.Err
		}
		if src, err = b.New(ss.sopts); err != nil {
			return err
		}
	}
	h := &control.Group{Group: g, Source: src, Input: o.Input, Mirror: !o.switching()}
	for _, r := range runs {
		h.Dests = append(h.Dests, control.GroupDest{Name: r.name, Addr: r.dest.Addr.String(), Characters: r.chars, Sender: r.s})
	}
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	defer stopCtrl()
	if err := control.Listen(ctrlCtx, control.Path(), h); err != nil {
		errf("no keyrelay switch or status for this send: %v", err)
	}
	if !o.Quiet {
		mode := "mirror: every key to every destination"
		if o.switching() {
			mode = "switching: keys go to " + g.Target() + " (its hotkey or 'keyrelay switch NAME|local' changes that)"
		}
		for i, r := range runs {
			keysNote := ""
			if r.chars {
				keysNote = "; characters through " + layoutNote
			}
			if o.switching() && len(o.dests[i].Hotkey) > 0 {
				keysNote += "; hotkey " + o.dests[i].Hotkey.String()
			}
			logf("session %016x: sending to %s (%s%s; queue %d, every %v)", r.s.Session(), r.name, r.dest.Addr, keysNote, o.Queue, o.Interval)
		}
		logf("%s", mode)
	}
	statusCtx, stopStatus := context.WithCancel(ctx)
	statusDone := make(chan struct{})
	var statuses []func() ([]string, [][]any)
	for _, r := range runs {
		statuses = append(statuses, sendStatus(r.s, []net.Addr{r.dest.Addr}, src, o.Timeout, o.Debug))
	}
	// Each line starts with its destination's name, padded to the longest
	// so that the columns of all destinations line up on a terminal.
	names := make([]string, len(runs))
	nameCols := 0
	for i, r := range runs {
		names[i] = r.name
		if r.chars {
			names[i] += " (characters)"
		}
		nameCols = max(nameCols, utf8.RuneCountInString(names[i]))
	}
	status := func() ([]string, [][]any) {
		text := []string{"target: " + g.Target()}
		attrs := [][]any{{"target", g.Target()}}
		for i, st := range statuses {
			t, a := st()
			name := names[i] + strings.Repeat(" ", nameCols-utf8.RuneCountInString(names[i]))
			for _, l := range t {
				text = append(text, name+" "+l)
			}
			for _, x := range a {
				attrs = append(attrs, append([]any{"destination", runs[i].name, "keys", runs[i].keys()}, x...))
			}
		}
		return text, attrs
	}
	if ss.showStatus {
		go func() { defer close(statusDone); ss.board.Run(statusCtx, status) }()
	} else {
		close(statusDone)
	}
	stats, err := g.Run(ctx, src)
	if na, ok := errors.AsType[*sender.NoAnswerError](err); ok {
		for _, r := range runs {
			if len(r.s.Unanswered()) > 0 || len(r.s.Peers()) == 0 {
				err = noAnswer(na, fingerprintOf(ss.id), r.s)
				break
			}
		}
	}
	silenced, _ := errors.AsType[*sender.SilentError](err)
	if silenced != nil {
		err = nil // said below, with what each destination missed
	}
	stopStatus()
	<-statusDone
	if ss.showStatus {
		text, _ := status()
		ss.board.Finish(text)
	}
	logger := ss.board.Logger
	var errs []error
	for i, r := range runs {
		logf("destination %s:", r.name)
		rep := r.s.Report()
		var derr error
		if err == nil {
			derr = checkDelivery(o, rep, fingerprintOf(ss.id), logf)
		}
		if !o.Quiet || derr != nil || err != nil || silenced != nil {
			summarize(o, logger, errf, logf, rep, stats[i], err == nil && derr == nil && silenced == nil)
		}
		if derr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, derr))
		}
	}
	if err != nil {
		return err
	}
	if silenced != nil {
		// Each destination's error names what it missed of what was
		// played; the rest of the script went to none.
		if len(errs) == 0 {
			return undeliveredError{fmt.Errorf("%v to any destination (exit status %d); %w", namedSilence(silenced, runs), ExitUndelivered, errNothingMissed)}
		}
		return undeliveredError{fmt.Errorf("%v to any destination; %w", namedSilence(silenced, runs), errors.Join(errs...))}
	}
	if len(errs) > 0 {
		return undeliveredError{errors.Join(errs...)}
	}
	return nil
}

// namedSilence is e with each receiver named as its destination is,
// "NAME (ADDR)", where the name is not the address itself.
func namedSilence(e *sender.SilentError, runs []*groupRun) *sender.SilentError {
	named := &sender.SilentError{Outage: e.Outage}
	for _, a := range e.Addrs {
		for _, r := range runs {
			if r.dest.Addr.String() == a && r.name != a {
				a = fmt.Sprintf("%s (%s)", r.name, a)
				break
			}
		}
		named.Addrs = append(named.Addrs, a)
	}
	return named
}
