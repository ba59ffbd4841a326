package eventqueue

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

// Key codes for the tables (USB HID usages).
const (
	kA keys.Key = 0x04
	kB keys.Key = 0x05
	kC keys.Key = 0x06
	kD keys.Key = 0x07
	kE keys.Key = 0x08
)

func dn(c keys.Key, s uint64) Event { return Event{Key: c, Kind: Down, Stamp: s} }
func up(c keys.Key, s uint64) Event { return Event{Key: c, Kind: Up, Stamp: s} }
func none() Event                   { return Event{} }

// show renders a queue as "dA1 uB2 -" for readable failures.
func show(q []Event) string {
	var b strings.Builder
	for i, e := range q {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch e.Kind {
		case None:
			fmt.Fprintf(&b, "-%d", e.Stamp)
		case Down:
			fmt.Fprintf(&b, "d%s%d", name(e.Key), e.Stamp)
		case Up:
			fmt.Fprintf(&b, "u%s%d", name(e.Key), e.Stamp)
		}
	}
	return b.String()
}

func name(c keys.Key) string {
	if c >= kA && c <= kE {
		return string(rune('A' + c - kA))
	}
	return fmt.Sprintf("%#x", uint16(c))
}

func mustNew(t testing.TB, n int) *Queue {
	t.Helper()
	q, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestNewIsFilledWithNoneInThePast(t *testing.T) {
	q := mustNew(t, 8)
	for i, e := range q.Events() {
		if e != (Event{}) {
			t.Fatalf("entry %d = %+v, want a None event stamped 0", i, e)
		}
	}
	for _, n := range []int{0, -1, MaxLen + 1} {
		if _, err := New(n); err == nil {
			t.Errorf("New(%d) succeeded, want an error", n)
		}
	}
}

// TestAddSteps walks the seed's sender steps 1–7 through the cases that
// exercise each of them.
func TestAddSteps(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		adds  []Event
		want  []Result
		queue string
	}{
		{
			// Step 2 stops at a None event at N-1; step 6 shifts everything.
			name: "first key-down goes to the front", n: 4,
			adds:  []Event{dn(kA, 1)},
			want:  []Result{Added},
			queue: "dA1 -0 -0 -0",
		},
		{
			name: "a tap keeps down and up", n: 4,
			adds:  []Event{dn(kA, 1), up(kA, 2)},
			want:  []Result{Added, Added},
			queue: "uA2 dA1 -0 -0",
		},
		{
			// Step 1: the oldest event (N-1) is shifted out once the queue is full.
			name: "oldest finished event falls off", n: 3,
			adds:  []Event{dn(kA, 1), up(kA, 2), dn(kB, 3), up(kB, 4)},
			want:  []Result{Added, Added, Added, Added},
			queue: "uB4 dB3 uA2",
		},
		{
			// Step 2 skips the lone key-down of A at N-1, stops at the up of B;
			// step 4 finds nothing newer; B's key-up overwrites index 1.
			name: "a lone key-down at the tail stays", n: 3,
			adds:  []Event{dn(kA, 1), dn(kB, 2), up(kB, 3), dn(kC, 4)},
			want:  []Result{Added, Added, Added, Added},
			queue: "dC4 uB3 dA1",
		},
		{
			// Step 2 walks back over the lone downs of A and B (indices 3, 2)
			// and stops at uB3 (index 1). Step 4 sees B again at index 2 (dB2,
			// balanced by the newer uB3) and moves the last shift index there,
			// so dB2 is overwritten rather than uB3.
			name: "step 4 overwrites a key-down balanced by a newer key-up", n: 4,
			adds:  []Event{dn(kA, 1), dn(kB, 2), up(kB, 3), dn(kC, 4), dn(kD, 5)},
			want:  []Result{Added, Added, Added, Added, Added},
			queue: "dD5 dC4 uB3 dA1",
		},
		{
			// Step 2 stops at once at a key-down of the same key (N-1): a key-up
			// overwrites its own key-down.
			name: "key-up replaces its own key-down at the tail", n: 2,
			adds:  []Event{dn(kA, 1), dn(kB, 2), up(kA, 3)},
			want:  []Result{Added, Added, Added},
			queue: "uA3 dB2",
		},
		{
			// N lone key-downs: step 2 leaves the index at -1, step 4 finds no
			// repeated key, step 5 drops the event.
			name: "queue full of held keys drops the next key-down", n: 4,
			adds:  []Event{dn(kA, 1), dn(kB, 2), dn(kC, 3), dn(kD, 4), dn(kE, 5)},
			want:  []Result{Added, Added, Added, Added, Dropped},
			queue: "dD4 dC3 dB2 dA1",
		},
		{
			// N+1 simultaneous holds: the dropped key is not held, so its key-up
			// is Unheld; releasing A makes room (step 2 stops at A's own down).
			// Then step 2 stops at uA6 (index 0) and D overwrites it: the queue
			// no longer mentions A, which the receiver's step 5 turns into A's
			// key-up.
			name: "N+1 holds then releases", n: 3,
			adds: []Event{dn(kA, 1), dn(kB, 2), dn(kC, 3), dn(kD, 4), up(kD, 5),
				up(kA, 6), dn(kD, 7)},
			want:  []Result{Added, Added, Added, Dropped, Unheld, Added, Added},
			queue: "dD7 dC3 dB2",
		},
		{
			// A key-down of a dropped key is tried again: it was never held.
			name: "dropped key-down can be repeated later", n: 2,
			adds:  []Event{dn(kA, 1), dn(kB, 2), dn(kC, 3), up(kA, 4), dn(kC, 5)},
			want:  []Result{Added, Added, Dropped, Added, Added},
			queue: "dC5 dB2",
		},
		{
			name: "chord", n: 4,
			adds:  []Event{dn(kA, 1), dn(kB, 2), up(kB, 3), up(kA, 4)},
			want:  []Result{Added, Added, Added, Added},
			queue: "uA4 uB3 dB2 dA1",
		},
		{
			// Auto-repeat: a key-down for a held key adds no event.
			name: "repeat is filtered", n: 3,
			adds:  []Event{dn(kA, 1), dn(kA, 2), dn(kA, 3), up(kA, 4)},
			want:  []Result{Added, Repeat, Repeat, Added},
			queue: "uA4 dA1 -0",
		},
		{
			name: "key-up of a key never pressed is filtered", n: 2,
			adds:  []Event{up(kA, 1), dn(kA, 2), up(kA, 3), up(kA, 4)},
			want:  []Result{Unheld, Added, Added, Unheld},
			queue: "uA3 dA2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := mustNew(t, tt.n)
			for i, e := range tt.adds {
				got, err := q.Add(e)
				if err != nil {
					t.Fatalf("add %d: %v", i, err)
				}
				if got != tt.want[i] {
					t.Fatalf("add %d (%s): got %v, want %v; queue %s", i, show([]Event{e}), got, tt.want[i], show(q.Events()))
				}
			}
			if got := show(q.Events()); got != tt.queue {
				t.Errorf("queue = %s, want %s", got, tt.queue)
			}
		})
	}
}

func TestAddRejectsBadEvents(t *testing.T) {
	q := mustNew(t, 4)
	if _, err := q.Add(dn(kA, 5)); err != nil {
		t.Fatal(err)
	}
	before := show(q.Events())
	for _, tc := range []struct {
		e    Event
		want error
	}{
		{dn(kB, 5), ErrStamp},
		{dn(kB, 4), ErrStamp},
		{Event{Key: kB, Kind: None, Stamp: 9}, ErrEvent},
		{Event{Key: kB, Kind: 7, Stamp: 9}, ErrEvent},
		{dn(0, 9), ErrEvent},
	} {
		if _, err := q.Add(tc.e); !errors.Is(err, tc.want) {
			t.Errorf("Add(%+v) = %v, want %v", tc.e, err, tc.want)
		}
	}
	if after := show(q.Events()); after != before {
		t.Errorf("rejected events changed the queue: %s -> %s", before, after)
	}
}

func TestNextStampIsStrictlyIncreasing(t *testing.T) {
	q := mustNew(t, 4)
	if got := q.NextStamp(0); got != 1 {
		t.Errorf("NextStamp(0) on a fresh queue = %d, want 1 (stamp 0 is the past)", got)
	}
	if _, err := q.Add(dn(kA, q.NextStamp(100))); err != nil {
		t.Fatal(err)
	}
	if got := q.NextStamp(100); got != 101 {
		t.Errorf("NextStamp with a clock that has not moved = %d, want 101", got)
	}
	if got := q.NextStamp(250); got != 250 {
		t.Errorf("NextStamp(250) = %d, want 250", got)
	}
}

func TestHeldKeysOldestFirst(t *testing.T) {
	q := mustNew(t, 6)
	for _, e := range []Event{dn(kC, 1), dn(kA, 2), dn(kB, 3), up(kA, 4)} {
		if _, err := q.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	got := q.HeldKeys(nil)
	if len(got) != 2 || got[0] != kC || got[1] != kB {
		t.Errorf("HeldKeys = %v, want [C B]", got)
	}
	if !q.Held(kC) || q.Held(kA) || q.Held(kD) {
		t.Errorf("Held: C=%v A=%v D=%v, want true false false", q.Held(kC), q.Held(kA), q.Held(kD))
	}
}
