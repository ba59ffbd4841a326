package capture

import (
	"context"
	"errors"
	"io"

	"github.com/keyrelay/keyrelay/keys"
)

// ScriptStream plays a key script as it reads it: each line runs as soon as
// it arrives, for send --script - from a pipe or a FIFO, where a program
// writes keys as it goes and the end of the script is not known in
// advance. Its lines mean what they mean in a script file
// (SCRIPT_FORMAT.md), but nothing is checked ahead: the first bad line
// ends Play with its error, "NAME:LINE: reason", and adds no key event of
// its own (the lines before it have run; the sender releases what they
// hold).
//
// A ScriptStream plays once; it is not safe for concurrent use.
type ScriptStream struct {
	// Name names the script in errors; "-" is shown as "<stdin>".
	Name string
	// R is read line by line as Play needs it. A Read that blocks when
	// ctx is done goes on in the background until R returns; what it
	// returns then is dropped.
	R io.Reader
}

// scanned is one line of a ScriptStream, or why there is none.
type scanned struct {
	text string
	err  error // io.EOF at the end
}

// Play reads and plays the script until it ends, a line is bad, emit fails
// or ctx is done (then it returns ctx.Err() at once, even while a Read
// waits for input). Like Script.Play it releases nothing.
func (s *ScriptStream) Play(ctx context.Context, emit func(key keys.Key, down bool) error) error {
	name := displayName(s.Name)
	lines := make(chan scanned)
	done := make(chan struct{})
	defer close(done)
	p := newParser()
	go func() {
		sc := newLineScanner(s.R)
		send := func(l scanned) bool {
			select {
			case lines <- l:
				return true
			case <-done:
				return false
			}
		}
		for sc.Scan() {
			if !send(scanned{text: sc.Text()}) {
				return
			}
		}
		// The scanner's error is named after the last line read: the
		// parser counts lines only in Play's goroutine.
		err := io.EOF
		if sc.Err() != nil {
			err = sc.Err()
		}
		send(scanned{err: err})
	}()
	var pl player
	defer pl.stop()
	for {
		var l scanned
		select {
		case l = <-lines:
		case <-ctx.Done():
			return ctx.Err()
		}
		if errors.Is(l.err, io.EOF) {
			return nil
		}
		if l.err != nil {
			return p.readErr(name, l.err)
		}
		p.steps = p.steps[:0]
		if errs := p.feed(name, l.text); len(errs) > 0 {
			return errors.Join(errs...)
		}
		if err := pl.play(ctx, p.steps, emit); err != nil {
			return err
		}
	}
}
