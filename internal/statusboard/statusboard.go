// Package statusboard is what send and recv print while they run: log
// lines, plain ("keyrelay CMD: ...") or JSON, and a block of status lines
// redrawn in place on a terminal, or logged as structured lines at a
// modest rate elsewhere.
package statusboard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/keyrelay/keyrelay/internal/netio/wake"
)

// IsTerminal reports whether w is a terminal (not merely a character
// device: /dev/null is one too).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewLogf returns the log function of a command: plain "keyrelay CMD: ..."
// lines, or JSON objects with --log-format json.
func NewLogf(w io.Writer, cmd, format string) (func(string, ...any), *slog.Logger) {
	if format == "json" {
		l := slog.New(slog.NewJSONHandler(w, nil)).With("cmd", cmd)
		return func(f string, args ...any) { l.Info(fmt.Sprintf(f, args...)) }, l
	}
	// Structured lines (status) in the same style as the others: one
	// style per run.
	l := slog.New(&lineHandler{w: w, prefix: "keyrelay " + cmd + ": "})
	return func(f string, args ...any) { fmt.Fprintf(w, "keyrelay "+cmd+": "+f+"\n", args...) }, l
}

// lineHandler writes slog records as "keyrelay CMD: MSG key=value ...",
// the text log's own style: no time or level (the other lines have none;
// journald and terminals add their own), floats rounded for people.
type lineHandler struct {
	w      io.Writer
	prefix string
	attrs  []slog.Attr
	mu     sync.Mutex
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(formatValue(a.Value.Resolve()))
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineHandler{w: h.w, prefix: h.prefix, attrs: append(slices.Clip(h.attrs), as...)}
}

// WithGroup is not used by keyrelay; groups are flattened.
func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// formatValue renders a value for a line: floats to three decimals at
// most, strings quoted only when they hold a space, a quote or nothing.
func formatValue(v slog.Value) string {
	switch v.Kind() {
	case slog.KindFloat64:
		return strconv.FormatFloat(math.Round(v.Float64()*1000)/1000, 'f', -1, 64)
	case slog.KindString:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " \"=") {
			return strconv.Quote(s)
		}
		return s
	}
	return v.String()
}

// Board redraws a block of lines in place on a terminal, or logs
// them as structured lines at a modest rate elsewhere.
type Board struct {
	W      io.Writer
	Term   bool         // W is a terminal: redraw in place
	Logger *slog.Logger // elsewhere, the lines go here as records
	// Width is the terminal's width in columns, 0 when unknown; read at
	// each paint, so that a resized terminal is followed.
	Width func() int

	mu    sync.Mutex
	drawn int      // lines of the block on screen
	text  []string // the block
}

// Wrap returns logf made safe for the block: on a terminal each log line
// goes above the block, which is redrawn under it.
func (b *Board) Wrap(logf func(string, ...any)) func(string, ...any) {
	if !b.Term {
		return logf
	}
	return func(format string, args ...any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.clear()
		logf(format, args...)
		b.paint()
	}
}

// Run calls lines every period (terminal: 500 ms; log: 10 s) and shows the
// result, until ctx is done; then it leaves the last block on screen.
func (b *Board) Run(ctx context.Context, lines func() ([]string, [][]any)) {
	period := 10 * time.Second
	if b.Term {
		period = 500 * time.Millisecond
	}
	t := statusTimer()
	defer t.Close()
	t.Reset(period)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			t.Reset(period)
			text, attrs := lines()
			if b.Term {
				b.draw(text)
			} else {
				for _, a := range attrs {
					b.Logger.Info("status", a...)
				}
			}
		}
	}
}

// periodTimer is what Board.Run needs of a timer: a wake.Timer, or
// a time.Timer where there is none.
type periodTimer interface {
	C() <-chan time.Time
	Reset(time.Duration)
	Close() error
}

// statusTimer is the status board's timer: one that fires through the
// network poller where there is a timerfd (package wake), else a
// time.Timer. A runtime timer, even one 10 s away, makes each of an idle
// relay's wake-ups costlier: the runtime's poller then waits with a
// timeout, which arms and cancels a kernel timer around every wait, and
// its monitor thread sleeps only until it (DESIGN.md, the run loops).
func statusTimer() periodTimer {
	if t, err := wake.New(); err == nil {
		return t
	}
	return runtimeTimer{time.NewTimer(time.Hour)}
}

// runtimeTimer is a time.Timer as a periodTimer.
type runtimeTimer struct{ t *time.Timer }

func (r runtimeTimer) C() <-chan time.Time   { return r.t.C }
func (r runtimeTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r runtimeTimer) Close() error          { r.t.Stop(); return nil }

// Finish draws the block a last time, from the state at the end (keys
// released by then show as released), and leaves it on screen: later
// lines (the exit summary) go below it and nothing redraws it after
// them.
func (b *Board) Finish(text []string) {
	if !b.Term {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
	b.text = text
	b.paint()
	b.text, b.drawn = nil, 0
}

func (b *Board) draw(text []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clear()
	b.text = text
	b.paint()
}

// clear moves up over the block and erases it to the end of the screen.
func (b *Board) clear() {
	if b.drawn > 0 {
		fmt.Fprintf(b.W, "\x1b[%dA\r\x1b[J", b.drawn)
		b.drawn = 0
	}
}

func (b *Board) paint() {
	cols := 0
	if b.Width != nil {
		cols = b.Width()
	}
	var s strings.Builder
	for _, l := range b.text {
		fmt.Fprintf(&s, "%s\n", fit(l, cols))
	}
	io.WriteString(b.W, s.String())
	b.drawn = len(b.text)
}

// fit cuts line to fewer than cols columns (0: as it is), ending it with
// an ellipsis: a line the terminal wraps takes two rows, and clear, which
// moves up a row a line, would leave the block's top on the screen at each
// redraw (a destination's line in characters mode is over 110 columns).
// Each rune is taken as one column, as the status lines' are ("→", "µ").
func fit(line string, cols int) string {
	if cols < 2 || utf8.RuneCountInString(line) < cols {
		return line
	}
	return string([]rune(line)[:cols-2]) + "…"
}

// TermWidth returns a function reading the width of terminal w in
// columns, 0 when it is not a terminal or does not say.
func TermWidth(w io.Writer) func() int {
	f, ok := w.(*os.File)
	return func() int {
		if !ok {
			return 0
		}
		cols, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return cols
	}
}
