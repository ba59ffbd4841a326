package eventqueue

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/keys"
)

// op is one step of a random key trace: a key event, and whether the packet
// sent after it reaches the receiver.
type op struct {
	code      keys.Key
	down      bool
	delivered bool
}

func drawTrace(t *rapid.T, lossPct int) (n int, trace []op) {
	n = rapid.IntRange(1, 8).Draw(t, "n")
	alphabet := rapid.IntRange(1, 10).Draw(t, "keys")
	steps := rapid.IntRange(0, 60).Draw(t, "steps")
	for i := range steps {
		trace = append(trace, op{
			code:      testKey(rapid.IntRange(0, alphabet-1).Draw(t, "key")),
			down:      rapid.Bool().Draw(t, "down"),
			delivered: rapid.IntRange(0, 99).Draw(t, "p") >= lossPct,
		})
		_ = i
	}
	return n, trace
}

// checkShape checks what every queue Add makes must look like: None events
// form a suffix, real events have strictly decreasing stamps (newest first).
func checkShape(t *rapid.T, q []Event) {
	seenNone := false
	for i, e := range q {
		if e.Kind == None {
			seenNone = true
			continue
		}
		if seenNone {
			t.Fatalf("real event after a None event at %d: %s", i, show(q))
		}
		if i > 0 && q[i-1].Stamp <= e.Stamp {
			t.Fatalf("stamps not strictly decreasing at %d: %s", i, show(q))
		}
	}
}

// checkChars checks the queue's count of character events, which picks
// step 4's loop.
func checkChars(t *rapid.T, q *Queue) {
	n := 0
	for _, e := range q.ev {
		if e.Key.IsChar() {
			n++
		}
	}
	if n != q.nchar {
		t.Fatalf("%d character events, nchar %d: %s", n, q.nchar, show(q.ev))
	}
}

// TestQueueAgainstModel checks Add (sender steps 1–7) against a model that
// only tracks which keys are held.
func TestQueueAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, trace := drawTrace(t, 0)
		q, _ := New(n)
		held := map[keys.Key]bool{}
		added := map[Event]bool{}
		for i, o := range trace {
			e := Event{Key: o.code, Kind: Up, Stamp: uint64(i + 1)}
			if o.down {
				e.Kind = Down
			}
			// The seed's step 5 drops an event exactly when every entry is a
			// lone key-down of a different key (steps 2 and 4 find no slot).
			full := true
			codes := map[keys.Key]bool{}
			for _, x := range q.Events() {
				if x.Kind != Down || x.Key == e.Key || codes[x.Key] {
					full = false
				}
				codes[x.Key] = true
			}
			var want Result
			switch {
			case o.down && held[o.code]:
				want = Repeat
			case !o.down && !held[o.code]:
				want = Unheld
			case full:
				want = Dropped
			default:
				want = Added
			}
			victim, adds := q.Victim(e)
			before := slices.Clone(q.Events())
			got, err := q.Add(e)
			if err != nil {
				t.Fatal(err)
			}
			// Victim predicts Add: whether it adds, and which event leaves.
			if adds != (got == Added) {
				t.Fatalf("Victim says adds=%v, Add says %v", adds, got)
			}
			if adds {
				left := slices.Clone(before)
				for _, x := range q.Events()[1:] {
					if i := slices.Index(left, x); i >= 0 {
						left = slices.Delete(left, i, i+1)
					}
				}
				if len(left) != 1 || left[0] != victim {
					t.Fatalf("Victim %s, but %s left the queue (%s -> %s)", show([]Event{victim}), show(left), show(before), show(q.Events()))
				}
			}
			if got != want {
				t.Fatalf("step %d: Add(%s) = %v, want %v (queue %s)", i, show([]Event{e}), got, want, show(q.Events()))
			}
			if got == Added {
				held[o.code] = o.down
				added[e] = true
				if q.Events()[0] != e {
					t.Fatalf("step 7: added event not at the front: %s", show(q.Events()))
				}
			}
			checkShape(t, q.Events())
			checkChars(t, q)
			for _, x := range q.Events() {
				if x.Kind != None && !added[x] {
					t.Fatalf("queue holds an event never added: %s", show([]Event{x}))
				}
			}
			// A key-down stays in the queue until its key is released.
			var want2 []keys.Key
			for c, h := range held {
				if h {
					want2 = append(want2, c)
				}
			}
			got2 := q.HeldKeys(nil)
			slices.Sort(want2)
			slices.Sort(got2)
			if !slices.Equal(got2, want2) {
				t.Fatalf("held %v, model %v (queue %s)", got2, want2, show(q.Events()))
			}
		}
	})
}

// TestDiffUnderLoss sends a random trace through a lossy in-order channel and
// checks DESIGN.md invariants 1–4 at the receiver's output.
func TestDiffUnderLoss(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loss := rapid.IntRange(0, 90).Draw(t, "loss%")
		balanced := rapid.Bool().Draw(t, "balanced")
		join := rapid.Bool().Draw(t, "join")
		n, trace := drawTrace(t, loss)
		q, _ := New(n)
		tr := Tracker{Unbalanced: !balanced}
		osHeld := map[keys.Key]bool{} // what the receiver has injected
		var sentDowns []Event         // key-downs the sender's queue took
		var gotDowns []Event          // key-downs the receiver dispatched as sent
		everApplied := false
		apply := func(snapshot []Event) {
			ds := tr.Apply(nil, snapshot, join && !everApplied)
			everApplied = true
			for _, d := range ds {
				switch d.Kind {
				case Up:
					// Invariant 2: never a key-up for a key not held.
					if !osHeld[d.Key] {
						t.Fatalf("key-up of unheld key %s (%v)", name(d.Key), d.Cause)
					}
					delete(osHeld, d.Key)
				case Down:
					if osHeld[d.Key] && balanced {
						t.Fatalf("balanced: second key-down of held key %s", name(d.Key))
					}
					osHeld[d.Key] = true
					if d.Cause == Sent {
						gotDowns = append(gotDowns, d.Event)
					}
				}
			}
			// Invariant 4: the same queue again changes nothing.
			if again := tr.Apply(nil, snapshot, false); len(again) != 0 {
				t.Fatalf("duplicate queue dispatched %s", showDispatch(again))
			}
		}
		for i, o := range trace {
			e := Event{Key: o.code, Kind: Up, Stamp: q.NextStamp(uint64(i))}
			if o.down {
				e.Kind = Down
			}
			if r, _ := q.Add(e); r == Added && o.down {
				sentDowns = append(sentDowns, e)
			}
			if o.delivered {
				apply(slices.Clone(q.Events()))
			}
		}
		// Invariant 1: one packet after the last event arrives.
		apply(slices.Clone(q.Events()))
		want := q.HeldKeys(nil)
		var got []keys.Key
		for c := range osHeld {
			got = append(got, c)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("receiver holds %v, sender %v", got, want)
		}
		// Invariant 3: dispatched key-downs are a subsequence of the sender's.
		j := 0
		for _, d := range gotDowns {
			for j < len(sentDowns) && sentDowns[j] != d {
				j++
			}
			if j == len(sentDowns) {
				t.Fatalf("dispatched key-downs %s are not a subsequence of sent %s", show(gotDowns), show(sentDowns))
			}
			j++
		}
		// Without loss (and without joining late) no key-down is lost.
		if loss == 0 && !join && len(gotDowns) != len(sentDowns) {
			t.Fatalf("lossless channel lost key-downs: sent %s, got %s", show(sentDowns), show(gotDowns))
		}
	})
}

// TestResumeZeroIsFreshDiff checks the documented equivalence on random queues.
func TestResumeZeroIsFreshDiff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, trace := drawTrace(t, 0)
		q, _ := New(n)
		for i, o := range trace {
			k := Up
			if o.down {
				k = Down
			}
			_, _ = q.Add(Event{Key: o.code, Kind: k, Stamp: uint64(i + 1)})
		}
		a := showDispatch(Resume(nil, 0, q.Events(), true))
		b := showDispatch(Diff(nil, nil, q.Events(), true))
		if a != b {
			t.Fatalf("Resume(0) %q != Diff(fresh) %q", a, b)
		}
	})
}

// testChars are characters a terminal or a script's type sends: ASCII,
// Latin-1, beyond Latin-1 and beyond the BMP.
var testChars = []rune{'a', 'é', '€', '😀', 'A', 'ß'}

// testKey is the i-th key of a test alphabet: physical keys and characters
// alternate, so the properties hold for both (a character is a key like any
// other to the queue and the diff).
func testKey(i int) keys.Key {
	if i%2 == 0 {
		return keys.Key(4 + i/2)
	}
	return keys.Char(testChars[i/2%len(testChars)])
}
