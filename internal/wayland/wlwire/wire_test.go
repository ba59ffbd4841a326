package wlwire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// wl_registry.bind(7, "wl_seat", 3, 4) on object 2, little-endian as on
// the machines this runs on (the wire format is the host's byte order).
const bindHex = "02000000" + "00002000" + "07000000" + "08000000" + "776c5f7365617400" + "03000000" + "04000000"

// TestAppendMessageLayout: the header is object, then opcode in the low and
// size (header included) in the high half of the second word; a string is
// its length with the NUL, then its bytes padded to 4 (package doc).
func TestAppendMessageLayout(t *testing.T) {
	if !littleEndian() {
		t.Skip("the vector is little-endian")
	}
	b, err := Message{Object: 2, Args: Args{}.Uint(7).String("wl_seat").Uint(3).Uint(4)}.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != bindHex {
		t.Errorf("bind encodes as\n% x\nwant\n%s", b, bindHex)
	}
}

func littleEndian() bool { return order.Uint16([]byte{1, 0}) == 1 }

// TestParseReadsBackWhatAppendWrote, for strings of every padding.
func TestParseReadsBackWhatAppendWrote(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
	}{{"empty", ""}, {"pad 3", "abc"}, {"pad 0", "abcdefg"}, {"pad 2", "ab"}, {"utf-8", "Grüße €"}} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Message{Object: 9, Opcode: 3, Args: Args{}.Uint(1).String(tc.s).Uint(2)}.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			m, n, err := Parse(append(b, 0xff)) // a next message's first byte
			if err != nil || n != len(b) || m.Object != 9 || m.Opcode != 3 {
				t.Fatalf("Parse = %+v, %d, %v; want object 9 opcode 3 in %d bytes", m, n, err, len(b))
			}
			r := NewReader(m.Args)
			if a, s, c := r.Uint(), r.String(), r.Uint(); a != 1 || s != tc.s || c != 2 || r.Err() != nil {
				t.Errorf("read back %d %q %d (%v)", a, s, c, r.Err())
			}
		})
	}
}

// TestParseWaitsForWholeMessage: every prefix of a message is "read more",
// never a message or an error.
func TestParseWaitsForWholeMessage(t *testing.T) {
	b, _ := hex.DecodeString(bindHex)
	for i := range len(b) {
		if m, n, err := Parse(b[:i]); n != 0 || err != nil || m.Args != nil {
			t.Errorf("Parse of %d of %d bytes = %+v, %d, %v; want 0, nil", i, len(b), m, n, err)
		}
	}
}

// TestParseRejectsBadSizes: a size below the header or not a multiple of 4
// cannot be skipped over, so it is an error.
func TestParseRejectsBadSizes(t *testing.T) {
	for _, size := range []uint32{0, 4, 9, 14} {
		b := order.AppendUint32(order.AppendUint32(nil, 1), size<<16)
		b = append(b, make([]byte, 16)...)
		if _, _, err := Parse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("size %d: err = %v, want ErrMalformed", size, err)
		}
	}
}

// TestReaderRejectsBadArguments: arguments cut short, arrays longer than
// the message, strings without their NUL.
func TestReaderRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []byte
		read func(r *Reader)
	}{
		{"uint cut short", []byte{1, 2}, func(r *Reader) { r.Uint() }},
		{"array past the end", Args{}.Uint(8).Uint(0), func(r *Reader) { r.Array() }},
		{"huge array", Args{}.Uint(0xffffffff), func(r *Reader) { r.Array() }},
		{"string without NUL", Args{}.Uint(4).Uint(0x41414141), func(r *Reader) { _ = r.String() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.args)
			tc.read(r)
			if !errors.Is(r.Err(), ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", r.Err())
			}
		})
	}
}

// TestAppendRefusesOversizedMessages: libwayland takes at most MaxMessage
// bytes.
func TestAppendRefusesOversizedMessages(t *testing.T) {
	if _, err := (Message{Args: make([]byte, MaxMessage)}).Append(nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("err = %v, want ErrMalformed", err)
	}
}

// FuzzParse: any bytes parse into messages or an error, never a panic,
// and a message re-encodes to the bytes it came from.
func FuzzParse(f *testing.F) {
	b, _ := hex.DecodeString(bindHex)
	f.Add(b)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 8, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			m, n, err := Parse(b)
			if err != nil || n == 0 {
				return
			}
			again, err := m.Append(nil)
			if err != nil || !bytes.Equal(again, b[:n]) {
				t.Fatalf("message %+v re-encodes as % x (%v), came from % x", m, again, err, b[:n])
			}
			r := NewReader(m.Args)
			for r.Err() == nil && len(r.b) > 0 {
				_ = r.String()
			}
			b = b[n:]
		}
	})
}
