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
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The control socket: a running send with named destinations listens on a
// unix socket that only its owner can open (a 0700 directory of the
// user's, the socket 0600), for keyrelay switch and keyrelay status from
// another shell or a script. One JSON request per connection, one JSON
// answer.

// controlRequest is what keyrelay switch and status ask.
type controlRequest struct {
	Op string `json:"op"`           // "switch" or "status"
	To string `json:"to,omitempty"` // switch: a destination's name, or "local"
}

// controlAnswer is what the running send answers.
type controlAnswer struct {
	Error  string       `json:"error,omitempty"`
	Target string       `json:"target"` // a name, "local", or "all" (mirror)
	Dests  []destStatus `json:"destinations"`
}

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

// controlPath is the control socket's path: $XDG_RUNTIME_DIR/keyrelay/
// (a directory only the user can open), else a directory of the user's
// own in the system's temporary directory.
func controlPath() string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("keyrelay-%d", os.Getuid()), "send.sock")
	}
	return filepath.Join(dir, "keyrelay", "send.sock")
}

// checkControlDir makes the socket's directory, or checks the one there:
// a directory (not a link) of this user's that nobody else can open.
func checkControlDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("unable to make the control socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("unable to check the control socket's directory: %w", err)
	}
	uid, ok := ownerOf(fi)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: remove it, so that send can make its control socket's directory there", dir)
	case ok && uid != os.Getuid():
		return fmt.Errorf("%s belongs to another user (uid %d): the control socket must be in a directory of yours; set XDG_RUNTIME_DIR to one", dir, uid)
	case fi.Mode().Perm() != 0o700:
		return fmt.Errorf("%s has mode %04o: others could reach the control socket; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// listenControl opens the control socket at path for h until ctx is
// done. Another send answering there is an error (one control socket per
// user); a socket left by one that ended is replaced.
func listenControl(ctx context.Context, path string, h controlHandler) error {
	if err := checkControlDir(filepath.Dir(path)); err != nil {
		return err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another keyrelay send answers on %s: keyrelay switch and status talk to it, not to this one (stop it, or set XDG_RUNTIME_DIR to another directory for this one)", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unable to remove the old control socket: %w", err)
	}
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
		if err != nil {
			ans = h.Status()
			ans.Error = err.Error()
			break
		}
		ans = h.Status()
	case req.Op == "status":
		ans = h.Status()
	default:
		ans.Error = fmt.Sprintf("unknown request %q", req.Op)
	}
	json.NewEncoder(c).Encode(ans)
}

// askControl sends req to the running send and returns its answer.
func askControl(req controlRequest) (controlAnswer, error) {
	path := controlPath()
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return controlAnswer{}, fmt.Errorf("no keyrelay send with named destinations is running as this user (nothing answers on %s: start one, with --switch or destinations with a hotkey): %w", path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return controlAnswer{}, fmt.Errorf("unable to ask the running send: %w", err)
	}
	var ans controlAnswer
	if err := json.NewDecoder(c).Decode(&ans); err != nil {
		return controlAnswer{}, fmt.Errorf("no answer from the running send on %s: %w", path, err)
	}
	return ans, nil
}

// NewCmdSwitch builds `keyrelay switch NAME|local`.
func NewCmdSwitch(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "switch NAME|local",
		Short: "Send the keys of the running send to one destination, or keep them here",
		Long: `Make the destination NAME of the running keyrelay send (one of its named
destinations: --to NAME=HOST[:PORT] or a [[send.to]] table) the only one that
gets keys, as its hotkey does; 'local' sends keys to none. What the old
target holds is released there first, and a key held across the switch
reaches the new target only when pressed again.

It talks to the send of the same user on this machine through its control
socket ($XDG_RUNTIME_DIR/keyrelay/send.sock, which only that user can
open). With --input x11 --grab the grab follows: 'local' gives the
keyboard back, as send's --hotkey does (which then resumes relaying to
the same target), and NAME takes it again; other sources that grab keep
the keyboard after 'local' (their --hotkey gives it back).`,
		Example: `  # With a send running: keyrelay send --switch --to a=HOST,b=HOST2 ...
  #   keyrelay switch b       # keys go to b only
  #   keyrelay switch local   # keys go nowhere`,
		Args: cobra.ExactArgs(1),
		// Completion asks the running send for its destinations' names.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names := []string{"local"}
			if ans, err := askControl(controlRequest{Op: "status"}); err == nil {
				for _, d := range ans.Dests {
					names = append(names, d.Name)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			ans, err := askControl(controlRequest{Op: "switch", To: args[0]})
			if err != nil {
				return err
			}
			if ans.Error != "" {
				var names []string
				for _, d := range ans.Dests {
					names = append(names, d.Name)
				}
				return usagef("%s (the destinations: %s, or local)%s", ans.Error, strings.Join(names, ", "), suggest(args[0], append(names, "local")))
			}
			fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
			return nil
		},
	}
}

// NewCmdStatus builds `keyrelay status`.
func NewCmdStatus(stdio IO) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the running send's target and its destinations",
		Long: `Show the target of the running keyrelay send with named destinations (a
name, local, or all in mirror mode) and each destination: its address and
whether it answers (live, silent for how long, no answer yet). It asks that
send through its control socket, as keyrelay switch does.`,
		Example: `  # With a send running: keyrelay send --switch --to a=HOST,b=HOST2 ...
  #   keyrelay status
  #   keyrelay status --json | jq -r .target`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ans, err := askControl(controlRequest{Op: "status"})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(stdio.Out).Encode(ans)
			}
			fmt.Fprintf(stdio.Out, "target: %s\n", ans.Target)
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
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the answer as one JSON object")
	return c
}
