package eventqueue

import (
	"fmt"
	"strings"
	"testing"
)

func showDispatch(ds []Dispatch) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(show([]Event{d.Event}))
		if d.Cause != Sent {
			fmt.Fprintf(&b, "(%s)", d.Cause)
		}
	}
	return b.String()
}

// TestDiffSteps walks the seed's receiver steps 1–7.
func TestDiffSteps(t *testing.T) {
	n := none()
	tests := []struct {
		name       string
		prev, in   []Event
		balanced   string // expected dispatch, balanced mode
		unbalanced string // expected dispatch, seed-literal mode ("" = same as balanced)
	}{
		{
			// Steps 1–4 on a fresh queue: the previous timestamp is 0, so step 6
			// dispatches every real event, oldest first.
			name:     "fresh receiver dispatches the whole tap",
			prev:     []Event{n, n, n, n},
			in:       []Event{up(kA, 2), dn(kA, 1), n, n},
			balanced: "dA1 uA2",
		},
		{
			// Step 1: events not newer than the previous timestamp are not
			// dispatched again (a duplicate or a resend of the same queue).
			name:     "same queue twice dispatches nothing",
			prev:     []Event{up(kA, 2), dn(kA, 1), n, n},
			in:       []Event{up(kA, 2), dn(kA, 1), n, n},
			balanced: "",
		},
		{
			// Lost packets: the events of the lost packets are still in the
			// queue and newer than the previous timestamp.
			name:     "lost packets are recovered from the next queue",
			prev:     []Event{dn(kA, 1), n, n, n},
			in:       []Event{up(kB, 4), dn(kB, 3), up(kA, 2), dn(kA, 1)},
			balanced: "uA2 dB3 uB4",
		},
		{
			// Step 5: A is held per the previous queue and absent from the
			// incoming one (its key-up was overwritten): released with the
			// previous timestamp.
			name:     "held key missing from the incoming queue is released",
			prev:     []Event{dC3, dB2, dA1},
			in:       []Event{dD7, dC3, dB2},
			balanced: "uA3(missing) dD7",
		},
		{
			// Step 6.1: a newer key-up of a key that is not held is ignored.
			name:     "key-up of an unheld key is not dispatched",
			prev:     []Event{n, n},
			in:       []Event{up(kA, 5), n},
			balanced: "",
		},
		{
			// Step 4: ups in the previous queue un-hold (the chord finished).
			name:     "chord",
			prev:     []Event{dn(kB, 2), dn(kA, 1), n, n},
			in:       []Event{up(kA, 4), up(kB, 3), dn(kB, 2), dn(kA, 1)},
			balanced: "uB3 uA4",
		},
		{
			// Step 6.2 with a key still held: A was held at the previous queue
			// and its key-up fell out of the queue before it arrived. The seed
			// dispatches a second key-down; balanced mode first generates the
			// key-up it missed.
			name:       "repeated key-down of a held key",
			prev:       []Event{dn(kA, 1), n, n},
			in:         []Event{dn(kA, 5), up(kB, 4), dn(kB, 3)},
			balanced:   "dB3 uB4 uA5(missing) dA5",
			unbalanced: "dB3 uB4 dA5",
		},
		{
			name:     "queue full of held keys then one released",
			prev:     []Event{dn(kD, 4), dn(kC, 3), dn(kB, 2), dn(kA, 1)},
			in:       []Event{up(kA, 6), dn(kD, 4), dn(kC, 3), dn(kB, 2)},
			balanced: "uA6",
		},
		{
			// Queues of different lengths still diff (a sender restarted with
			// another --queue is a new session, but Diff must not care).
			name:     "different lengths",
			prev:     []Event{dn(kA, 1)},
			in:       []Event{up(kA, 2), dn(kA, 1), n},
			balanced: "uA2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := showDispatch(Diff(nil, tt.prev, tt.in, true)); got != tt.balanced {
				t.Errorf("balanced: got %q, want %q", got, tt.balanced)
			}
			want := tt.unbalanced
			if want == "" {
				want = tt.balanced
			}
			if got := showDispatch(Diff(nil, tt.prev, tt.in, false)); got != want {
				t.Errorf("unbalanced: got %q, want %q", got, want)
			}
		})
	}
}

var (
	dA1 = dn(kA, 1)
	dB2 = dn(kB, 2)
	dC3 = dn(kC, 3)
	dD7 = dn(kD, 7)
)

func TestResume(t *testing.T) {
	n := none()
	in := []Event{up(kC, 9), dn(kC, 8), dn(kB, 6), up(kA, 5), dn(kA, 2), dn(kD, 1)}
	tests := []struct {
		since uint64
		want  string
	}{
		// since 0: as a fresh Diff.
		{0, "dD1 dA2 uA5 dB6 dC8 uC9"},
		// Joining at the newest stamp: press only what is held now (D, B),
		// type nothing again.
		{9, "dD1(resync) dB6(resync)"},
		// Resuming after stamp 5: D and A were pressed before; A's release at
		// 5 is old, D is still held: press D again, then the newer events.
		{5, "dD1(resync) dB6 dC8 uC9"},
	}
	for _, tt := range tests {
		if got := showDispatch(Resume(nil, tt.since, in, true)); got != tt.want {
			t.Errorf("Resume(since %d) = %q, want %q", tt.since, got, tt.want)
		}
	}
	if got, want := showDispatch(Resume(nil, 0, in, true)), showDispatch(Diff(nil, []Event{n}, in, true)); got != want {
		t.Errorf("Resume(0) = %q, Diff from a fresh queue = %q", got, want)
	}
}

func TestTracker(t *testing.T) {
	var tr Tracker
	step := func(in []Event, join bool, want string) {
		t.Helper()
		if got := showDispatch(tr.Apply(nil, in, join)); got != want {
			t.Errorf("Apply(%s) = %q, want %q", show(in), got, want)
		}
	}
	// A fresh session types everything; join=true on the first queue only
	// presses what is held.
	step([]Event{dn(kB, 3), up(kA, 2), dn(kA, 1)}, false, "dA1 uA2 dB3")
	if got := tr.Held(nil); len(got) != 1 || got[0] != kB {
		t.Fatalf("Held = %v, want [B]", got)
	}
	// Step 7: the incoming queue is now the previous one.
	step([]Event{dn(kB, 3), up(kA, 2), dn(kA, 1)}, false, "")
	if got := showDispatch(tr.Release(nil, Timeout)); got != "uB3(timeout)" {
		t.Errorf("Release = %q, want uB3(timeout)", got)
	}
	if got := showDispatch(tr.Release(nil, Timeout)); got != "" {
		t.Errorf("second Release = %q, want nothing", got)
	}
	if got := tr.Held(nil); len(got) != 0 {
		t.Errorf("Held after Release = %v, want none", got)
	}
	// The session comes back: B is still held at the sender: pressed again;
	// the newer C is typed.
	step([]Event{up(kC, 5), dn(kC, 4), dn(kB, 3)}, false, "dB3(resync) dC4 uC5")

	var late Tracker
	if got := showDispatch(late.Apply(nil, []Event{dn(kB, 3), up(kA, 2), dn(kA, 1)}, true)); got != "dB3(resync)" {
		t.Errorf("joining Apply = %q, want dB3(resync)", got)
	}
}
