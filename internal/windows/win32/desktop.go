// Package win32 holds the few user32 calls keyrelay's Windows capture and
// injector make, over golang.org/x/sys/windows (no cgo): the low-level
// keyboard hook and its message loop, SendInput, MapVirtualKey and
// GetKeyState; and the desktop this process has (Desktop, whose Check is
// pure and builds everywhere). The functions are safe for concurrent use
// as Windows makes them; a hook belongs to the thread that installed it.
package win32

import (
	"errors"
	"fmt"
)

// ErrDesktop is wrapped by Desktop.Check's errors.
var ErrDesktop = errors.New("no Windows desktop to use")

// Desktop is what decides whether keys can be read and typed on this
// Windows desktop: the session the process runs in (0 is the services',
// which has no user's desktop), the desktop that gets the keyboard now
// ("Default" is the user's; "Winlogon" the sign-in screen, a lock screen or
// a UAC prompt, which no hook sees and SendInput cannot reach), and whether
// the process is elevated (into programs running as administrator only an
// elevated process can type).
type Desktop struct {
	Session  uint32
	Input    string // the input desktop's name; "" when it cannot be opened
	InputErr error  // why it cannot be opened
	Elevated bool
}

// Check says whether keys can be read or typed (what: "read keys",
// "type") on d, and, when they can, what still keeps them from some
// windows. Pure, for doctor's checks of the windows source and injector,
// and tested on every system.
func (d Desktop) Check(what string) (ok string, err error) {
	switch {
	case d.Session == 0:
		return "", fmt.Errorf("%w: keyrelay runs in session 0, the services' session, which has no user's desktop to %s: run it in the signed-in user's session (a logon task in Task Scheduler, or the Startup folder), not as a service", ErrDesktop, what)
	case d.InputErr != nil:
		return "", fmt.Errorf("%w: the desktop that has the keyboard cannot be opened (%v): the sign-in screen, a lock screen or a UAC prompt is up, and Windows lets no program %s there; unlock, or answer the prompt, and check again", ErrDesktop, d.InputErr, what)
	case d.Input != "Default":
		return "", fmt.Errorf("%w: the keyboard is on the %q desktop, not the user's (Default): the sign-in screen, a lock screen or a UAC prompt is up, and Windows lets no program %s there; unlock, or answer the prompt, and check again", ErrDesktop, d.Input, what)
	}
	ok = fmt.Sprintf("session %d, the keyboard on the user's desktop", d.Session)
	if d.Elevated {
		return ok + "; elevated, so programs running as administrator are reached too", nil
	}
	return ok + "; not elevated, so programs running as administrator are not reached (run keyrelay as administrator for them); Ctrl+Alt+Del, the sign-in screen and UAC prompts never are", nil
}
