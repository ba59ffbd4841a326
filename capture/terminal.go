package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/muesli/cancelreader"
	"golang.org/x/term"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoTerminal is wrapped by the terminal source's error when there is no
// terminal to read keys from.
var ErrNoTerminal = errors.New("no terminal")

// Terminal reads the keys typed in the controlling terminal (/dev/tty, in
// raw mode) and decodes them with github.com/charmbracelet/ultraviolet's
// TerminalReader. It relays what the terminal can tell, in one of two modes:
//
//   - Taps, from any terminal. A terminal reports key presses, not releases,
//     so each key is a tap: key-down at once, then key-up. Modifiers the
//     terminal encodes are pressed around the key and released after it:
//     Ctrl as ControlLeft, Alt as AltLeft, Super/Meta as MetaLeft, and Shift
//     as ShiftLeft for keys that are not text (Shift+Tab, Shift+↑) — a
//     character already carries its case. Text (any UTF-8) goes as
//     characters, which the receiver types whatever its layout; a space as
//     the Space key. A Ctrl or Alt chord's key goes as its character
//     (Ctrl+C is ControlLeft and 'c'); named keys (arrows, Home, End, PageUp,
//     PageDown, Insert, Delete, F1–F24, Enter, Tab, Backspace, Escape) as
//     physical keys. Bracketed paste is typed as its text (Enter for line
//     breaks, Tab for tabs).
//   - Presses and releases, from a terminal that speaks the kitty keyboard
//     protocol (asked at start; flags 1+2+8+16 are pushed, and popped at
//     exit). A key goes down when the terminal reports its press and up
//     only when it reports the release, so holding a key here holds it at
//     the receiver; repeats are dropped, as the receiver's OS repeats a held
//     key itself. A key's text goes as characters; a key without text as
//     its physical key if it is named, else as the character of its
//     unshifted key (Ctrl+C: 'c'). Modifier keys are relayed as the
//     physical keys they are (ShiftLeft, ControlRight, ...). AltGr (ISO
//     level 3 and 5 shift) and the lock keys are not relayed: they only
//     change the characters other keys type, and those characters travel
//     as they are.
//
// Nothing is sent that was not typed: a sequence the decoder does not know,
// a terminal report, a mouse or focus event is dropped, counted and noted on
// the status line, and the keys after it still arrive. A lone Escape is
// Escape once the decoder's timeout shows nothing follows it.
//
// Ctrl+] ends the session (the telnet habit) and is not relayed; every other
// key, Ctrl+C included, goes to the receiver. At the end, whatever the
// source holds goes up, last pressed first, and the terminal is restored.
type Terminal struct {
	// Label names where keys go, for the status line.
	Label string
	// Status receives the status line (standard error); nil: none.
	Status io.Writer
	// Liveness, if set, says how the receivers answer ("live rtt 1.2ms",
	// "no answer yet"): the status line shows it and is redrawn every
	// second, so a receiver that never answers is seen while typing.
	Liveness func() string
	// TTY is the terminal to read; nil opens /dev/tty. Play puts it in raw
	// mode and restores it, but does not close it.
	TTY *os.File
}

// queryTimeout bounds the wait for the terminal's answers about the kitty
// protocol: a terminal that has not answered by then gets taps (its late
// answer is ignored).
const queryTimeout = 200 * time.Millisecond

// CheckTerminal reports whether a terminal can be opened, so send can fail
// before it opens sockets.
func CheckTerminal() error {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w to read keys from (%v): give --script FILE (or --script - for standard input), or --input hook to capture the keys of an X session", ErrNoTerminal, err)
	}
	return f.Close()
}

// Sequences written to the terminal.
const (
	// Bracketed paste on: a paste arrives marked as one, so it is typed as
	// text and, with the kitty protocol, not taken for keys held down.
	pasteOn  = "\x1b[?2004h"
	pasteOff = "\x1b[?2004l"
	// Ask for the kitty keyboard flags, then for the primary device
	// attributes, which every terminal answers: a kitty flags answer before
	// the DA answer means the protocol is there.
	queryKitty = "\x1b[?u\x1b[c"
	// Push the flags (1 disambiguate, 2 report event types, 8 report all
	// keys as escape codes, 16 report associated text) and ask which ones
	// the terminal applied: it may know only some.
	pushKitty = "\x1b[>27u\x1b[?u"
	popKitty  = "\x1b[<u"
)

// kittyNeeded are the kitty flags the presses-and-releases mode relies on:
// event types (releases), all keys as escape codes (modifier keys, and text
// keys whose release is reported) and associated text.
const kittyNeeded = 2 | 8 | 16

// Status line modes.
const (
	modeTaps  = "taps"
	modeKitty = "kitty keyboard: presses and releases"
)

// probe is how far the session is in learning about the kitty protocol.
type probe int

const (
	probing    probe = iota // asked; waiting for the DA answer
	confirming              // flags pushed; waiting for the terminal to report them
	settled
)

// Play relays keys until Ctrl+] (nil), ctx is done (ctx.Err()), the
// terminal ends, or emit fails.
func (t *Terminal) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	tty := t.TTY
	if tty == nil {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("%w to read keys from: %v", ErrNoTerminal, err)
		}
		defer f.Close()
		tty = f
	}
	fd := int(tty.Fd())
	// Read before raw mode, which keeps the control characters anyway.
	eraseBS := eraseIsBS(fd)
	saved, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("%w: unable to put %s in raw mode: %v", ErrNoTerminal, tty.Name(), err)
	}
	defer term.Restore(fd, saved)
	// The decoder reads on its own goroutine until it is stopped: cancel
	// its context, then drain its events until it closes the channel, so
	// it never blocks on a send.
	events := make(chan uv.Event, 64)
	streamCtx, stopStream := context.WithCancel(context.Background())
	// streamErr is set before events closes, so reading it after the close
	// is ordered after the write.
	var streamErr error
	go func() {
		streamErr = streamEvents(streamCtx, func() (cancelreader.CancelReader, error) {
			return cancelreader.NewReader(tty)
		}, os.Getenv("TERM"), events)
		close(events)
	}()
	defer func() {
		stopStream()
		for range events {
		}
	}()

	r := &relayer{emit: emit, eraseBS: eraseBS}
	mode := modeTaps
	pushed := false
	defer func() {
		// Restore what was changed, even when the terminal is gone.
		restore := pasteOff
		if pushed {
			restore = popKitty + restore
		}
		io.WriteString(tty, restore)
	}()
	if _, err := io.WriteString(tty, pasteOn+queryKitty); err != nil {
		return fmt.Errorf("unable to write to %s: %w", tty.Name(), err)
	}
	t.status(r, mode)
	defer t.endStatus(r)

	timer := time.NewTimer(queryTimeout)
	defer timer.Stop()
	// Liveness changes without a key: redraw for it.
	var redraw <-chan time.Time
	if t.Liveness != nil && t.Status != nil {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		redraw = tick.C
	}
	phase, sawFlags := probing, false
	// push asks for the kitty protocol. Keys the terminal sent before it
	// took the flags are still legacy: taps until it confirms.
	push := func() error {
		phase, pushed = confirming, true
		timer.Reset(queryTimeout)
		if _, err := io.WriteString(tty, pushKitty); err != nil {
			return fmt.Errorf("unable to write to %s: %w", tty.Name(), err)
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			// emit fails once ctx is done; the sender releases what it holds.
			r.releaseAll()
			return ctx.Err()
		case <-redraw:
			t.status(r, mode)
		case <-timer.C:
			switch phase {
			case probing:
				// No DA answer: a kitty flags answer alone is still one.
				phase = settled
				if sawFlags {
					if err := push(); err != nil {
						return err
					}
				}
			case confirming:
				// It took the flags but did not say so: trust the push.
				phase, r.kitty, mode = settled, true, modeKitty
				t.status(r, mode)
			}
		case ev, ok := <-events:
			if !ok {
				if err := r.releaseAll(); err != nil {
					return err
				}
				if streamErr != nil {
					return fmt.Errorf("unable to read the terminal: %w", streamErr)
				}
				return nil
			}
			switch ev := ev.(type) {
			case uv.KeyboardEnhancementsEvent:
				switch phase {
				case probing:
					sawFlags = true
				case confirming:
					phase = settled
					if ev.Flags&kittyNeeded == kittyNeeded {
						r.kitty, mode = true, modeKitty
					} else {
						// Without releases or text the protocol would hold
						// keys forever or guess characters: back to legacy.
						pushed = false
						r.note = fmt.Sprintf("the terminal took kitty keyboard flags %d of 27", ev.Flags)
						if _, err := io.WriteString(tty, popKitty); err != nil {
							return fmt.Errorf("unable to write to %s: %w", tty.Name(), err)
						}
					}
					t.status(r, mode)
				}
				// Else a late answer to our own question: nothing typed.
				continue
			case uv.PrimaryDeviceAttributesEvent:
				if phase == probing {
					phase = settled
					if sawFlags {
						if err := push(); err != nil {
							return err
						}
					}
				}
				continue
			}
			end, err := r.event(ev)
			if err != nil {
				return err
			}
			if end {
				return r.releaseAll()
			}
			t.status(r, mode)
		}
	}
}

// decoderFailure is the event for input the decoder panicked on: that input
// is lost and counted, decoding goes on.
type decoderFailure struct{ reason any }

// streamEvents decodes the terminal input that open gives with
// ultraviolet's TerminalReader, sending the events to events, until ctx is
// done or the input ends (nil) or fails. The caller closes events.
//
// ultraviolet can panic on malformed input (FuzzTerminalInput found an
// out-of-range slice in its X10 mouse parsing after an 8-bit CSI, as in
// testdata/fuzz/FuzzTerminalInput/39323adacecf883e). A panic there must not
// take the process down with the terminal left raw, nor end the session: the
// input being decoded is lost and reported as a decoderFailure, and a fresh
// reader from open goes on with what follows.
func streamEvents(ctx context.Context, open func() (cancelreader.CancelReader, error), termName string, events chan<- uv.Event) error {
	for {
		in, err := open()
		if err != nil {
			return err
		}
		reason, err := decodeOnce(ctx, &closeAfterRead{CancelReader: in}, termName, events)
		if reason == nil || ctx.Err() != nil {
			return err
		}
		events <- decoderFailure{reason}
	}
}

// decodeOnce runs one TerminalReader over in until ctx is done or in ends
// (err), or until it panics (reason).
func decodeOnce(ctx context.Context, in *closeAfterRead, termName string, events chan<- uv.Event) (reason any, err error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// A read blocks until input comes: ctx done must wake it.
	defer context.AfterFunc(ctx, func() { in.Cancel() })()
	defer func() {
		reason = recover()
		in.shut()
	}()
	return nil, uv.NewTerminalReader(in, termName).StreamEvents(ctx, events)
}

// closeAfterRead is a CancelReader that shut cancels and closes once no Read
// is in progress: after a decoder panic its reading goroutine may still be
// inside Read, and closing the reader's descriptors under it is unsafe.
type closeAfterRead struct {
	cancelreader.CancelReader
	mu               sync.Mutex
	reading, closing bool
}

func (c *closeAfterRead) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return 0, cancelreader.ErrCanceled
	}
	c.reading = true
	c.mu.Unlock()
	n, err := c.CancelReader.Read(p)
	c.mu.Lock()
	c.reading = false
	closeNow := c.closing
	c.mu.Unlock()
	if closeNow {
		c.CancelReader.Close()
	}
	return n, err
}

// shut cancels reading and closes the reader, now or when the Read in
// progress returns.
func (c *closeAfterRead) shut() {
	c.CancelReader.Cancel()
	c.mu.Lock()
	c.closing = true
	reading := c.reading
	c.mu.Unlock()
	if !reading {
		c.CancelReader.Close()
	}
}

// status redraws the one-line status (raw mode: \r, clear to end of line).
func (t *Terminal) status(r *relayer, mode string) {
	if t.Status == nil {
		return
	}
	line := fmt.Sprintf("keyrelay → %s | %d keys sent", t.Label, r.sent)
	if t.Liveness != nil {
		line += " | " + t.Liveness()
	}
	line += fmt.Sprintf(" | %s | Ctrl+] ends", mode)
	if r.dropped > 0 {
		line += fmt.Sprintf(" | %d not relayed", r.dropped)
	}
	if r.note != "" {
		line += " | " + r.note
	}
	fmt.Fprintf(t.Status, "\r%s\x1b[K", line)
}

// endStatus ends the status line and says what was not relayed.
func (t *Terminal) endStatus(r *relayer) {
	if t.Status == nil {
		return
	}
	fmt.Fprintf(t.Status, "\r\nterminal: %d keys sent; not relayed: %d", r.sent, r.dropped)
	if r.dropped > 0 {
		fmt.Fprintf(t.Status, " (last: %s)", r.note)
	}
	fmt.Fprint(t.Status, "\r\n")
}
