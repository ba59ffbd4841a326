package darwin

import (
	"errors"
	"fmt"
	"strings"
)

// ErrAccess is wrapped by Access.Check's error: macOS has not allowed what
// keyrelay needs.
var ErrAccess = errors.New("macOS has not allowed keyrelay")

// The System Settings panes (macOS 13 and later; System Preferences >
// Security & Privacy > Privacy before) that allow reading and posting keys.
const (
	PaneAccessibility   = "System Settings > Privacy & Security > Accessibility"
	PaneInputMonitoring = "System Settings > Privacy & Security > Input Monitoring"
)

// Access is what macOS allows this process, as it answers when asked.
type Access struct {
	// Accessibility: AXIsProcessTrusted. Needed to post events and for
	// an event tap that can drop them.
	Accessibility bool
	// Listen: CGPreflightListenEventAccess (Input Monitoring). Needed for
	// an event tap that only listens.
	Listen bool
	// Post: CGPreflightPostEventAccess (Accessibility, as macOS counts it
	// for posting).
	Post bool
}

// Need is what a backend asks of macOS.
type Need int

const (
	// NeedListen is send --input macos: a tap that reads keys.
	NeedListen Need = iota
	// NeedGrab is send --input macos --grab: a tap that also drops them.
	NeedGrab
	// NeedPost is recv --inject macos: posting key events.
	NeedPost
)

// Check says which permission is missing for need, naming the System
// Settings pane and the program to allow there (program: keyrelay's path;
// macOS asks for the app it runs in, a terminal, when that is what started
// it), or nil when everything is allowed.
func (a Access) Check(need Need, program string) error {
	var panes []string
	switch need {
	case NeedListen:
		if !a.Listen {
			panes = append(panes, PaneInputMonitoring)
		}
	case NeedGrab:
		if !a.Listen {
			panes = append(panes, PaneInputMonitoring)
		}
		if !a.Accessibility {
			panes = append(panes, PaneAccessibility)
		}
	case NeedPost:
		if !a.Post || !a.Accessibility {
			panes = append(panes, PaneAccessibility)
		}
	}
	if len(panes) == 0 {
		return nil
	}
	what := map[Need]string{
		NeedListen: "to read the keyboard (an event tap)",
		NeedGrab:   "to read the keyboard and keep keys from this Mac while relaying (an event tap that drops them)",
		NeedPost:   "to press keys (posting key events)",
	}[need]
	return fmt.Errorf("%w %s: turn on the app you start keyrelay from (Terminal, iTerm, or %s itself) in %s, then start keyrelay again (macOS reads the setting when a program starts)", ErrAccess, what, program, strings.Join(panes, " and in "))
}

// SecureInput follows macOS's Secure Event Input (IsSecureEventInputEnabled):
// while an app has it on (a password field, a terminal's Secure Keyboard
// Entry), event taps see no keys, so send reads nothing. Update says when
// that starts and ends, so that keys stopping is never silent.
//
// SecureInput is pure and not safe for concurrent use; its zero value
// (off) is ready.
type SecureInput struct {
	on bool
}

// Update takes the state now and the app that holds it ("" if unknown, as
// macOS does not always say) and returns what to tell the user, "" when
// nothing changed.
func (s *SecureInput) Update(on bool, app string) string {
	if on == s.on {
		return ""
	}
	s.on = on
	if !on {
		return "secure input is off again: keys are relayed"
	}
	if app == "" {
		app = "an app"
	}
	return fmt.Sprintf("keys are not reaching keyrelay (nor any other app that reads the keyboard) while %s has secure input on (a password field, or a terminal's Secure Keyboard Entry): leave that field or turn the option off and keys are relayed again", app)
}

// SecureInputApp names the app that holds secure input from its process id
// and name as macOS gives them (kCGSSessionSecureInputPID, proc_name);
// "" when neither is known.
func SecureInputApp(pid int, name string) string {
	switch {
	case pid <= 0:
		return ""
	case name == "":
		return fmt.Sprintf("process %d", pid)
	}
	return fmt.Sprintf("%s (process %d)", name, pid)
}

// Doctor is doctor's check for need: the error Check gives, or the line
// to show when macOS allows it, which also says what else matters there:
// for a tap that only listens, whether --grab would be allowed too; for
// reading keys, secure input (on, held by app, "" when unknown), since
// the tap gets nothing while it is on.
func (a Access) Doctor(need Need, program string, secure bool, app string) (string, error) {
	if err := a.Check(need, program); err != nil {
		return "", err
	}
	var ok string
	switch need {
	case NeedListen:
		ok = "Input Monitoring is on: the event tap can read the keyboard"
		if a.Check(NeedGrab, program) != nil {
			ok += "; Accessibility is off, so --grab would be refused (" + PaneAccessibility + ")"
		} else {
			ok += "; Accessibility too, for --grab"
		}
	case NeedGrab:
		ok = "Input Monitoring and Accessibility are on: the event tap can read the keyboard and keep keys from this Mac"
	case NeedPost:
		return "Accessibility is on: key events can be posted", nil
	}
	if secure {
		if app == "" {
			app = "an app"
		}
		ok += "; secure input is on now, held by " + app + ": the tap gets no keys until it ends (a password field, a terminal's secure keyboard entry)"
	}
	return ok, nil
}
