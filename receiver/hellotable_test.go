package receiver

import (
	"net"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/keyrelay/keyrelay/internal/fake"
	"github.com/keyrelay/keyrelay/wire"
)

// TestHelloTableEvictsTheOldest (PROTOCOL.md §8.3 step 2: a bounded
// table): a hello for a new session when the table is full forgets only
// the entry updated longest ago, not every entry (it was cleared
// wholesale: the session handshaking then lost its hellos' count).
func TestHelloTableEvictsTheOldest(t *testing.T) {
	r, err := New(Config{Conn: nopConn{}, Injector: &fake.Recorder{}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	from := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 40000}
	hello := func(session uint64, at time.Time) { r.Handle(wire.AppendHello(nil, session, 1, nil), from, at) }
	key := func(session uint64) helloFrom { return helloFrom{session, from.String()} }
	for s := uint64(1); s <= maxHellos; s++ {
		hello(s, t0)
	}
	hello(1, t0.Add(time.Second)) // session 1 is heard again: now the newest
	for _, tc := range []struct {
		session uint64 // a new session's hello
		gone    uint64 // the entry it evicts
	}{
		{maxHellos + 1, 2},
		{maxHellos + 2, 3},
	} {
		hello(tc.session, t0.Add(2*time.Second))
		if n := r.hellos.len(); n != maxHellos {
			t.Fatalf("after session %d's hello: %d entries, want %d (full, one evicted)", tc.session, n, maxHellos)
		}
		if _, ok := r.hellos.get(key(tc.gone)); ok {
			t.Errorf("after session %d's hello: session %d, the oldest entry, is still kept", tc.session, tc.gone)
		}
		for _, kept := range []uint64{1, tc.gone + 1, maxHellos, tc.session} {
			if _, ok := r.hellos.get(key(kept)); !ok {
				t.Errorf("after session %d's hello: session %d was forgotten", tc.session, kept)
			}
		}
	}
	if st := r.Stats(); st.Tickets != maxHellos+3 {
		t.Errorf("%d tickets sent, want one per hello (%d)", st.Tickets, maxHellos+3)
	}
}

// TestHelloTableProperties: whatever the order of puts, the table keeps
// the max keys put most recently, with the newest value of each, and gets
// nothing else (a model: a slice, oldest first).
func TestHelloTableProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 6).Draw(t, "max")
		tab := newHelloTable(max)
		var model []helloFrom
		values := map[helloFrom]uint64{}
		for i, k := range rapid.SliceOf(rapid.Uint64Range(1, 10)).Draw(t, "puts") {
			key := helloFrom{k, "a"}
			tab.put(key, helloSeen{newest: uint64(i)})
			values[key] = uint64(i)
			model = slices.DeleteFunc(model, func(m helloFrom) bool { return m == key })
			model = append(model, key)
			if len(model) > max {
				model = model[1:]
			}
			if tab.len() != len(model) {
				t.Fatalf("after %d puts: %d entries, want %d", i+1, tab.len(), len(model))
			}
			for k := uint64(1); k <= 10; k++ {
				key := helloFrom{k, "a"}
				got, ok := tab.get(key)
				want := slices.Contains(model, key)
				if ok != want || (ok && got.newest != values[key]) {
					t.Fatalf("after %d puts: get(%d) = %v, %v; want kept %v with %d", i+1, k, got.newest, ok, want, values[key])
				}
			}
		}
	})
}
