// Package cmd holds keyrelay's cobra commands: flags become option structs,
// options become the sender's and receiver's configs, and errors become
// messages and exit codes. Protocol logic lives in the packages it wires.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command could not do its job (bad script, port in use...)
	ExitUsage = 2 // bad flags or arguments
	// ExitUndelivered: send ran, but a receiver did not acknowledge the
	// final state (no receiver answered, or one fell silent): the keys may
	// not have been typed there.
	ExitUndelivered = 3
)

// DefaultPort is the UDP port recv listens on and send sends to when an
// address has no port.
const DefaultPort = config.DefaultPort

// IO is where commands read and write; tests replace it.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRootCmd builds the keyrelay command tree.
func NewRootCmd(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:     "keyrelay",
		Example: rootExample,
		Short:   "Relay a keyboard over UDP without stuck or lost keys",
		Long: `keyrelay relays a keyboard from one machine to others over UDP. Every
packet carries the sender's whole queue of recent key events, and a key-down
stays in it until its key is released, so a lost, late or duplicated packet
never loses a release and never leaves a key stuck down.

Between two machines: pair them once, 'keyrelay pair' on the machine that
types and 'keyrelay pair THAT-HOST' on the one with the keyboard (both show
a code: compare it, answer y on both); then run 'keyrelay recv' on the
first and 'keyrelay send --to THAT-HOST' on the second. 'keyrelay doctor'
says what a machine still lacks, and how to fix it. The default UDP port is
` + DefaultPort + `.

Each command's --help has its common flags; 'man keyrelay-COMMAND' has all.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	manual(root, root.Long+`

A key file (keyrelay keygen, copied to both machines) is an optional second
factor of the handshake, and what one-way use (send --one-way: broadcast,
multicast, --feedback=false) seals its packets with. Settings can live in a
config file (keyrelay config); the README has the whole picture, from a
first try on one machine to a Raspberry Pi typing into any computer.`)
	setHelp(root)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return config.UsageError{Err: fmt.Errorf("%w%s\nRun '%s --help' for usage.", err, config.FlagHint(c.Flags(), err), c.CommandPath())}
	})
	root.AddCommand(NewCmdSend(stdio, nil), NewCmdRecv(stdio, nil), NewCmdVersion(stdio), NewCmdImpair(stdio, nil), NewCmdKeys(stdio), NewCmdKeygen(stdio), NewCmdDoctor(stdio), NewCmdConfig(stdio), NewCmdID(stdio), NewCmdPeers(stdio), NewCmdPair(stdio), NewCmdGadget(stdio), NewCmdSwitch(stdio), NewCmdStatus(stdio), NewCmdAutostart(stdio))
	// A help topic (no Run): `keyrelay help script` prints it.
	script := &cobra.Command{
		Use:   "script",
		Short: "The key script format of send --script",
		Long:  scriptSummary(capture.ScriptFormat),
	}
	manual(script, strings.TrimSpace(capture.ScriptFormat))
	root.AddCommand(script)
	registerCompletions(root)
	completionHelp(root)
	return root
}

// Execute runs keyrelay with os.Args and returns the exit code. In a
// process started as an injector's guard it runs the guard instead, and
// exits (inject.ServeGuard).
//
// It runs Go code on one thread at a time (GOMAXPROCS 1) unless the
// GOMAXPROCS environment variable says otherwise: a relay's work is a few
// microseconds per datagram, and with idle Ps to spare the runtime wakes a
// second thread at every goroutine hand-off (the socket reader to the loop,
// a timer to the loop) only for it to find nothing to do and sleep again.
// An explicit setting also stops the runtime re-reading the CPU limits
// every second.
func Execute() int {
	inject.ServeGuard()
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	return Run(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run runs keyrelay with args and returns the exit code; the stopSignals
// cancel the command's context, which every command treats as a clean stop.
func Run(args []string, stdio IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	root := NewRootCmd(stdio)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stdio.Err, "keyrelay: %v\n", err)
	var ue config.UsageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	var de undeliveredError
	if errors.As(err, &de) {
		return ExitUndelivered
	}
	return ExitError
}

// cobraUsage matches the argument errors cobra makes itself (unknown
// command, wrong number of arguments), which do not go through the flag
// error func. Anchored, so that a message that merely quotes such words (a
// script error) is not taken for one.
var cobraUsage = regexp.MustCompile(`^(unknown command ".*" for "|accepts \d+ arg|accepts at most|accepts between|requires at least|unknown (shorthand )?flag)`)

func isCobraUsage(err error) bool { return cobraUsage.MatchString(err.Error()) }

// stopSignals are the signals that stop a command cleanly (send releases
// every key, sends the all-up state and lingers; recv releases what it
// holds) instead of killing it with keys held at the receiver until its
// --timeout: SIGINT (Ctrl+C), SIGTERM (a service manager), SIGHUP (the
// terminal or SSH session closing) and SIGQUIT (Ctrl+\ outside raw mode).
//
// Catching SIGQUIT gives up Go's goroutine dump on it: releasing the keys
// matters more, and SIGABRT still dumps. A SIGHUP ignored when keyrelay
// started (nohup) stays ignored: catching it would undo nohup, as
// signal.Notify re-enables an inherited SIG_IGN for SIGHUP.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}
