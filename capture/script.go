// Package capture holds keyrelay's key sources: where the key events a sender
// relays come from.
package capture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// DefaultPace is the pause after each key event of tap, hold and type: typed
// text arrives at a brisk human rate instead of in one burst.
const DefaultPace = 10 * time.Millisecond

// maxDuration bounds every duration in a script.
const maxDuration = time.Hour

// Step is one step of a script: a key event, or a pause when Wait > 0.
type Step struct {
	Line int // 1-based source line
	Code keys.Code
	Down bool
	Wait time.Duration
}

// Script is a parsed key script (README "Key scripts").
type Script struct {
	Name  string
	Steps []Step
	// HeldAtEnd lists keys the script presses and never releases; the
	// sender releases them when the script ends.
	HeldAtEnd []keys.Code
}

// parser turns lines into steps, tracking which keys are held so that a
// script that would release a key it never pressed is rejected up front.
type parser struct {
	name  string
	line  int
	pace  time.Duration
	held  map[keys.Code]bool
	order []keys.Code // press order, for HeldAtEnd
	steps []Step
}

// ParseScript reads a whole script. Every bad line is reported, as
// "NAME:LINE: reason", in one error; nothing is returned then.
func ParseScript(name string, r io.Reader) (*Script, error) {
	if name == "-" {
		name = "<stdin>"
	}
	p := &parser{name: name, pace: DefaultPace, held: map[keys.Code]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var errs []error
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, p.line, err))
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: unable to read script: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s := &Script{Name: name, Steps: p.steps}
	for _, c := range p.order {
		if p.held[c] {
			s.HeldAtEnd = append(s.HeldAtEnd, c)
			delete(p.held, c) // a key pressed twice is listed once
		}
	}
	return s, nil
}

// fields splits a line into words, keeping a double-quoted string (with Go
// escapes) as one word, and drops a trailing # comment.
func fields(line string) ([]string, error) {
	var out []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			return out, nil
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted string %s (use Go syntax: \"text\", with \\\" and \\n)", line)
			}
			out = append(out, q)
			line = line[len(q):]
			if line != "" && line[0] != ' ' && line[0] != '\t' {
				return nil, fmt.Errorf("text right after the quoted string: %s", line)
			}
			continue
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
}

func (p *parser) parseLine(line string) error {
	f, err := fields(line)
	if err != nil {
		return err
	}
	if len(f) == 0 {
		return nil
	}
	cmd, args := strings.ToLower(f[0]), f[1:]
	want := map[string]int{"down": 1, "up": 1, "tap": 1, "hold": 2, "sleep": 1, "type": 1, "pace": 1}
	n, ok := want[cmd]
	if !ok {
		return fmt.Errorf("unknown command %q (want down, up, tap, hold, sleep, type or pace)", f[0])
	}
	if len(args) != n {
		return fmt.Errorf("%s takes %d argument(s), got %d", cmd, n, len(args))
	}
	switch cmd {
	case "sleep", "pace":
		d, err := duration(args[0])
		if err != nil {
			return err
		}
		if cmd == "pace" {
			p.pace = d
		} else {
			p.wait(d)
		}
		return nil
	case "type":
		return p.typeText(args[0])
	}
	code, err := keys.Parse(args[0])
	if err != nil {
		return err
	}
	switch cmd {
	case "down":
		return p.press(code, true, 0)
	case "up":
		return p.press(code, false, 0)
	case "tap":
		if err := p.press(code, true, p.pace); err != nil {
			return err
		}
		return p.press(code, false, p.pace)
	default: // hold
		d, err := duration(args[1])
		if err != nil {
			return err
		}
		if err := p.press(code, true, 0); err != nil {
			return err
		}
		p.wait(d)
		return p.press(code, false, p.pace)
	}
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (use Go syntax such as 250ms, 1.5s, 2m)", s)
	}
	if d < 0 || d > maxDuration {
		return 0, fmt.Errorf("duration %v out of range 0..%v", d, maxDuration)
	}
	return d, nil
}

func (p *parser) wait(d time.Duration) {
	if d > 0 {
		p.steps = append(p.steps, Step{Line: p.line, Wait: d})
	}
}

// press adds a key event, then a pause of gap.
func (p *parser) press(code keys.Code, down bool, gap time.Duration) error {
	if down && p.held[code] {
		return fmt.Errorf("%v is already down", code)
	}
	if !down && !p.held[code] {
		return fmt.Errorf("%v is not down", code)
	}
	if down {
		p.held[code] = true
		p.order = append(p.order, code)
	} else {
		delete(p.held, code)
	}
	p.steps = append(p.steps, Step{Line: p.line, Code: code, Down: down})
	p.wait(gap)
	return nil
}

// typeText types a quoted string on the US layout, holding ShiftLeft for the
// characters that need it unless the script already holds a Shift key.
func (p *parser) typeText(quoted string) error {
	text, err := strconv.Unquote(quoted)
	if err != nil {
		return fmt.Errorf("bad quoted string %s", quoted)
	}
	for i, r := range []rune(text) {
		code, shift, ok := keys.ForRune(r)
		if !ok {
			return fmt.Errorf("type: %q (character %d) has no key on the US layout", r, i+1)
		}
		if p.held[code] {
			return fmt.Errorf("type: %q (character %d): %v is already down", r, i+1, code)
		}
		pressShift := shift && !p.held[keys.ShiftLeft] && !p.held[keys.ShiftRight]
		if !shift && (p.held[keys.ShiftLeft] || p.held[keys.ShiftRight]) {
			return fmt.Errorf("type: %q (character %d) needs Shift up, but the script holds it", r, i+1)
		}
		if pressShift {
			if err := p.press(keys.ShiftLeft, true, p.pace); err != nil {
				return err
			}
		}
		if err := p.press(code, true, p.pace); err != nil {
			return err
		}
		if err := p.press(code, false, p.pace); err != nil {
			return err
		}
		if pressShift {
			if err := p.press(keys.ShiftLeft, false, p.pace); err != nil {
				return err
			}
		}
	}
	return nil
}

// Play emits the script's key events in order, pausing with timers, so it
// runs in virtual time under testing/synctest and stops as soon as ctx is
// done (returning ctx.Err()). An error from emit stops it and is returned.
func (s *Script) Play(ctx context.Context, emit func(code keys.Code, down bool) error) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for _, st := range s.Steps {
		if st.Wait > 0 {
			if timer == nil {
				timer = time.NewTimer(st.Wait)
			} else {
				timer.Reset(st.Wait)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(st.Code, st.Down); err != nil {
			return err
		}
	}
	return nil
}
