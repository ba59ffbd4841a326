package capture

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// streamRecorder plays a ScriptStream in the background and records what
// it emits, as render shows steps ("+KeyA -KeyA").
type streamRecorder struct {
	events []string
	done   chan error
}

func playStream(ctx context.Context, name string, r io.Reader) *streamRecorder {
	rec := &streamRecorder{done: make(chan error, 1)}
	s := &ScriptStream{Name: name, R: r}
	go func() {
		rec.done <- s.Play(ctx, func(k keys.Key, down bool) error {
			sign := "-"
			if down {
				sign = "+"
			}
			rec.events = append(rec.events, sign+k.String())
			return nil
		})
	}()
	return rec
}

// TestScriptStreamRunsLinesAsTheyArrive: each line is played as soon as
// it is written, before the next one exists (send --script - from a pipe),
// and the end of input ends Play without error.
func TestScriptStreamRunsLinesAsTheyArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		rec := playStream(t.Context(), "-", pr)
		for _, step := range []struct{ write, events string }{
			{"down Shift_L\n", "+ShiftLeft"},
			{"pace 0s\nkey ctrl+KeyT\n", "+ShiftLeft +ControlLeft +KeyT -KeyT -ControlLeft"},
		} {
			io.WriteString(pw, step.write)
			synctest.Wait()
			if got := strings.Join(rec.events, " "); got != step.events {
				t.Fatalf("after %q: events %q, want %q", step.write, got, step.events)
			}
			select {
			case err := <-rec.done:
				t.Fatalf("Play ended early: %v", err)
			default:
			}
		}
		// A bad line: Play ends with its error, naming the line, and sends
		// nothing of it; the held ShiftLeft is the caller's to release.
		io.WriteString(pw, "tap shift+KeyX\n")
		synctest.Wait()
		select {
		case err := <-rec.done:
			if err == nil || err.Error() != "<stdin>:4: ShiftLeft is already down" {
				t.Errorf("Play = %v, want <stdin>:4: ShiftLeft is already down", err)
			}
		default:
			t.Fatal("Play did not end at the bad line")
		}
		if got := strings.Join(rec.events, " "); got != "+ShiftLeft +ControlLeft +KeyT -KeyT -ControlLeft" {
			t.Errorf("events %q: the bad line sent something", got)
		}
	})
}

// TestScriptStreamPlays: what a stream plays, line by line, is what the
// same script parsed whole plays, pauses included; a bad later line ends
// it with that line's error, after the lines before it ran.
func TestScriptStreamPlays(t *testing.T) {
	tests := []struct{ name, script, events, err string }{
		{"a whole script", "tap Return\nsleep 1s\nkey ctrl+KeyA\ntype \"hé\"\n", "+Enter -Enter +ControlLeft +KeyA -KeyA -ControlLeft +'h' -'h' +'é' -'é'", ""},
		{"no newline at the end", "down KeyA", "+KeyA", ""},
		{"empty", "", "", ""},
		{"a bad later line", "down ShiftLeft\n\ntap Retrun\ntap KeyB\n", "+ShiftLeft", "s.keys:3: unknown key \"Retrun\" (did you mean Return?"},
		{"a bad line sends nothing of it", "key ctrl+KeyA ctrl+Nope\n", "", "s.keys:1: unknown key \"Nope\""},
		{"a line too long", "tap KeyA\ntype \"" + strings.Repeat("a", maxLine) + "\"\n", "+KeyA -KeyA", "s.keys:2: line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				rec := playStream(t.Context(), "s.keys", strings.NewReader(tt.script))
				err := <-rec.done
				if got := strings.Join(rec.events, " "); got != tt.events {
					t.Errorf("events %q, want %q", got, tt.events)
				}
				switch {
				case tt.err == "" && err != nil:
					t.Errorf("Play = %v, want nil", err)
				case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
					t.Errorf("Play = %v, want an error starting %q", err, tt.err)
				}
				if tt.err == "" {
					// The same pauses as the parsed script.
					s := parse(t, tt.script)
					var want time.Duration
					for _, st := range s.Steps {
						want += st.Wait
					}
					if d := time.Since(start); d != want {
						t.Errorf("played in %v, want %v", d, want)
					}
				}
			})
		})
	}
}

// TestScriptStreamStopsWhileWaitingForInput: a cancelled context ends Play
// at once while it waits for a line that never comes (a signal to send
// --script - with its pipe held open), and during a pause.
func TestScriptStreamStopsWhileWaitingForInput(t *testing.T) {
	for _, input := range []string{"down KeyA\n", "down KeyA\nsleep 1h\n"} {
		synctest.Test(t, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithCancel(t.Context())
			rec := playStream(ctx, "-", pr)
			io.WriteString(pw, input)
			synctest.Wait()
			start := time.Now()
			cancel()
			if err := <-rec.done; !errors.Is(err, context.Canceled) {
				t.Errorf("Play = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d != 0 {
				t.Errorf("Play returned %v after the cancel, want at once", d)
			}
			if got := strings.Join(rec.events, " "); got != "+KeyA" {
				t.Errorf("events %q, want +KeyA", got)
			}
		})
	}
}
