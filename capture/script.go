package capture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/keys"
)

// DefaultPace is the pause after each key event of tap, hold and type until a
// pace command changes it: typed text arrives at a brisk human rate instead
// of in one burst.
const DefaultPace = 10 * time.Millisecond

// maxDuration bounds every duration in a script, so a typo (1000h) cannot
// park a sender for weeks.
const maxDuration = time.Hour

// maxLine bounds a script line (a long type string).
const maxLine = 1 << 20

// Step is one step of a script: a key event, or a pause when Wait > 0.
type Step struct {
	Line int           // 1-based source line
	Key  keys.Key      // the key or character, for key steps
	Down bool          // press (true) or release (false)
	Wait time.Duration // if > 0 this step is a pause, Key unused
}

// Script is a parsed key script. Play only reads it: several Plays may run
// at once.
type Script struct {
	// Name is the name given to ParseScript, "<stdin>" for "-".
	Name  string
	Steps []Step
	// HeldAtEnd lists, in press order, the keys the script presses and never
	// releases. That is not an error: the sender releases them at exit, and
	// may warn.
	HeldAtEnd []keys.Key
}

// command is the shape of one script command.
type command struct {
	args  int
	usage string
}

var commands = map[string]command{
	"down":  {1, "down KEY"},
	"up":    {1, "up KEY"},
	"tap":   {1, "tap KEY"},
	"hold":  {2, "hold KEY DURATION"},
	"sleep": {1, "sleep DURATION"},
	"type":  {1, `type "TEXT"`},
	"pace":  {1, "pace DURATION"},
}

// parser turns lines into steps. It tracks the held keys, so that a script
// that would press a held key or release one it never pressed is rejected
// before anything is sent.
type parser struct {
	line  string // the current line, for columns
	lnum  int
	pace  time.Duration
	held  map[keys.Key]bool
	order []keys.Key // the held keys in press order, for HeldAtEnd
	steps []Step
}

// ParseScript reads and checks a whole key script (SCRIPT_FORMAT.md), the
// input of `keyrelay send --script`, and expands it into Steps. Every bad line is reported,
// each as "NAME:LINE: reason", in one error (errors.Join); no Script is
// returned then. A bad line leaves the held keys as they were, so later
// lines are checked as if it were absent. An unknown key wraps
// keys.ErrUnknownKey. name "-" is shown as "<stdin>".
func ParseScript(name string, r io.Reader) (*Script, error) {
	if name == "-" {
		name = "<stdin>"
	}
	p := &parser{pace: DefaultPace, held: map[keys.Key]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var errs []error
	for sc.Scan() {
		p.lnum++
		p.line = sc.Text()
		if p.lnum == 1 {
			p.line = strings.TrimPrefix(p.line, "\uFEFF") // an editor's byte order mark
		}
		for _, err := range p.parseLine() {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, p.lnum, err))
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		errs = append(errs, fmt.Errorf("%s:%d: line longer than %d bytes", name, p.lnum+1, maxLine))
	case err != nil:
		errs = append(errs, fmt.Errorf("%s: unable to read script: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Script{Name: name, Steps: p.steps, HeldAtEnd: p.order}, nil
}

// field is a word of a line and its byte offset.
type field struct {
	text string
	off  int
}

// fields splits p.line into words, keeping a double-quoted string (Go
// syntax) as one word, and drops a # comment: a word starting with #.
func (p *parser) fields() ([]field, error) {
	var out []field
	off := 0
	for {
		for off < len(p.line) && (p.line[off] == ' ' || p.line[off] == '\t') {
			off++
		}
		rest := p.line[off:]
		if rest == "" || rest[0] == '#' {
			return out, nil
		}
		end := strings.IndexAny(rest, " \t")
		if rest[0] == '"' {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("bad quoted string at column %d: %s (use Go syntax: \"text\", with \\\" for a quote and \\n for Enter)", p.column(off), rest)
			}
			end = len(q)
			if end < len(rest) && rest[end] != ' ' && rest[end] != '\t' {
				return nil, fmt.Errorf("bad quoted string at column %d: text right after its closing quote: %s", p.column(off), rest)
			}
		}
		if end < 0 {
			end = len(rest)
		}
		out = append(out, field{rest[:end], off})
		off += end
	}
}

// column is the 1-based character column of byte offset off of the line.
func (p *parser) column(off int) int {
	return utf8.RuneCountInString(p.line[:off]) + 1
}

// parseLine adds the line's steps, or returns why the line is bad. A bad
// line changes no held key.
func (p *parser) parseLine() []error {
	f, err := p.fields()
	if err != nil {
		return []error{err}
	}
	if len(f) == 0 {
		return nil
	}
	name := strings.ToLower(f[0].text)
	cmd, ok := commands[name]
	if !ok {
		return []error{fmt.Errorf("unknown command %q (want down, up, tap, hold, sleep, type or pace)", f[0].text)}
	}
	args := f[1:]
	if len(args) != cmd.args {
		return []error{fmt.Errorf("wrong number of arguments: %s takes %d, got %d (usage: %s)", name, cmd.args, len(args), cmd.usage)}
	}
	switch name {
	case "sleep", "pace":
		d, err := duration(args[0].text)
		if err != nil {
			return []error{err}
		}
		if name == "pace" {
			p.pace = d
		} else {
			p.wait(d)
		}
		return nil
	case "type":
		return p.typeText(args[0])
	}
	code, err := p.key(args[0])
	if err != nil {
		return []error{err}
	}
	switch name {
	case "down":
		err = p.press(code, true, 0)
	case "up":
		err = p.press(code, false, 0)
	case "tap":
		if err = p.press(code, true, p.pace); err == nil {
			err = p.press(code, false, p.pace)
		}
	case "hold":
		// The hold replaces the pace after the press: the release comes
		// exactly DURATION after it.
		var d time.Duration
		if d, err = duration(args[1].text); err == nil {
			if err = p.press(code, true, d); err == nil {
				err = p.press(code, false, p.pace)
			}
		}
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// key reads the KEY of down, up, tap and hold: a physical key (a W3C name or
// a usage, keys.Parse) or one character in double quotes ("é").
func (p *parser) key(f field) (keys.Key, error) {
	if f.text[0] != '"' {
		c, err := keys.Parse(f.text)
		return keys.Key(c), err
	}
	s, err := strconv.Unquote(f.text)
	if err != nil { // fields checked the syntax
		return 0, fmt.Errorf("bad quoted string at column %d: %s", p.column(f.off), f.text)
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || n != len(s) || (r == utf8.RuneError && n == 1) {
		return 0, fmt.Errorf("bad character at column %d: %s is not one character (type \"text\" types text)", p.column(f.off), f.text)
	}
	if !keys.ValidChar(r) {
		return 0, fmt.Errorf("bad character at column %d: %U is a control character, not text; name its key instead (Enter, Tab, Backspace, Escape)", p.column(f.off), r)
	}
	return keys.Char(r), nil
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (use Go syntax such as 250ms, 1.5s, 2m)", s)
	}
	if d < 0 || d > maxDuration {
		return 0, fmt.Errorf("bad duration %q: out of range 0s to %v", s, maxDuration)
	}
	return d, nil
}

func (p *parser) wait(d time.Duration) {
	if d > 0 {
		p.steps = append(p.steps, Step{Line: p.lnum, Wait: d})
	}
}

// press adds a key event after checking it against the held keys.
func (p *parser) press(code keys.Key, down bool, gap time.Duration) error {
	if down && p.held[code] {
		return fmt.Errorf("%v is already down", code)
	}
	if !down && !p.held[code] {
		return fmt.Errorf("%v is not down", code)
	}
	p.event(code, down, gap)
	return nil
}

// event adds a key event, then a pause of gap, and tracks the held keys.
func (p *parser) event(code keys.Key, down bool, gap time.Duration) {
	if down {
		p.held[code] = true
		p.order = append(p.order, code)
	} else {
		delete(p.held, code)
		p.order = slices.DeleteFunc(p.order, func(c keys.Key) bool { return c == code })
	}
	p.steps = append(p.steps, Step{Line: p.lnum, Key: code, Down: down})
	p.wait(gap)
}

// typeText types a double-quoted string as characters: each one is a
// character key-down and key-up, which the receiver types as that character
// whatever its layout. Enter ('\n'), Tab ('\t') and Space are taps of those
// keys; any other control character is an error (name its key with tap).
func (p *parser) typeText(q field) []error {
	if q.text[0] != '"' {
		return []error{fmt.Errorf("bad quoted string at column %d: type wants \"text\" in double quotes, got %s", p.column(q.off), q.text)}
	}
	var errs []error
	s, off := q.text[1:len(q.text)-1], q.off+1
	for s != "" {
		r, multibyte, tail, err := strconv.UnquoteChar(s, '"')
		if err != nil { // fields checked the syntax
			return []error{fmt.Errorf("bad quoted string at column %d: %s", p.column(q.off), q.text)}
		}
		where := fmt.Sprintf("type: %q at column %d", r, p.column(off))
		invalid := !multibyte && r >= utf8.RuneSelf
		if invalid {
			where = fmt.Sprintf(`type: byte \x%02x at column %d`, r, p.column(off))
		}
		off += len(s) - len(tail)
		s = tail
		var key keys.Key
		switch {
		case r == '\n':
			key = keys.Key(keys.Enter)
		case r == '\t':
			key = keys.Key(keys.Tab)
		case r == ' ':
			// The space bar is the same key on every layout, and a receiver
			// that cannot type characters (uinput) still presses it; the
			// terminal source relays it the same way.
			key = keys.Key(keys.Space)
		case invalid:
			errs = append(errs, fmt.Errorf("%s is not a character (the text must be UTF-8)", where))
			continue
		case !keys.ValidChar(r):
			errs = append(errs, fmt.Errorf("%s is a control character, not text: use tap with its key (Enter, Tab, Backspace, Escape)", where))
			continue
		default:
			key = keys.Char(r)
		}
		if p.held[key] {
			errs = append(errs, fmt.Errorf("%s: %v is already down", where, key))
			continue
		}
		p.event(key, true, p.pace)
		p.event(key, false, p.pace)
	}
	return errs
}

// Play emits the script's key events in order and waits out its pauses with
// a timer, so it runs in virtual time under testing/synctest and stops as
// soon as ctx is done, returning ctx.Err(). An error from emit stops it and
// is returned. Play releases nothing: a caller that stops early or plays a
// script with HeldAtEnd releases what emit pressed.
func (s *Script) Play(ctx context.Context, emit func(key keys.Key, down bool) error) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for _, st := range s.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if st.Wait <= 0 {
			if err := emit(st.Key, st.Down); err != nil {
				return err
			}
			continue
		}
		if timer == nil {
			timer = time.NewTimer(st.Wait)
		} else {
			timer.Reset(st.Wait) // Go 1.23+: no stale tick to drain
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
