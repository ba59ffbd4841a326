package inject

import (
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/eventqueue"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/wire"
)

// keycodemapdbEvdev is every evdev code but 0 (KEY_RESERVED) of the
// keycodemapdb copy the keys table is generated from.
func keycodemapdbEvdev(t *testing.T) []uint16 {
	t.Helper()
	f, err := os.Open("../keys/testdata/keycodemapdb/keymaps.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range rows[0] {
		if h == "Linux Keycode" {
			col = i
		}
	}
	if col < 0 {
		t.Fatal("no Linux Keycode column")
	}
	seen := map[uint16]bool{}
	var out []uint16
	for _, r := range rows[1:] {
		ev, err := strconv.ParseUint(r[col], 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		if ev != 0 && !seen[uint16(ev)] {
			seen[uint16(ev)] = true
			out = append(out, uint16(ev))
		}
	}
	return out
}

// TestEveryEvdevCodeRoundTrips (PROTOCOL.md §3, §3.1: every key relayed as
// itself): every evdev code keycodemapdb maps is a key at the sender
// (keys.FromEvdev, which the evdev and X11 sources relay), that key crosses
// the wire in a queue packet unchanged, and the receiver presses the same
// key: X keycode evdev + 8 (--inject x11; X keycodes end at 255) and the
// same evdev code (--inject uinput, up to the codes bendahl/uinput takes).
func TestEveryEvdevCodeRoundTrips(t *testing.T) {
	codes := keycodemapdbEvdev(t)
	if len(codes) < 450 {
		t.Fatalf("only %d evdev codes in keycodemapdb", len(codes))
	}
	x := &X11{minKC: 8, maxKC: 255} // the keycode range of every X server
	xkeys, evdevOnly := 0, 0
	for _, ev := range codes {
		code, ok := keys.FromEvdev(ev)
		if !ok {
			t.Errorf("evdev %d: no key to send", ev)
			continue
		}
		if code.IsEvdev() {
			evdevOnly++
		}
		q := wire.Queue{
			Header: wire.Header{Type: wire.TypeQueue, Flags: wire.FlagOneWay, Session: 1, Counter: 1},
			Events: []eventqueue.Event{{Key: keys.Key(code), Kind: eventqueue.Down, Stamp: 1}},
		}
		b, err := q.Append(nil)
		if err != nil {
			t.Errorf("evdev %d, key %v: encoding: %v", ev, code, err)
			continue
		}
		var got wire.Queue
		if err := wire.ParseQueue(b, &got); err != nil {
			t.Errorf("evdev %d, key %v: decoding: %v", ev, code, err)
			continue
		}
		k := got.Events[0].Key
		rc, ok := k.Code()
		if !ok || rc != code {
			t.Errorf("evdev %d: sent %v, received %v", ev, code, k)
			continue
		}
		kc, ok := x.Keycode(rc)
		if want := int(ev) + 8; want <= 255 {
			xkeys++
			if !ok || int(kc) != want {
				t.Errorf("evdev %d (%v): X keycode %d, %v; want %d", ev, rc, kc, ok, want)
			}
		} else if ok {
			t.Errorf("evdev %d (%v): X keycode %d, beyond X's 255", ev, rc, kc)
		}
		uc, ok := EvdevCode(rc)
		if ev <= MaxUinputKey && (!ok || uc != int(ev)) || ev > MaxUinputKey && ok {
			t.Errorf("evdev %d (%v): uinput presses %d, %v", ev, rc, uc, ok)
		}
	}
	// Every X keycode but 8 (evdev 0) is a key: 247 of them.
	if xkeys != 247 || evdevOnly < 250 {
		t.Errorf("%d keys with an X keycode (want 247), %d without a HID usage", xkeys, evdevOnly)
	}
	t.Logf("%d evdev codes, %d with an X keycode, %d without a HID usage", len(codes), xkeys, evdevOnly)
}

// TestSpareRank: recv lends the keycodes of no named evdev key first, then
// those of the keys without a HID usage (PROTOCOL.md §3.1), which a
// keyboard rarely has, and the keyboard page's last, whose return costs a
// remapping when a relayed keyboard presses them.
func TestSpareRank(t *testing.T) {
	for _, tc := range []struct {
		kc   byte
		rank int
	}{
		{92, 0},  // evdev 84, <LVL3>: no KEY_ name
		{203, 0}, // evdev 195, Mode_switch on Xvfb's us
		{255, 0}, // evdev 247
		{190, 1}, // KEY_REDO
		{218, 1}, // KEY_PRINT
		{97, 2},  // KEY_RO, IntlRo
		{38, 2},  // KEY_A
	} {
		if got := spareRank(xproto.Keycode(tc.kc)); got != tc.rank {
			t.Errorf("spareRank(%d) = %d, want %d", tc.kc, got, tc.rank)
		}
	}
}
