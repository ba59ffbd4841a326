package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/sender"
)

// The control socket: every running send listens on a unix socket that
// only its owner can open (a 0700 directory of the user's, the socket
// 0600), for keyrelay switch and keyrelay status from another shell or a
// script. Each send has its own, named by its process id (send-PID.sock),
// so that several sends of one user run side by side; status lists them
// all, and switch talks to the one that has the destination named (or
// --pid). One JSON request per connection, one JSON answer.

// controlRequest is what keyrelay switch and status ask.
type controlRequest struct {
	Op string `json:"op"`           // "switch" or "status"
	To string `json:"to,omitempty"` // switch: a destination's name, or "local"
}

// controlAnswer is what the running send answers.
type controlAnswer struct {
	Error string `json:"error,omitempty"`
	// Code sorts Error for keyrelay switch's exit status: "no_such_destination"
	// (a usage error), "cannot_switch" or "not_followed".
	Code   string `json:"code,omitempty"`
	PID    int    `json:"pid"`
	Input  string `json:"input"`  // send's --input
	Target string `json:"target"` // a name, "local", or "all" (mirror)
	Mode   string `json:"mode"`   // "relaying" or "local" (a grabbing source in local use)
	Grab   bool   `json:"grab"`   // the source owns the keyboard while relaying (--grab)
	// CanSwitch: keyrelay switch works here; Switch says what it does,
	// or why it cannot.
	CanSwitch bool         `json:"can_switch"`
	Switch    string       `json:"switch"`
	Dests     []destStatus `json:"destinations"`
}

// The codes of a controlAnswer's error.
const (
	codeNoSuchDestination = "no_such_destination"
	codeCannotSwitch      = "cannot_switch"
	codeNotFollowed       = "not_followed"
)

// destStatus is one destination in keyrelay status.
type destStatus struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	State string `json:"state"` // live, silent 1.2s, no answer yet
	Live  bool   `json:"live"`
	// Keys is what it gets: "physical" keys, or "characters" (send
	// --keys characters, keys = "characters").
	Keys string `json:"keys"`
}

// controlHandler answers requests: send's side.
type controlHandler interface {
	Switch(ctx context.Context, name string) error
	Status() controlAnswer
}

// errCannotSwitch is wrapped by a send's answer to a switch it cannot
// make: its source has no keyboard to give back or take.
var errCannotSwitch = errors.New("this send cannot switch")

// controlDir is the control sockets' directory: $XDG_RUNTIME_DIR/keyrelay/
// (a directory only the user can open), else a directory of the user's
// own in the system's temporary directory.
func controlDir() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("keyrelay-%d", os.Getuid()))
	}
	return filepath.Join(dir, "keyrelay")
}

// controlSeq counts the control sockets this process opened: a test
// runs several sends in one process, and each needs its own.
var controlSeq atomic.Int32

// controlPath is a new control socket's path for this process:
// send-PID.sock, then send-PID.2.sock and on for more sends in it.
func controlPath() string {
	pid := os.Getpid()
	if n := controlSeq.Add(1); n > 1 {
		return filepath.Join(controlDir(), fmt.Sprintf("send-%d.%d.sock", pid, n))
	}
	return filepath.Join(controlDir(), fmt.Sprintf("send-%d.sock", pid))
}

// controlPID is the process id in a control socket's name, if it is one.
func controlPID(path string) (int, bool) {
	name := filepath.Base(path)
	if !strings.HasPrefix(name, "send-") || !strings.HasSuffix(name, ".sock") {
		return 0, false
	}
	id := strings.TrimSuffix(strings.TrimPrefix(name, "send-"), ".sock")
	id, _, _ = strings.Cut(id, ".")
	pid, err := strconv.Atoi(id)
	return pid, err == nil && pid > 0
}

// makeControlDir makes the socket's directory (secret.MkdirPrivate: mode
// 0700, or on Windows an ACL for the user alone), or checks the one there
// (checkControlDir): send's side.
func makeControlDir(dir string) error {
	if err := secret.MkdirPrivate(dir); err != nil {
		return fmt.Errorf("unable to make the control socket's directory: %w", err)
	}
	return checkControlDir(dir)
}

// checkControlDir checks the control sockets' directory before a socket
// in it is opened or talked to, by send and by every client (switch,
// status): a directory (not a link) of this user's that nobody else can
// open (checkPrivateDir, a function per OS). Without XDG_RUNTIME_DIR its
// name in the temporary directory is predictable: another user who makes
// it first could answer for this user's sends, or take their requests.
func checkControlDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("unable to check the control socket's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: remove it, so that send can make its control socket's directory there", dir)
	}
	return checkPrivateDir(dir, fi)
}

// listenControl opens the control socket at path for h until ctx is
// done, and removes the sockets left by sends that died (a SIGKILL leaves
// its socket behind). Another send answering at path is an error.
func listenControl(ctx context.Context, path string, h controlHandler) error {
	if err := makeControlDir(filepath.Dir(path)); err != nil {
		return err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another keyrelay send answers on %s: keyrelay switch and status talk to it, not to this one (stop it, or set XDG_RUNTIME_DIR to another directory for this one)", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unable to remove the old control socket: %w", err)
	}
	removeDeadSockets(filepath.Dir(path))
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("unable to open the control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("unable to make the control socket private: %w", err)
	}
	context.AfterFunc(ctx, func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveControl(c, h)
		}
	}()
	return nil
}

// removeDeadSockets removes the control sockets in dir of sends whose
// process is gone. Only a process that no longer exists loses its
// socket: a send just starting has its socket before it answers.
func removeDeadSockets(dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "send-*.sock"))
	for _, p := range paths {
		if pid, ok := controlPID(p); ok && processGone(pid) {
			os.Remove(p)
		}
	}
}

// serveControl answers one request on c.
func serveControl(c net.Conn, h controlHandler) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var req controlRequest
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	var ans controlAnswer
	switch {
	case err != nil:
		ans.Error = "unreadable request: " + err.Error()
	case req.Op == "switch":
		// The asker waits 5s for the answer: the switch gives up sooner.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := h.Switch(ctx, req.To)
		cancel()
		ans = h.Status()
		if err != nil {
			ans.Error = err.Error()
			switch {
			case errors.Is(err, sender.ErrNoSuchDestination):
				ans.Code = codeNoSuchDestination
			case errors.Is(err, errCannotSwitch):
				ans.Code = codeCannotSwitch
			case errors.Is(err, sender.ErrModeNotFollowed):
				ans.Code = codeNotFollowed
			}
		}
	case req.Op == "status":
		ans = h.Status()
	default:
		ans.Error = fmt.Sprintf("unknown request %q", req.Op)
	}
	ans.PID = os.Getpid()
	json.NewEncoder(c).Encode(ans)
}

// askControl sends req to the send answering on path and returns its
// answer.
func askControl(path string, req controlRequest) (controlAnswer, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return controlAnswer{}, fmt.Errorf("nothing answers on %s: %w", path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return controlAnswer{}, fmt.Errorf("unable to ask the running send on %s: %w", path, err)
	}
	var ans controlAnswer
	if err := json.NewDecoder(c).Decode(&ans); err != nil {
		return controlAnswer{}, fmt.Errorf("no answer from the running send on %s: %w", path, err)
	}
	return ans, nil
}

// runningSend is a send that answered keyrelay status.
type runningSendAt struct {
	path string
	ans  controlAnswer
}

// runningSends asks every send of this user that answers on its control
// socket for its status, in process id order; with pid > 0, that send
// only. None answering is an error that says how to start one.
func runningSends(pid int) ([]runningSendAt, error) {
	dir := controlDir()
	if err := checkControlDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no keyrelay send runs as this user (no control socket answers in %s): start one, then ask again", dir)
		}
		return nil, fmt.Errorf("not asking the control sockets in %s: %w", dir, err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "send-*.sock"))
	type found struct {
		pid  int
		path string
	}
	var fs []found
	for _, p := range paths {
		if n, ok := controlPID(p); ok {
			fs = append(fs, found{n, p})
		}
	}
	slices.SortFunc(fs, func(a, b found) int { return a.pid - b.pid })
	var out []runningSendAt
	var pids []string
	for _, f := range fs {
		ans, err := askControl(f.path, controlRequest{Op: "status"})
		if err != nil {
			continue // a send that died, or is just starting
		}
		pids = append(pids, strconv.Itoa(f.pid))
		if pid > 0 && f.pid != pid {
			continue
		}
		out = append(out, runningSendAt{f.path, ans})
	}
	switch {
	case len(out) > 0:
		return out, nil
	case pid > 0 && len(pids) > 0:
		return nil, fmt.Errorf("no keyrelay send with pid %d runs as this user: the ones running have pid %s (keyrelay status lists them)", pid, strings.Join(pids, ", "))
	case pid > 0:
		return nil, fmt.Errorf("no keyrelay send with pid %d runs as this user, nor any other (no control socket answers in %s)", pid, dir)
	}
	return nil, fmt.Errorf("no keyrelay send runs as this user (no control socket answers in %s): start one, then ask again", dir)
}

// pickSend is the running send a keyrelay switch to name is for: the
// only one running, else the only one with a destination of that name
// (for "local", the only one that can switch). Several fit: --pid says
// which.
func pickSend(sends []runningSendAt, name string) (runningSendAt, error) {
	if len(sends) == 1 {
		return sends[0], nil
	}
	var fit []runningSendAt
	var pids []string
	for _, s := range sends {
		ok := false
		if strings.EqualFold(name, "local") {
			ok = s.ans.CanSwitch
		}
		for _, d := range s.ans.Dests {
			ok = ok || strings.EqualFold(d.Name, name)
		}
		if ok {
			fit = append(fit, s)
			pids = append(pids, strconv.Itoa(s.ans.PID))
		}
	}
	switch len(fit) {
	case 1:
		return fit[0], nil
	case 0:
		var all []string
		for _, s := range sends {
			all = append(all, strconv.Itoa(s.ans.PID))
		}
		if strings.EqualFold(name, "local") {
			return runningSendAt{}, fmt.Errorf("none of the %d keyrelay sends running (pid %s) can switch: 'keyrelay status' says why for each", len(sends), strings.Join(all, ", "))
		}
		return runningSendAt{}, config.Usagef("none of the %d keyrelay sends running (pid %s) has a destination %q: 'keyrelay status' lists their destinations", len(sends), strings.Join(all, ", "), name)
	}
	return runningSendAt{}, config.Usagef("%d keyrelay sends running can switch to %q (pid %s): say which with --pid", len(fit), name, strings.Join(pids, ", "))
}

// NewCmdSwitch builds `keyrelay switch NAME|local`.
func NewCmdSwitch(stdio IO) *cobra.Command {
	var pid int
	c := &cobra.Command{
		Use:   "switch NAME|local",
		Short: "Send a running send's keys to one destination, or keep them here",
		Long: `Make the destination NAME of the running keyrelay send (one of its named
destinations: --to NAME=HOST[:PORT] or a [[send.to]] table) the only one that
gets keys, as its hotkey does; 'local' sends keys to none. What the old
target holds is released there first, and a key held across the switch
reaches the new target only when pressed again.

It talks to a send of the same user on this machine through its control
socket ($XDG_RUNTIME_DIR/keyrelay/send-PID.sock, which only that user can
open): the only one running, else the one with a destination NAME (or,
for 'local', the one that can switch), else the one --pid names.

With --input x11 or evdev and --grab the grab follows: 'local' gives the
keyboard back, as send's --hotkey does (which then resumes relaying to
the same target), and NAME takes it again; switch answers once the source
has switched. A send with one destination, or mirroring every key to
every destination, switches that way only: there 'local' gives the
keyboard back and NAME takes it again (with several destinations, for all
of them), and a send whose source owns no keyboard (a script, a terminal,
a source without --grab) cannot switch and says so (exit status 1).
Windows and macOS sources keep the keyboard after 'local' in a send with
--switch (their --hotkey gives it back).`,
		Example: switchExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				return nil
			}
			return switchArgsError(len(args), pid)
		},
		// Completion asks the running sends for their destinations' names.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names := []string{"local"}
			sends, _ := runningSends(pid)
			for _, s := range sends {
				for _, d := range s.ans.Dests {
					if !slices.Contains(names, d.Name) {
						names = append(names, d.Name)
					}
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			sends, err := runningSends(pid)
			if err != nil {
				return err
			}
			s, err := pickSend(sends, args[0])
			if err != nil {
				return err
			}
			ans, err := askControl(s.path, controlRequest{Op: "switch", To: args[0]})
			if err != nil {
				return err
			}
			switch {
			case ans.Error == "":
			case ans.Code == codeNoSuchDestination:
				var names []string
				for _, d := range ans.Dests {
					names = append(names, d.Name)
				}
				return config.Usagef("%s (the destinations: %s, or local)%s", ans.Error, strings.Join(names, ", "), spell.Suggest(args[0], append(names, "local")))
			default:
				return fmt.Errorf("keyrelay send (pid %d): %s", ans.PID, ans.Error)
			}
			fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
			return nil
		},
	}
	c.Flags().IntVar(&pid, "pid", 0, "the process id of the send to switch, when several run (keyrelay status lists them)")
	return c
}

// switchArgsError is keyrelay switch's usage error for n arguments (not
// one): what it takes, with the destinations of the sends running (pid:
// --pid's) when there are any.
func switchArgsError(n, pid int) error {
	var names []string
	sends, _ := runningSends(pid)
	for _, s := range sends {
		for _, d := range s.ans.Dests {
			if !slices.Contains(names, d.Name) {
				names = append(names, d.Name)
			}
		}
	}
	which := "'keyrelay status' lists the running send's destinations"
	if len(names) > 0 {
		which = "the running send's destinations: " + strings.Join(names, ", ")
	}
	if n == 0 {
		return config.Usagef("keyrelay switch needs a destination: 'keyrelay switch NAME' sends the keys to NAME only, 'keyrelay switch local' keeps them here (%s)", which)
	}
	return config.Usagef("keyrelay switch takes one destination, got %d arguments: 'keyrelay switch NAME' or 'keyrelay switch local' (%s)", n, which)
}

// NewCmdStatus builds `keyrelay status`.
func NewCmdStatus(stdio IO) *cobra.Command {
	var asJSON bool
	var pid int
	c := &cobra.Command{
		Use:   "status",
		Short: "Show each running send's target, mode and destinations",
		Long: `Show every keyrelay send running as this user on this machine (or the one
--pid names): its process id and key source, its target (a name, local,
or all in mirror mode), its mode (relaying, or local use with a grabbing
source), whether keyrelay switch can switch it, and each destination: its
address and whether it answers (live, silent for how long, no answer
yet). It asks each send through its control socket, as keyrelay switch
does.`,
		Example: statusExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			sends, err := runningSends(pid)
			if err != nil {
				return err
			}
			for i, s := range sends {
				ans := s.ans
				if asJSON {
					if err := json.NewEncoder(stdio.Out).Encode(ans); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					fmt.Fprintln(stdio.Out)
				}
				fmt.Fprintf(stdio.Out, "send %d (--input %s)\n", ans.PID, ans.Input)
				fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
				mode := ans.Mode
				switch {
				case ans.Grab && ans.Mode == "relaying":
					mode += " (the keyboard is grabbed)"
				case ans.Grab:
					mode += " (keys act here)"
				}
				fmt.Fprintf(stdio.Out, "mode: %s\n", mode)
				fmt.Fprintf(stdio.Out, "switch: %s\n", ans.Switch)
				for _, d := range ans.Dests {
					mark := " "
					if d.Name == ans.Target || ans.Target == "all" {
						mark = "*"
					}
					keysNote := ""
					if d.Keys == "characters" {
						keysNote = " (characters)"
					}
					fmt.Fprintf(stdio.Out, "%s %-12s %-24s %s%s\n", mark, d.Name, d.Addr, d.State, keysNote)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print each send's answer as one JSON object, one line each")
	c.Flags().IntVar(&pid, "pid", 0, "show only the send with this process id")
	return c
}
