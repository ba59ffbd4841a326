package eventqueue

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// newerThan is the abridged part of queue: its events stamped above base.
func newerThan(queue []Event, base uint64) []Event {
	i := 0
	for i < len(queue) && queue[i].Kind != None && queue[i].Stamp > base {
		i++
	}
	return queue[:i]
}

// TestRebuildIsTheSendersQueue (PROTOCOL.md §3.3): a sender that abridges
// its packets to the events newer than the newest stamp acknowledged
// (whenever Evicted allows), over a channel that loses packets and acks,
// brings a receiver that rebuilds them to exactly the queue the sender
// had, and so to the same dispatches as whole queues would: the same
// injections and releases, in the same order.
func TestRebuildIsTheSendersQueue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loss := rapid.IntRange(0, 90).Draw(t, "loss%")
		ackLoss := rapid.IntRange(0, 90).Draw(t, "ackloss%")
		n, trace := drawTrace(t, loss)
		q, _ := New(n)
		var whole, abridged Tracker // fed whole queues, and rebuilt ones
		var rb Rebuilder
		var base uint64 // the newest stamp the sender has an ack of
		acked := false  // and whether it has one
		abridgedSent := 0
		deliver := func(delivered bool) {
			full := slices.Clone(q.Events())
			if !delivered {
				return
			}
			in := full
			if acked && q.Evicted() <= base && len(newerThan(full, base)) < n {
				abridgedSent++
				got, err := rb.Rebuild(abridged.prev, n, base, newerThan(full, base))
				if err != nil {
					t.Fatalf("rebuild from %s, base %d, newer %s: %v", show(abridged.prev), base, show(newerThan(full, base)), err)
				}
				if !slices.Equal(got, full) {
					t.Fatalf("rebuilt %s, the sender's queue is %s (base %d, previous %s)", show(got), show(full), base, show(abridged.prev))
				}
				in = slices.Clone(got)
			}
			a := showDispatch(whole.Apply(nil, full, false))
			b := showDispatch(abridged.Apply(nil, in, false))
			if a != b {
				t.Fatalf("rebuilt queue dispatched %q, the whole one %q", b, a)
			}
			// The receiver acks what it applied; the ack may be lost.
			if rapid.IntRange(0, 99).Draw(t, "ack") >= ackLoss {
				base, acked = max(base, abridged.Newest()), true
			}
		}
		for i, o := range trace {
			e := Event{Key: o.code, Kind: Up, Stamp: q.NextStamp(uint64(i))}
			if o.down {
				e.Kind = Down
			}
			_, _ = q.Add(e)
			deliver(o.delivered)
			// An idle resend, which carries nothing new once acked.
			deliver(rapid.IntRange(0, 99).Draw(t, "idle") >= loss)
		}
		deliver(true)
	})
}

// TestRebuildRefuses: a packet that does not build on the previous queue
// is refused, never rebuilt into another queue (PROTOCOL.md §3.3).
func TestRebuildRefuses(t *testing.T) {
	a, b := testKey(0), testKey(2)
	prev := []Event{{Key: a, Kind: Up, Stamp: 20}, {Key: a, Kind: Down, Stamp: 10}, {}}
	for _, tc := range []struct {
		name  string
		prev  []Event
		n     int
		base  uint64
		newer []Event
	}{
		{"no previous queue", nil, 3, 20, nil},
		{"another length", prev, 4, 20, nil},
		{"base newer than the previous queue", prev, 3, 21, nil},
		{"as many newer events as the queue", prev, 3, 5, []Event{{Key: b, Kind: Down, Stamp: 30}, {Key: a, Kind: Up, Stamp: 20}, {Key: a, Kind: Down, Stamp: 10}}},
		{"an event the previous queue lacks", prev, 3, 15, []Event{{Key: b, Kind: Down, Stamp: 18}}},
		{"an event newer than base left out", prev, 3, 10, []Event{{Key: b, Kind: Down, Stamp: 30}}},
		{"an unheld key-up", prev, 3, 20, []Event{{Key: b, Kind: Up, Stamp: 30}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rb Rebuilder
			got, err := rb.Rebuild(tc.prev, tc.n, tc.base, tc.newer)
			if !errors.Is(err, ErrRebuild) {
				t.Fatalf("Rebuild = %s, %v; want ErrRebuild", show(got), err)
			}
		})
	}
	var rb Rebuilder
	got, err := rb.Rebuild(prev, 3, 20, []Event{{Key: b, Kind: Down, Stamp: 30}})
	want := []Event{{Key: b, Kind: Down, Stamp: 30}, {Key: a, Kind: Up, Stamp: 20}, {Key: a, Kind: Down, Stamp: 10}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Rebuild = %s, %v; want %s", show(got), err, show(want))
	}
}

func BenchmarkRebuild(b *testing.B) {
	q, _ := New(16)
	for i := range 40 {
		_, _ = q.Add(Event{Key: testKey(i / 2 % 6), Kind: Kind(1 + i%2), Stamp: uint64(100 + 10*i)})
	}
	prev := slices.Clone(q.Events())
	_, _ = q.Add(Event{Key: testKey(8), Kind: Down, Stamp: 1000})
	newer := newerThan(q.Events(), prev[0].Stamp)
	var rb Rebuilder
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rb.Rebuild(prev, 16, prev[0].Stamp, newer); err != nil {
			b.Fatal(err)
		}
	}
}
