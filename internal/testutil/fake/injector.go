package fake

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

// The injectors have a Close that does nothing, so that they are also
// inject.Injectors (what cmd's receivers take).

// Nop is an Injector that does nothing.
type Nop struct{}

// Inject does nothing.
func (Nop) Inject(sink.Event) error { return nil }

// Close does nothing.
func (Nop) Close() error { return nil }

// Arrival is an injected event and when it arrived (time.Now, virtual in a
// synctest bubble).
type Arrival struct {
	sink.Event
	At time.Time
}

// Arrivals are injected events in the order they came.
type Arrivals []Arrival

// String renders the events without their times, as the receiver's tests
// expect them: "KeyA down, 'é' up(missing)", a cause other than Sent in
// brackets.
func (as Arrivals) String() string {
	var s []string
	for _, a := range as {
		x := a.Key.String() + " up"
		if a.Down {
			x = a.Key.String() + " down"
		}
		if c := a.Cause.String(); c != "" {
			x += "(" + c + ")"
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

// Recorder is an Injector that keeps every event it is given with its
// arrival time. If Notify is set, Inject also sends each arrival on it,
// once recorded (a blocking send: buffer it or read it). Safe for
// concurrent use; the zero value is ready.
type Recorder struct {
	Notify chan<- Arrival

	mu  sync.Mutex
	got Arrivals
}

// Inject records e.
func (r *Recorder) Inject(e sink.Event) error {
	a := Arrival{e, time.Now()}
	r.mu.Lock()
	r.got = append(r.got, a)
	r.mu.Unlock()
	if r.Notify != nil {
		r.Notify <- a
	}
	return nil
}

// Close does nothing.
func (r *Recorder) Close() error { return nil }

// Events is what was injected so far.
func (r *Recorder) Events() Arrivals {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Take is what was injected since the last Take, which it forgets.
func (r *Recorder) Take() Arrivals {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// OS is an Injector that models what the OS holds, and checks DESIGN.md
// invariant 2 as events come: a key-down of a key already held or a
// key-up of a key not held is a problem (Problems). It also keeps the
// key-downs the sender sent (cause eventqueue.Sent), in order. Safe for
// concurrent use; the zero value is ready.
type OS struct {
	mu       sync.Mutex
	held     map[keys.Key]bool
	downs    []keys.Key
	problems []string
}

// Inject applies e to the held keys.
func (o *OS) Inject(e sink.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held == nil {
		o.held = map[keys.Key]bool{}
	}
	if e.Down {
		if o.held[e.Key] {
			o.problems = append(o.problems, fmt.Sprintf("second key-down of held %v", e.Key))
		}
		o.held[e.Key] = true
		if e.Cause == eventqueue.Sent {
			o.downs = append(o.downs, e.Key)
		}
	} else {
		if !o.held[e.Key] {
			o.problems = append(o.problems, fmt.Sprintf("key-up of unheld %v (%v)", e.Key, e.Cause))
		}
		delete(o.held, e.Key)
	}
	return nil
}

// Close does nothing.
func (o *OS) Close() error { return nil }

// Held is the keys held now, sorted.
func (o *OS) Held() []keys.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]keys.Key, 0, len(o.held))
	for k := range o.held {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SentDowns is the key-downs injected because the sender sent them (not
// a resync's), in order.
func (o *OS) SentDowns() []keys.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.downs)
}

// Problems is every violation of invariant 2 seen, in order.
func (o *OS) Problems() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.problems)
}

// CannotType is a Recorder that cannot type characters, as uinput cannot:
// it records every event, and fails a character's with an error wrapping
// sink.ErrCannotType.
type CannotType struct{ Recorder }

// Inject records e, and fails it if it is a character's.
func (c *CannotType) Inject(e sink.Event) error {
	c.Recorder.Inject(e)
	if e.Key.IsChar() {
		return fmt.Errorf("%w %v", sink.ErrCannotType, e.Key)
	}
	return nil
}

// Watched is a Recorder whose backend can go away, as the X injector's
// does when its server stops (a receiver.Watched): after Vanish, Gone is
// closed and every Inject fails with Err (which should wrap sink.ErrGone)
// and records nothing. Safe for concurrent use.
type Watched struct {
	Recorder
	Err error

	init   sync.Once
	vanish sync.Once
	gone   chan struct{}
}

// Inject records e, or fails once the backend is gone.
func (w *Watched) Inject(e sink.Event) error {
	select {
	case <-w.Gone():
		return w.GoneErr()
	default:
		return w.Recorder.Inject(e)
	}
}

// Gone is closed by Vanish.
func (w *Watched) Gone() <-chan struct{} {
	w.init.Do(func() { w.gone = make(chan struct{}) })
	return w.gone
}

// GoneErr is Err.
func (w *Watched) GoneErr() error { return w.Err }

// Vanish makes the backend go away.
func (w *Watched) Vanish() {
	w.Gone()
	w.vanish.Do(func() { close(w.gone) })
}
