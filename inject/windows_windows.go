//go:build windows

package inject

import (
	"fmt"

	"github.com/keyrelay/keyrelay/internal/windows/win32"
	"github.com/keyrelay/keyrelay/keys"
)

// Windows presses keys on the Windows desktop it runs on (--inject
// windows) with SendInput, in pure Go: physical keys by scan code, so this
// machine's layout decides the character as with a keyboard plugged in,
// and characters with KEYEVENTF_UNICODE, whatever the layout
// (windowsInputs). SetLocks taps Caps Lock and Num Lock where they differ
// from the sender's. Windows keeps SendInput from the secure desktop (the
// sign-in screen, UAC prompts) and from programs running as administrator
// when recv does not, and never lets it type Ctrl+Alt+Del.
//
// Inject, SetLocks and Close are called from one goroutine at a time (the
// receiver's).
type Windows struct {
	logf    func(string, ...any)
	skipped skipped
}

// NewWindows makes the Windows injector.
func NewWindows(logf func(string, ...any)) (*Windows, error) {
	return &Windows{logf: logf}, nil
}

func mapVK(scan uint16) uint16 {
	return uint16(win32.MapVirtualKey(uint32(scan), win32.MAPVK_VSC_TO_VK_EX))
}

// Inject presses or releases one physical key or character.
func (w *Windows) Inject(ev Event) error {
	in, ok := windowsInputs(ev, mapVK)
	if !ok {
		return w.skipped.report(w.logf, "windows", ev.Key, "it has no Windows scan code")
	}
	return send(in)
}

func send(in []winInput) error {
	recs := make([]win32.Input, len(in))
	for i, k := range in {
		recs[i] = win32.Input{Type: win32.INPUT_KEYBOARD, Ki: win32.KEYBDINPUT{Vk: k.vk, Scan: k.scan, Flags: k.flags}}
	}
	if _, err := win32.SendInput(recs); err != nil {
		return fmt.Errorf("%w (Windows blocks it while the secure desktop, a UAC prompt or the sign-in screen is up, and into programs running as administrator unless recv does too)", err)
	}
	return nil
}

// SetLocks makes Caps Lock and Num Lock what l says, by tapping them.
func (w *Windows) SetLocks(l keys.Locks, _ uint64) error {
	for _, lk := range []struct {
		vk   int
		on   bool
		code keys.Code
	}{
		{win32.VK_CAPITAL, l&keys.LockCaps != 0, keys.CapsLock},
		{win32.VK_NUMLOCK, l&keys.LockNum != 0, keys.NumLock},
	} {
		if win32.KeyToggled(lk.vk) == lk.on {
			continue
		}
		for _, down := range []bool{true, false} {
			in, _ := windowsInputs(Event{Key: keys.Key(lk.code), Down: down}, mapVK)
			if err := send(in); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close does nothing: the receiver has released every key it pressed.
func (w *Windows) Close() error { return nil }

// CheckWindows says whether SendInput can type on this desktop (doctor):
// win32.Desktop.Check.
func CheckWindows() (string, error) {
	ok, err := win32.ReadDesktop().Check("type")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoWindows, err)
	}
	return ok, nil
}
