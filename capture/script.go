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
	args  int // -1: one or more
	usage string
}

var commands = map[string]command{
	"down":  {1, "down KEY"},
	"up":    {1, "up KEY"},
	"tap":   {1, "tap KEY, or tap CHORD; key takes several"},
	"key":   {-1, "key CHORD..."},
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
	name = displayName(name)
	p := newParser()
	sc := newLineScanner(r)
	var errs []error
	for sc.Scan() {
		errs = append(errs, p.feed(name, sc.Text())...)
	}
	if err := p.readErr(name, sc.Err()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Script{Name: name, Steps: p.steps, HeldAtEnd: p.order}, nil
}

// displayName is how a script's name shows in errors: "-" is "<stdin>".
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

func newParser() *parser {
	return &parser{pace: DefaultPace, held: map[keys.Key]bool{}}
}

func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	return sc
}

// feed parses the next line of script name, adding its steps, or returns
// its errors, each as "NAME:LINE: reason".
func (p *parser) feed(name, line string) []error {
	p.lnum++
	p.line = line
	if p.lnum == 1 {
		p.line = strings.TrimPrefix(p.line, "\uFEFF") // an editor's byte order mark
	}
	var errs []error
	for _, err := range p.parseLine() {
		errs = append(errs, fmt.Errorf("%s:%d: %w", name, p.lnum, err))
	}
	return errs
}

// readErr names err, the reason reading the script stopped before its end
// (nil: it did not), after the lines parsed so far.
func (p *parser) readErr(name string, err error) error {
	switch {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: line longer than %d bytes", name, p.lnum+1, maxLine)
	case err != nil:
		return fmt.Errorf("%s: unable to read script: %w", name, err)
	}
	return nil
}

// field is a word of a line and its byte offset.
type field struct {
	text string
	off  int
}

// fields splits p.line into words, keeping a double-quoted string (Go
// syntax) as one word, and drops a # comment: a word starting with #. A
// word is parts joined by + (a chord: ctrl+"c"), each a quoted string or
// plain text.
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
		end := 0
		for {
			if end < len(rest) && rest[end] == '"' {
				q, err := strconv.QuotedPrefix(rest[end:])
				if err != nil {
					return nil, fmt.Errorf("bad quoted string at column %d: %s (use Go syntax: \"text\", with \\\" for a quote and \\n for Enter)", p.column(off+end), rest[end:])
				}
				end += len(q)
				if end < len(rest) && rest[end] != ' ' && rest[end] != '\t' && rest[end] != '+' {
					return nil, fmt.Errorf("bad quoted string at column %d: text right after its closing quote: %s", p.column(off), rest)
				}
			} else {
				for end < len(rest) && rest[end] != ' ' && rest[end] != '\t' && rest[end] != '+' {
					end++
				}
			}
			if end < len(rest) && rest[end] == '+' {
				end++
				continue
			}
			break
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
		return []error{fmt.Errorf("unknown command %q (want down, up, tap, key, hold, sleep, type or pace)", f[0].text)}
	}
	args := f[1:]
	if cmd.args < 0 && len(args) == 0 {
		return []error{fmt.Errorf("wrong number of arguments: %s takes one or more, got 0 (usage: %s)", name, cmd.usage)}
	}
	if cmd.args >= 0 && len(args) != cmd.args {
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
	case "key", "tap":
		return p.chords(name == "key", args)
	}
	code, err := p.key(args[0], false)
	if err != nil {
		return []error{err}
	}
	switch name {
	case "down":
		err = p.press(code, true, 0)
	case "up":
		err = p.press(code, false, 0)
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

// chords adds the steps of key and tap: each chord's keys pressed in order
// and released in reverse, with the pace after every event, as xdotool's key
// does; a chord of one key is a tap. In key's chords, and in a chord of
// several keys, one unquoted character is that character, as xdotool reads
// ctrl+t ("t": Ctrl+T on any layout); tap of one unquoted character is an
// error that gives the choices. The whole line is checked first, so that a
// bad line adds no step (a streamed script sends nothing of it).
func (p *parser) chords(bare bool, args []field) []error {
	var all [][]keys.Key
	var errs []error
	for _, f := range args {
		c, err := p.chord(f, bare)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range c {
			if p.held[k] {
				errs = append(errs, fmt.Errorf("%v is already down", k))
			}
		}
		all = append(all, c)
	}
	if len(errs) > 0 {
		return errs
	}
	for _, c := range all {
		for _, k := range c {
			p.event(k, true, p.pace)
		}
		for i := len(c) - 1; i >= 0; i-- {
			p.event(c[i], false, p.pace)
		}
	}
	return nil
}

// chord reads a CHORD: KEYs joined by + (ctrl+shift+t, ControlLeft+"c").
func (p *parser) chord(f field, bare bool) ([]keys.Key, error) {
	if f.text == "+" || !strings.Contains(f.text, "+") {
		k, err := p.key(f, bare)
		return []keys.Key{k}, err
	}
	var out []keys.Key
	text, off := f.text, f.off
	for {
		part := text
		if strings.HasPrefix(text, `"`) {
			part, _ = strconv.QuotedPrefix(text) // fields checked the syntax
		} else if i := strings.IndexByte(text, '+'); i >= 0 {
			part = text[:i]
		}
		if part == "" {
			return nil, fmt.Errorf("bad chord %s at column %d: a key is missing before or after a + (join keys with +: ctrl+shift+t)", f.text, p.column(f.off))
		}
		k, err := p.key(field{part, off}, true)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, k) {
			return nil, fmt.Errorf("bad chord %s at column %d: %v twice", f.text, p.column(f.off), k)
		}
		out = append(out, k)
		text, off = text[len(part):], off+len(part)
		if text == "" {
			return out, nil
		}
		text, off = text[1:], off+1 // the +
		if text == "" {
			return nil, fmt.Errorf("bad chord %s at column %d: a key is missing before or after a + (join keys with +: ctrl+shift+t)", f.text, p.column(f.off))
		}
	}
}

// key reads a KEY: a physical key (a W3C name, an alias or a usage,
// keys.Parse) or one character in double quotes ("é"); with bare, one
// character unquoted too. A KEY of down, up and hold is one key, not a
// chord.
func (p *parser) key(f field, bare bool) (keys.Key, error) {
	if f.text[0] != '"' {
		c, err := keys.Parse(f.text)
		if err == nil {
			return keys.Key(c), nil
		}
		if r, n := utf8.DecodeRuneInString(f.text); bare && n == len(f.text) && keys.ValidChar(r) {
			return keys.Char(r), nil
		}
		if strings.Contains(f.text, "+") && f.text != "+" {
			return 0, fmt.Errorf("%s takes one key, not a chord (%s): key CHORD or tap CHORD presses a chord", strings.ToLower(strings.Fields(p.line)[0]), f.text)
		}
		// One character unquoted: the key that types it, or the
		// character itself?
		if r, n := utf8.DecodeRuneInString(f.text); n == len(f.text) && keys.ValidChar(r) {
			key := ""
			if near := keys.Suggest(f.text); len(near) > 0 {
				key = near[0] + " (the key) or "
			}
			q := strconv.Quote(f.text)
			return 0, fmt.Errorf("%w %s: did you mean %sthe character %s (a character goes in double quotes: tap %s, type %s)?", keys.ErrUnknownKey, f.text, key, q, q, q)
		}
		return 0, err
	}
	s, err := strconv.Unquote(f.text)
	if err != nil { // a chord where one key goes (fields checked the syntax)
		return 0, fmt.Errorf("%s takes one key, not a chord (%s): key CHORD or tap CHORD presses a chord", strings.ToLower(strings.Fields(p.line)[0]), f.text)
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
	if lit, _ := strconv.QuotedPrefix(q.text); q.text[0] != '"' || lit != q.text {
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
	var pl player
	defer pl.stop()
	return pl.play(ctx, s.Steps, emit)
}

// player plays steps, one timer for all their pauses.
type player struct{ timer *time.Timer }

func (pl *player) play(ctx context.Context, steps []Step, emit func(key keys.Key, down bool) error) error {
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if st.Wait <= 0 {
			if err := emit(st.Key, st.Down); err != nil {
				return err
			}
			continue
		}
		if pl.timer == nil {
			pl.timer = time.NewTimer(st.Wait)
		} else {
			pl.timer.Reset(st.Wait) // Go 1.23+: no stale tick to drain
		}
		select {
		case <-pl.timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (pl *player) stop() {
	if pl.timer != nil {
		pl.timer.Stop()
	}
}
