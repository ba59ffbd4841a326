package fake

import (
	"context"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/keys"
)

// Func is a Source that is a function: Play calls it.
type Func func(ctx context.Context, emit func(keys.Key, bool) error) error

// Play calls f.
func (f Func) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	return f(ctx, emit)
}

// Event is one key event a source emits.
type Event struct {
	Key  keys.Key
	Down bool
}

// Chan is a Source that emits each event sent on it, as it comes. Play
// returns nil once the channel is closed, or ctx's error once it is done.
type Chan chan Event

// Play emits what arrives on c.
func (c Chan) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for {
		select {
		case e, ok := <-c:
			if !ok {
				return nil
			}
			if err := emit(e.Key, e.Down); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Step is one key event of a Trace and the pause before it.
type Step struct {
	Wait time.Duration
	Key  keys.Key
	Down bool
}

// Trace is a Source that plays Steps, each Wait after the one before was
// emitted, then calls AtEnd (if set) and stays quiet for Quiet before Play
// returns. It records when it emitted each step (Emitted). A cancelled
// ctx cuts a pause short.
//
// Safe for concurrent use: a test may call Emitted while it plays. A Trace
// must not be copied once played.
type Trace struct {
	Steps []Step
	Quiet time.Duration
	AtEnd func()

	mu      sync.Mutex
	emitted []time.Time
}

// Play plays the steps.
func (tr *Trace) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for _, st := range tr.Steps {
		if err := pause(ctx, st.Wait); err != nil {
			return err
		}
		tr.mu.Lock()
		tr.emitted = append(tr.emitted, time.Now())
		tr.mu.Unlock()
		if err := emit(st.Key, st.Down); err != nil {
			return err
		}
	}
	if tr.AtEnd != nil {
		tr.AtEnd()
	}
	return pause(ctx, tr.Quiet)
}

// Emitted is when each step played so far was emitted (just before emit
// was called): Emitted()[i] is Steps[i]'s.
func (tr *Trace) Emitted() []time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]time.Time(nil), tr.emitted...)
}

// pause waits d, or until ctx is done. Like time.Sleep, it does not block
// for d ≤ 0.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Taps is a Source that taps N keys, KeyA to KeyZ in turn: each pressed
// Gap after the one before and held for Hold (Gap ≥ Hold), with a last
// pause of Gap-Hold after the last release. With neither, the taps go back
// to back as fast as the sender takes them, without a timer: a benchmark's
// source. It records nothing; Trace plays the same taps and records them.
type Taps struct {
	N         int
	Gap, Hold time.Duration
}

// tapKey is the key of the i-th tap.
func tapKey(i int) keys.Key { return keys.Key(keys.KeyA) + keys.Key(i%26) }

// Play taps the keys.
func (ts Taps) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	for i := range ts.N {
		k := tapKey(i)
		if err := emit(k, true); err != nil {
			return err
		}
		if err := pause(ctx, ts.Hold); err != nil {
			return err
		}
		if err := emit(k, false); err != nil {
			return err
		}
		if err := pause(ctx, ts.Gap-ts.Hold); err != nil {
			return err
		}
	}
	return nil
}

// Trace is the same taps as a Trace.
func (ts Taps) Trace() *Trace {
	tr := &Trace{Quiet: ts.Gap - ts.Hold}
	for i := range ts.N {
		k := tapKey(i)
		wait := ts.Gap - ts.Hold
		if i == 0 {
			wait = 0
		}
		tr.Steps = append(tr.Steps, Step{Wait: wait, Key: k, Down: true}, Step{Wait: ts.Hold, Key: k})
	}
	return tr
}
