package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// goldenNotice is PROTOCOL.md §10's example: a version-4 receiver answers
// the version-3 packet of §6.
var goldenNotice = Notice{Version: 4, Session: 0x0123456789ABCDEF, Counter: 42, Speaks: []uint8{4}}

// TestNoticeGolden: the example of PROTOCOL.md §10 decodes field by field
// and re-encodes to the same 24 bytes.
func TestNoticeGolden(t *testing.T) {
	b := readHex(t, "../testdata/golden/notice.hex")
	var n Notice
	if err := ParseNotice(b, &n); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(n) != fmt.Sprint(goldenNotice) {
		t.Errorf("decoded %+v\nwant    %+v", n, goldenNotice)
	}
	enc, err := goldenNotice.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Errorf("encoded % x\nwant    % x", enc, b)
	}
	if goldenNotice.Len() != len(b) || len(b) != 24 {
		t.Errorf("Len() = %d, file %d bytes, PROTOCOL.md §10 says 24", goldenNotice.Len(), len(b))
	}
}

// TestNoticeDecodeErrors: one case per rule of PROTOCOL.md §10, for a
// notice of this version and of others (the layout is the same in all).
func TestNoticeDecodeErrors(t *testing.T) {
	echo := "0123456789abcdef 000000000000002a"
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"version 4 speaks 4", "4b52 04 05 00 00" + echo + "01 04", nil},
		{"version 250 speaks 7 and 250", "4b52 fa 05 00 00" + echo + "02 07fa", nil},
		{"echoed zeros", "4b52 04 05 00 00 0000000000000000 0000000000000000 01 04", nil},
		{"all 255 versions", "4b52 ff 05 00 00" + echo + "ff" + allVersions(), nil},
		{"own version not listed", "4b52 05 05 00 00" + echo + "01 04", ErrNotice},
		{"version 0", "4b52 00 05 00 00" + echo + "01 00", ErrNotice},
		{"descending", "4b52 05 05 00 00" + echo + "02 0504", ErrNotice},
		{"twice the same", "4b52 05 05 00 00" + echo + "02 0505", ErrNotice},
		{"no version listed", "4b52 05 05 00 00" + echo + "00", ErrTruncated},
		{"count 0 before a version", "4b52 05 05 00 00" + echo + "00 05", ErrTrailing},
		{"count beyond the bytes", "4b52 05 05 00 00" + echo + "02 05", ErrTruncated},
		{"trailing byte", "4b52 05 05 00 00" + echo + "01 05 00", ErrTrailing},
		{"header only", "4b52 05 05 00 00" + echo, ErrTruncated},
		{"flags set", "4b52 05 05 01 00" + echo + "01 05", ErrFlags},
		{"reserved set", "4b52 05 05 00 01" + echo + "01 05", ErrFlags},
		{"a queue packet", "4b52 05 01 00 00" + echo + "01 05", ErrType},
		{"type 3", "4b52 05 03 00 00" + echo + "01 05", ErrType},
		{"bad magic", "4b53 05 05 00 00" + echo + "01 05", ErrMagic},
		{"too large", "4b52 05 05 00 00" + echo + "01 05" + strings.Repeat("00", MaxPacketSize), ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n Notice
			err := ParseNotice(unhex(t, tt.hex), &n)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("ParseNotice = %v, want %v", err, tt.want)
			}
		})
	}
}

func allVersions() string {
	var s strings.Builder
	for v := 1; v <= 255; v++ {
		fmt.Fprintf(&s, "%02x", v)
	}
	return s.String()
}

// TestNoticeTruncatedPrefixes: every proper prefix of a notice is
// ErrTruncated, and an extended one ErrTrailing (PROTOCOL.md §10).
func TestNoticeTruncatedPrefixes(t *testing.T) {
	b, _ := (&Notice{Version: 5, Session: 1, Counter: 2, Speaks: []uint8{4, 5}}).Append(nil)
	var n Notice
	for i := range len(b) {
		if err := ParseNotice(b[:i], &n); !errors.Is(err, ErrTruncated) {
			t.Errorf("prefix of %d bytes: %v, want ErrTruncated", i, err)
		}
	}
	if err := ParseNotice(append(b, 0), &n); !errors.Is(err, ErrTrailing) {
		t.Errorf("extended notice: %v, want ErrTrailing", err)
	}
}

// TestNoticeEncodeRefusesInvalid: the encoder never makes what the decoder
// rejects (PROTOCOL.md §10).
func TestNoticeEncodeRefusesInvalid(t *testing.T) {
	for name, n := range map[string]Notice{
		"no version":           {Version: 4},
		"own not listed":       {Version: 4, Speaks: []uint8{3}},
		"descending":           {Version: 4, Speaks: []uint8{4, 3}},
		"version 0":            {Version: 0, Speaks: []uint8{0}},
		"more than 255 listed": {Version: 1, Speaks: make([]uint8, 256)},
	} {
		if b, err := n.Append([]byte("x")); err == nil || string(b) != "x" {
			t.Errorf("%s: Append = % x, %v; want an error and the buffer unchanged", name, b, err)
		}
	}
}

// TestNoticeRoundTrip: any valid notice of any version encodes in Len
// bytes and decodes to itself.
func TestNoticeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		set := rapid.SliceOfNDistinct(rapid.Uint8Range(1, 255), 1, 255, rapid.ID[uint8]).Draw(t, "speaks")
		slices.Sort(set)
		n := Notice{
			Version: rapid.SampledFrom(set).Draw(t, "version"),
			Session: rapid.Uint64().Draw(t, "session"),
			Counter: rapid.Uint64().Draw(t, "counter"),
			Speaks:  set,
		}
		b, err := n.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n.Len() {
			t.Fatalf("len %d, Len() %d", len(b), n.Len())
		}
		var got Notice
		if err := ParseNotice(b, &got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(n) {
			t.Fatalf("round trip: %+v != %+v", got, n)
		}
	})
}

// TestNoticeAnswers (PROTOCOL.md §10): this keyrelay's notice answering a
// packet of another version names Version, echoes the packet's session id
// and counter, and is never larger than the packet; a notice is never
// answered, nor a packet shorter than the notice would be.
func TestNoticeAnswers(t *testing.T) {
	for _, other := range []uint8{Version + 1, Version - 1} {
		cause, _ := golden.Append(nil)
		cause[offVersion] = other
		b, ok := AppendNoticeFor([]byte("x"), cause)
		if !ok || !bytes.HasPrefix(b, []byte("x")) {
			t.Fatalf("version %d: no notice (% x)", other, b)
		}
		var n Notice
		if err := ParseNotice(b[1:], &n); err != nil {
			t.Fatal(err)
		}
		want := Notice{Version: Version, Session: golden.Header.Session, Counter: golden.Header.Counter, Speaks: []uint8{Version}}
		if fmt.Sprint(n) != fmt.Sprint(want) {
			t.Errorf("version %d: notice %+v, want %+v", other, n, want)
		}
		if len(b)-1 > len(cause) {
			t.Errorf("a %d-byte notice answers a %d-byte packet", len(b)-1, len(cause))
		}
	}
	short := make([]byte, HeaderLen+1)
	copy(short, "KR")
	short[offVersion] = Version + 1
	if b, ok := AppendNoticeFor(nil, short); ok {
		t.Errorf("a %d-byte packet got a %d-byte notice", len(short), len(b))
	}
	if _, ok := AppendNoticeFor(nil, append(short, 0)); !ok {
		t.Errorf("a packet as long as the notice got none")
	}
	notice, _ := (&Notice{Version: Version + 1, Speaks: []uint8{Version + 1}}).Append(nil)
	notice = append(notice, make([]byte, 100)...) // larger, and still a notice
	if b, ok := AppendNoticeFor(nil, notice); ok {
		t.Errorf("a notice was answered with % x", b)
	}
}

// TestNoticeIsNoQueueOrAck: a notice of this very version is neither a
// queue nor an ack (type 5 is its own, PROTOCOL.md §10).
func TestNoticeIsNoQueueOrAck(t *testing.T) {
	b, _ := (&Notice{Version: Version, Session: 1, Counter: 1, Speaks: []uint8{Version}}).Append(nil)
	var q Queue
	var a Ack
	if err := ParseQueue(b, &q); !errors.Is(err, ErrType) {
		t.Errorf("ParseQueue(notice) = %v, want ErrType", err)
	}
	if err := ParseAck(b, &a); !errors.Is(err, ErrType) {
		t.Errorf("ParseAck(notice) = %v, want ErrType", err)
	}
	if !IsNotice(b) || IsNotice(b[:3]) {
		t.Errorf("IsNotice")
	}
}

// TestOtherVersion: a keyrelay packet of another version is recognised by
// its magic and version byte alone, short or not a notice; this version,
// another magic and oversized datagrams are not (PROTOCOL.md §10).
func TestOtherVersion(t *testing.T) {
	b, _ := golden.Append(nil)
	if _, ok := OtherVersion(b); ok {
		t.Errorf("a packet of this version is of another")
	}
	for _, v := range []uint8{Version + 1, Version - 1} {
		o := bytes.Clone(b)
		o[offVersion] = v
		for _, p := range [][]byte{o, o[:3], o[:HeaderLen]} {
			if got, ok := OtherVersion(p); !ok || got != v {
				t.Errorf("%d bytes of version %d: OtherVersion = %d, %v", len(p), v, got, ok)
			}
		}
		if _, ok := OtherVersion(append(o, make([]byte, MaxPacketSize)...)); ok {
			t.Errorf("an oversized datagram counts as another version")
		}
		o[1] = 'S'
		if _, ok := OtherVersion(o); ok {
			t.Errorf("bad magic counts as another version")
		}
	}
	if _, ok := OtherVersion([]byte("KR")); ok {
		t.Errorf("two bytes count as another version")
	}
}

func TestDescribeVersions(t *testing.T) {
	for _, tc := range []struct {
		vs   []uint8
		want string
	}{{[]uint8{5}, "version 5"}, {[]uint8{4, 5}, "versions 4 and 5"}, {[]uint8{4, 5, 7}, "versions 4, 5 and 7"}} {
		if got := DescribeVersions(tc.vs); got != tc.want {
			t.Errorf("DescribeVersions(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
}

// FuzzParseNotice: decoding is total and canonical (PROTOCOL.md §10): a
// notice that decodes re-encodes to the same bytes.
func FuzzParseNotice(f *testing.F) {
	b, _ := goldenNotice.Append(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var n Notice
		if err := ParseNotice(b, &n); err != nil {
			return
		}
		out, err := n.Append(nil)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("notice % x re-encodes to % x (%v)", b, out, err)
		}
	})
}

// TestSpokenBy (PROTOCOL.md §10): what a sender reads from a packet of
// another version answering its session: a notice's list, or another
// packet's version byte; nothing from a packet of this version, another
// session's, a malformed notice or one that lists this version.
func TestSpokenBy(t *testing.T) {
	const session = 0x0123456789ABCDEF
	mk := func(n Notice) []byte {
		b, err := n.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other, _ := golden.Append(nil)
	other[offVersion] = Version + 1
	tests := []struct {
		name string
		b    []byte
		want []uint8 // nil: not ok
	}{
		{"notice of the next version", mk(Notice{Version: Version + 1, Session: session, Speaks: []uint8{Version + 1}}), []uint8{Version + 1}},
		{"notice of two older versions", mk(Notice{Version: Version - 1, Session: session, Speaks: []uint8{Version - 2, Version - 1}}), []uint8{Version - 2, Version - 1}},
		{"queue packet of the next version", other, []uint8{Version + 1}},
		{"notice for another session", mk(Notice{Version: Version + 1, Session: session + 1, Speaks: []uint8{Version + 1}}), nil},
		{"notice listing this version", mk(Notice{Version: Version + 1, Session: session, Speaks: []uint8{Version, Version + 1}}), nil},
		{"notice with a trailing byte", append(mk(Notice{Version: Version + 1, Session: session, Speaks: []uint8{Version + 1}}), 0), nil},
		{"notice of this version", mk(Notice{Version: Version, Session: session, Speaks: []uint8{Version}}), nil},
		{"short packet of the next version", other[:HeaderLen-1], nil},
	}
	for _, tt := range tests {
		got, ok := SpokenBy(tt.b, session)
		if ok != (tt.want != nil) || fmt.Sprint(got) != fmt.Sprint(tt.want) && tt.want != nil {
			t.Errorf("%s: SpokenBy = %v, %v; want %v", tt.name, got, ok, tt.want)
		}
	}
}
