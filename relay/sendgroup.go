package relay

import (
	"context"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
)

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
// (routing.Group): switching, a destination's own key map or local keys,
// or characters mode.
func (ss *sendSession) runGroup(ctx context.Context) (*SendResult, error) {
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
			return nil, err
		}
		r := &groupRun{name: o.dests[i].Name, chars: o.dests[i].Characters, dest: d, conn: conn}
		runs = append(runs, r)
		cfgs = append(cfgs, ss.config(conn, []dest.Resolved{d}))
	}
	// Switching starts at the first destination, until a hotkey or
	// keyrelay switch picks another; mirror's target is every one.
	router := routing.NewRouter(dest.Routes(o.dests), !o.switching(), 0)
	layoutNote := ""
	var km charmode.Keymap
	if o.characters() {
		var err error
		if km, err = o.keymap(b); err != nil {
			return nil, err
		}
		router.SetTranslator(charmode.New(km))
		if l, ok := km.(*xkblayout.Layout); ok {
			layoutNote = fmt.Sprintf("the layout %s (%s)", l.Name(), l.Description())
		} else {
			layoutNote = b.Keymap.What
		}
	}
	g, err := routing.NewGroup(cfgs, router)
	if err != nil {
		return nil, err
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
			ss.sopts.Status = ss.errw
		}
		if src, err = b.New(ss.sopts); err != nil {
			return nil, err
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
	stopStatus()
	<-statusDone
	if ss.showStatus {
		text, _ := status()
		ss.board.Finish(text)
	}
	var sent []Sent
	for i, r := range runs {
		sent = append(sent, Sent{Name: r.name, Addr: r.dest.Addr.String(), Sender: r.s, Stats: stats[i]})
	}
	return ss.result(true, sent...), err
}
