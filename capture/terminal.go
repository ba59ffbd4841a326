package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/eiannone/keyboard"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoTerminal is wrapped by the terminal source's error when there is no
// terminal to read keys from.
var ErrNoTerminal = errors.New("no terminal")

// Terminal reads keys typed in the controlling terminal (/dev/tty) with
// github.com/eiannone/keyboard. A terminal reports characters, not key
// presses and releases, so each key is relayed as a tap (key-down at once
// followed by key-up), with ShiftLeft around characters that need it on the
// US layout and ControlLeft around Ctrl chords. Ctrl+] ends the session (the
// telnet habit); every other key, Ctrl+C included, goes to the receiver.
type Terminal struct {
	// Label names where keys go, for the status line.
	Label string
	// Status receives the status line (standard error); nil: none.
	Status io.Writer

	sent int
}

// CheckTerminal reports whether a terminal can be opened, so send can fail
// before it opens sockets.
func CheckTerminal() error {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w to read keys from (%v): give --script FILE (or --script - for standard input), or --input hook to capture the keys of an X session", ErrNoTerminal, err)
	}
	return f.Close()
}

// Keypad transmit mode: with it the terminal sends cursor and keypad keys as
// terminfo describes them (ESC O A for ↑), which is what eiannone/keyboard
// matches; without it many terminals (tmux's among them) send ESC [ A, and
// an arrow would arrive as Escape, '[' and 'A'.
const (
	keypadOn  = "\x1b[?1h\x1b="
	keypadOff = "\x1b[?1l\x1b>"
)

// Play relays keys until Ctrl+] (nil), ctx is done (ctx.Err()) or emit fails.
func (t *Terminal) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	if err := CheckTerminal(); err != nil {
		return err
	}
	events, err := keyboard.GetKeys(64)
	if err != nil {
		return fmt.Errorf("%w: unable to read the terminal: %v", ErrNoTerminal, err)
	}
	defer keyboard.Close()
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		io.WriteString(tty, keypadOn)
		defer func() { io.WriteString(tty, keypadOff); tty.Close() }()
	}
	t.status("")
	defer t.endStatus()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Err != nil {
				return fmt.Errorf("unable to read the terminal: %w", ev.Err)
			}
			if ev.Key == keyboard.KeyCtrlRsqBracket {
				return nil
			}
			codes, note := TerminalKey(ev.Rune, ev.Key)
			if len(codes) == 0 {
				t.status(note)
				continue
			}
			if err := tap(emit, codes); err != nil {
				return err
			}
			t.sent++
			t.status("")
		}
	}
}

// tap presses codes in order and releases them in reverse: a chord.
func tap(emit func(keys.Key, bool) error, codes []keys.Key) error {
	for _, c := range codes {
		if err := emit(c, true); err != nil {
			return err
		}
	}
	for i := len(codes) - 1; i >= 0; i-- {
		if err := emit(codes[i], false); err != nil {
			return err
		}
	}
	return nil
}

// namedKeys maps eiannone/keyboard's keys to HID keys.
var namedKeys = map[keyboard.Key]keys.Code{
	keyboard.KeyF1: keys.F1, keyboard.KeyF2: keys.F2, keyboard.KeyF3: keys.F3, keyboard.KeyF4: keys.F4,
	keyboard.KeyF5: keys.F5, keyboard.KeyF6: keys.F6, keyboard.KeyF7: keys.F7, keyboard.KeyF8: keys.F8,
	keyboard.KeyF9: keys.F9, keyboard.KeyF10: keys.F10, keyboard.KeyF11: keys.F11, keyboard.KeyF12: keys.F12,
	keyboard.KeyInsert: keys.Insert, keyboard.KeyDelete: keys.Delete,
	keyboard.KeyHome: keys.Home, keyboard.KeyEnd: keys.End,
	keyboard.KeyPgup: keys.PageUp, keyboard.KeyPgdn: keys.PageDown,
	keyboard.KeyArrowUp: keys.ArrowUp, keyboard.KeyArrowDown: keys.ArrowDown,
	keyboard.KeyArrowLeft: keys.ArrowLeft, keyboard.KeyArrowRight: keys.ArrowRight,
	keyboard.KeyEnter: keys.Enter, keyboard.KeyTab: keys.Tab, keyboard.KeyEsc: keys.Escape,
	keyboard.KeySpace: keys.Space,
	// Terminals send DEL (0x7F) for Backspace, some BS (0x08, also Ctrl+H).
	keyboard.KeyBackspace2: keys.Backspace, keyboard.KeyBackspace: keys.Backspace,
}

// ctrlKeys are the control characters that are Ctrl chords rather than
// named keys: Ctrl+Space (NUL), Ctrl+\, Ctrl+^, Ctrl+_.
var ctrlKeys = map[keyboard.Key]keys.Code{
	keyboard.KeyCtrlSpace: keys.Space, keyboard.KeyCtrlBackslash: keys.Backslash,
	keyboard.KeyCtrl6: keys.Digit6, keyboard.KeyCtrlSlash: keys.Slash,
}

// TerminalKey turns one terminal key event into the keys to tap, modifiers
// first: a character as that character, named keys as physical keys.
func TerminalKey(r rune, k keyboard.Key) ([]keys.Key, string) {
	if k == 0 && r != 0 {
		if !keys.ValidChar(r) {
			return nil, fmt.Sprintf("%U is not a character: not sent", r)
		}
		return []keys.Key{keys.Char(r)}, ""
	}
	if c, ok := namedKeys[k]; ok {
		return []keys.Key{keys.Key(c)}, ""
	}
	if k >= keyboard.KeyCtrlA && k <= keyboard.KeyCtrlZ {
		return []keys.Key{keys.Key(keys.ControlLeft), keys.Char('a' + rune(k-keyboard.KeyCtrlA))}, ""
	}
	if c, ok := ctrlKeys[k]; ok {
		return []keys.Key{keys.Key(keys.ControlLeft), keys.Key(c)}, ""
	}
	return nil, fmt.Sprintf("key %#x has no mapping: not sent", uint16(k))
}

// status redraws the one-line status (raw mode: \r, clear to end of line).
func (t *Terminal) status(note string) {
	if t.Status == nil {
		return
	}
	line := fmt.Sprintf("keyrelay → %s | %d keys sent | Ctrl+] ends", t.Label, t.sent)
	if note != "" {
		line += " | " + note
	}
	fmt.Fprintf(t.Status, "\r%s\x1b[K", line)
}

func (t *Terminal) endStatus() {
	if t.Status != nil {
		fmt.Fprint(t.Status, "\r\n")
	}
}
