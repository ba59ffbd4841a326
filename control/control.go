// Package control is the control socket of a running send, for keyrelay
// switch and keyrelay status from another shell or a script: the server
// a send opens (Listen, with a Handler: Plain or Group, send.go) and the
// client (Sends, Pick, Ask).
//
// Every running send listens on a unix socket that only its owner can
// open (a 0700 directory of the user's, the socket 0600). Each send has
// its own, named by its process id (send-PID.sock), so that several sends
// of one user run side by side; status lists them all, and switch talks
// to the one that has the destination named (or --pid). One JSON request
// per connection, one JSON answer.
package control

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

	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/secret"
)

// Request is what keyrelay switch and status ask.
type Request struct {
	Op string `json:"op"`           // "switch" or "status"
	To string `json:"to,omitempty"` // switch: a destination's name, or "local"
}

// Answer is what the running send answers.
type Answer struct {
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
	Dests     []DestStatus `json:"destinations"`
}

// The codes of an Answer's error.
const (
	CodeNoSuchDestination = "no_such_destination"
	CodeCannotSwitch      = "cannot_switch"
	CodeNotFollowed       = "not_followed"
)

// DestStatus is one destination in keyrelay status.
type DestStatus struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	State string `json:"state"` // live, silent 1.2s, no answer yet
	Live  bool   `json:"live"`
	// Keys is what it gets: "physical" keys, or "characters" (send
	// --keys characters, keys = "characters").
	Keys string `json:"keys"`
}

// Handler is a running send's side: Switch makes name (a destination's,
// or "local") the target, with an error that wraps
// routing.ErrNoSuchDestination, ErrCannotSwitch or
// routing.ErrModeNotFollowed when it cannot (the Answer's Code says which);
// Status is what keyrelay status shows. Called from the socket's
// goroutines: it must be safe for concurrent use.
type Handler interface {
	Switch(ctx context.Context, name string) error
	Status() Answer
}

// ErrCannotSwitch is wrapped by a send's answer to a switch it cannot
// make: its source has no keyboard to give back or take.
var ErrCannotSwitch = errors.New("this send cannot switch")

// Dir is the control sockets' directory: $XDG_RUNTIME_DIR/keyrelay/
// (a directory only the user can open), else a directory of the user's
// own in the system's temporary directory.
func Dir() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("keyrelay-%d", os.Getuid()))
	}
	return filepath.Join(dir, "keyrelay")
}

// controlSeq counts the control sockets this process opened: a test
// runs several sends in one process, and each needs its own.
var controlSeq atomic.Int32

// Path is a new control socket's path for this process:
// send-PID.sock, then send-PID.2.sock and on for more sends in it.
func Path() string {
	pid := os.Getpid()
	if n := controlSeq.Add(1); n > 1 {
		return filepath.Join(Dir(), fmt.Sprintf("send-%d.%d.sock", pid, n))
	}
	return filepath.Join(Dir(), fmt.Sprintf("send-%d.sock", pid))
}

// PID is the process id in a control socket's name, if it is one.
func PID(path string) (int, bool) {
	name := filepath.Base(path)
	if !strings.HasPrefix(name, "send-") || !strings.HasSuffix(name, ".sock") {
		return 0, false
	}
	id := strings.TrimSuffix(strings.TrimPrefix(name, "send-"), ".sock")
	id, _, _ = strings.Cut(id, ".")
	pid, err := strconv.Atoi(id)
	return pid, err == nil && pid > 0
}

// makeDir makes the socket's directory (secret.MkdirPrivate: mode
// 0700, or on Windows an ACL for the user alone), or checks the one there
// (checkDir): send's side.
func makeDir(dir string) error {
	if err := secret.MkdirPrivate(dir); err != nil {
		return fmt.Errorf("unable to make the control socket's directory: %w", err)
	}
	return checkDir(dir)
}

// checkDir checks the control sockets' directory before a socket
// in it is opened or talked to, by send and by every client (switch,
// status): a directory (not a link) of this user's that nobody else can
// open (checkPrivateDir, a function per OS). Without XDG_RUNTIME_DIR its
// name in the temporary directory is predictable: another user who makes
// it first could answer for this user's sends, or take their requests.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("unable to check the control socket's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: remove it, so that send can make its control socket's directory there", dir)
	}
	return checkPrivateDir(dir, fi)
}

// Listen opens the control socket at path for h until ctx is
// done, and removes the sockets left by sends that died (a SIGKILL leaves
// its socket behind). Another send answering at path is an error.
func Listen(ctx context.Context, path string, h Handler) error {
	if err := makeDir(filepath.Dir(path)); err != nil {
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
			go serve(c, h)
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
		if pid, ok := PID(p); ok && processGone(pid) {
			os.Remove(p)
		}
	}
}

// serve answers one request on c.
func serve(c net.Conn, h Handler) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var req Request
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	var ans Answer
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
			case errors.Is(err, routing.ErrNoSuchDestination):
				ans.Code = CodeNoSuchDestination
			case errors.Is(err, ErrCannotSwitch):
				ans.Code = CodeCannotSwitch
			case errors.Is(err, routing.ErrModeNotFollowed):
				ans.Code = CodeNotFollowed
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

// Ask sends req to the send answering on path and returns its
// answer.
func Ask(path string, req Request) (Answer, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return Answer{}, fmt.Errorf("nothing answers on %s: %w", path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return Answer{}, fmt.Errorf("unable to ask the running send on %s: %w", path, err)
	}
	var ans Answer
	if err := json.NewDecoder(c).Decode(&ans); err != nil {
		return Answer{}, fmt.Errorf("no answer from the running send on %s: %w", path, err)
	}
	return ans, nil
}

// Running is a send that answered keyrelay status: its socket and its
// answer.
type Running struct {
	Path   string
	Answer Answer
}

// Sends asks every send of this user that answers on its control
// socket for its status, in process id order; with pid > 0, that send
// only. None answering is an error that says how to start one.
func Sends(pid int) ([]Running, error) {
	dir := Dir()
	if err := checkDir(dir); err != nil {
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
		if n, ok := PID(p); ok {
			fs = append(fs, found{n, p})
		}
	}
	slices.SortFunc(fs, func(a, b found) int { return a.pid - b.pid })
	var out []Running
	var pids []string
	for _, f := range fs {
		ans, err := Ask(f.path, Request{Op: "status"})
		if err != nil {
			continue // a send that died, or is just starting
		}
		pids = append(pids, strconv.Itoa(f.pid))
		if pid > 0 && f.pid != pid {
			continue
		}
		out = append(out, Running{f.path, ans})
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

// Pick is the running send a keyrelay switch to name is for: the
// only one running, else the only one with a destination of that name
// (for "local", the only one that can switch). Several fit: --pid says
// which.
func Pick(sends []Running, name string) (Running, error) {
	if len(sends) == 1 {
		return sends[0], nil
	}
	var fit []Running
	var pids []string
	for _, s := range sends {
		ok := false
		if strings.EqualFold(name, "local") {
			ok = s.Answer.CanSwitch
		}
		for _, d := range s.Answer.Dests {
			ok = ok || strings.EqualFold(d.Name, name)
		}
		if ok {
			fit = append(fit, s)
			pids = append(pids, strconv.Itoa(s.Answer.PID))
		}
	}
	switch len(fit) {
	case 1:
		return fit[0], nil
	case 0:
		var all []string
		for _, s := range sends {
			all = append(all, strconv.Itoa(s.Answer.PID))
		}
		if strings.EqualFold(name, "local") {
			return Running{}, fmt.Errorf("none of the %d keyrelay sends running (pid %s) can switch: 'keyrelay status' says why for each", len(sends), strings.Join(all, ", "))
		}
		return Running{}, noFit(fmt.Sprintf("none of the %d keyrelay sends running (pid %s) has a destination %q: 'keyrelay status' lists their destinations", len(sends), strings.Join(all, ", "), name))
	}
	return Running{}, noFit(fmt.Sprintf("%d keyrelay sends running can switch to %q (pid %s): say which with --pid", len(fit), name, strings.Join(pids, ", ")))
}

// ErrNoFit is Pick's error when the name picks no send or several: the
// asker's mistake, which another name or --pid mends (keyrelay switch
// exits 2).
var ErrNoFit = errors.New("no single running send fits")

// noFit is an ErrNoFit with its own words.
type noFit string

func (e noFit) Error() string        { return string(e) }
func (e noFit) Is(target error) bool { return target == ErrNoFit }
