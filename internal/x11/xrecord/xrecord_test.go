package xrecord

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/internal/testutil/xvfbtest"
	"github.com/keyrelay/keyrelay/internal/x11/xquiet"
)

func TestParseDisplay(t *testing.T) {
	for _, tc := range []struct{ in, network, addr, host, num string }{
		{":0", "unix", "/tmp/.X11-unix/X0", "", "0"},
		{":12.1", "unix", "/tmp/.X11-unix/X12", "", "12"},
		{"unix:3", "unix", "/tmp/.X11-unix/X3", "", "3"},
		{"/tmp/launch-x/org.x:0", "unix", "/tmp/launch-x/org.x:0", "", "0"},
		{"mediapc:1", "tcp", "mediapc:6001", "mediapc", "1"},
		{"10.0.0.7:0.0", "tcp", "10.0.0.7:6000", "10.0.0.7", "0"},
		{"tcp/box:2", "tcp", "box:6002", "box", "2"},
	} {
		d, err := ParseDisplay(tc.in)
		if err != nil || d.Network != tc.network || d.Address != tc.addr || d.Host != tc.host || d.Number != tc.num {
			t.Errorf("ParseDisplay(%q) = %+v, %v", tc.in, d, err)
		}
	}
	for _, bad := range []string{"", "0", ":x", ":", "host:99999"} {
		if _, err := ParseDisplay(bad); err == nil {
			t.Errorf("ParseDisplay(%q) accepted", bad)
		}
	}
}

// xauthEntry encodes one Xauthority entry.
func xauthEntry(family uint16, addr, num, name string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, family)
	for _, f := range [][]byte{[]byte(addr), []byte(num), []byte(name), data} {
		binary.Write(&b, binary.BigEndian, uint16(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

func TestFindCookie(t *testing.T) {
	host, _ := os.Hostname()
	cookie := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	file := bytes.Join([][]byte{
		xauthEntry(familyLocal, host, "1", "MIT-MAGIC-COOKIE-1", cookie(1)),
		xauthEntry(familyLocal, "otherhost", "0", "MIT-MAGIC-COOKIE-1", cookie(9)),
		xauthEntry(familyLocal, host, "0", "XDM-AUTHORIZATION-1", cookie(8)),
		xauthEntry(familyLocal, host, "0", "MIT-MAGIC-COOKIE-1", cookie(2)),
		xauthEntry(familyInternet, string([]byte{10, 0, 0, 7}), "0", "MIT-MAGIC-COOKIE-1", cookie(3)),
	}, nil)
	path := filepath.Join(t.TempDir(), "Xauthority")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XAUTHORITY", path)
	for _, tc := range []struct {
		display string
		want    byte // 0: none
	}{{":0", 2}, {":1", 1}, {":5", 0}, {"10.0.0.7:0", 3}, {"10.0.0.8:0", 0}} {
		d, _ := ParseDisplay(tc.display)
		_, got := findCookie(d)
		if want := cookie(tc.want); tc.want == 0 && got != nil || tc.want != 0 && !bytes.Equal(got, want) {
			t.Errorf("cookie for %s: %v, want the one marked %d", tc.display, got, tc.want)
		}
	}
	if es := ParseXauthority(append(file, 0, 1, 0)); len(es) != 5 {
		t.Errorf("a truncated last entry: %d entries, want the 5 whole ones", len(es))
	}
}

func TestParseEvents(t *testing.T) {
	ev := func(typ, kc byte, time uint32) []byte {
		b := make([]byte, 32)
		b[0], b[1] = typ, kc
		binary.LittleEndian.PutUint32(b[4:], time)
		return b
	}
	data := bytes.Join([][]byte{ev(2, 38, 7), ev(6, 0, 8) /* motion */, ev(3|0x80, 38, 9) /* sent by SendEvent */, ev(2, 50, 10)[:20]}, nil)
	got := ParseEvents(data)
	want := []Key{{38, true, 7}, {38, false, 9}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ParseEvents = %+v, want %+v", got, want)
	}
}

// TestStreamSkipsEvents: events on the data connection (the root window's
// keys, MappingNotify, a generic event longer than 32 bytes) are dropped,
// and the key events of the RECORD replies around them come in order.
func TestStreamSkipsEvents(t *testing.T) {
	ev := func(typ, kc byte) []byte {
		b := make([]byte, 32)
		b[0], b[1] = typ, kc
		return b
	}
	reply := func(category byte, events ...[]byte) []byte {
		b := make([]byte, 32)
		b[0], b[1] = 1, category
		body := bytes.Join(events, nil)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(body)/4))
		return append(b, body...)
	}
	generic := ev(35, 131)
	binary.LittleEndian.PutUint32(generic[4:], 2)
	generic = append(generic, 0xff, 0xff, 0xff, 0xff, 2, 38, 0, 0) // not a key
	stream := bytes.Join([][]byte{
		reply(categoryStartOfData),
		ev(2, 38), // the root window's KeyPress
		reply(categoryFromServer, ev(2, 38)),
		ev(34, 0), // MappingNotify
		generic,
		reply(categoryFromServer, ev(3, 38), ev(2, 50)),
		reply(categoryEndOfData),
	}, nil)
	client, server := net.Pipe()
	go func() { server.Write(stream); server.Close() }()
	s := &Stream{data: client, in: bufio.NewReader(client)}
	var got []string
	for {
		k, err := s.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("Next: %v, want io.EOF at the end of data", err)
			}
			break
		}
		got = append(got, fmt.Sprintf("%s%d", map[bool]string{true: "+", false: "-"}[k.Down], k.Keycode))
	}
	if strings.Join(got, " ") != "+38 -38 +50" {
		t.Errorf("recorded %v, want +38 -38 +50", got)
	}
}

func FuzzParseEvents(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Total: any bytes give at most one key per whole 32-byte event,
		// each from a KeyPress or KeyRelease.
		ks := ParseEvents(b)
		if len(ks) > len(b)/32 {
			t.Fatalf("%d events from %d bytes", len(ks), len(b))
		}
		for i, k := range ks {
			if k.Keycode != b[32*i+1] && len(ks) == len(b)/32 {
				t.Fatalf("event %d: keycode %d, bytes say %d", i, k.Keycode, b[32*i+1])
			}
		}
	})
}

// TestRecordKeys: on an Xvfb with access control (a cookie, -auth), Dial
// finds the display's cookie in XAUTHORITY, and a Stream records the keys
// another client presses, in order, until Close ends it with io.EOF.
func TestRecordKeys(t *testing.T) {
	xquiet.Quiet()
	cookie := bytes.Repeat([]byte{0x5a}, 16)
	auth := filepath.Join(t.TempDir(), "Xauthority")
	if err := os.WriteFile(auth, xauthEntry(familyWild, "", "", "MIT-MAGIC-COOKIE-1", cookie), 0o600); err != nil {
		t.Fatal(err)
	}
	display := xvfbtest.Start(t, "-auth", auth)
	t.Setenv("XAUTHORITY", filepath.Join(t.TempDir(), "none"))
	if _, err := Dial(display); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Dial without the cookie: %v, want a refusal", err)
	}
	t.Setenv("XAUTHORITY", auth)
	s, typer, root := recording(t, display)
	for _, e := range []struct {
		kc   byte
		down bool
	}{{38, true}, {50, true}, {56, true}, {56, false}, {50, false}, {38, false}} {
		typ := byte(xproto.KeyRelease)
		if e.down {
			typ = xproto.KeyPress
		}
		xtest.FakeInput(typer, typ, e.kc, 0, root, 0, 0, 0)
	}
	xproto.GetInputFocus(typer).Reply()
	got := make(chan []Key, 1)
	go func() {
		var ks []Key
		for len(ks) < 6 {
			k, err := s.Next()
			if err != nil {
				break
			}
			ks = append(ks, k)
		}
		got <- ks
	}()
	select {
	case ks := <-got:
		var s []string
		for _, k := range ks {
			s = append(s, fmt.Sprintf("%s%d", map[bool]string{true: "+", false: "-"}[k.Down], k.Keycode))
		}
		if strings.Join(s, " ") != "+38 +50 +56 -56 -50 -38" {
			t.Errorf("recorded %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing recorded")
	}
	s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Next after Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Close")
	}
}

// TestRecordPromptly: a key that no client receives (a bare Xvfb: nothing
// has the focus) is recorded at once, not when some other client next gets
// output from the server; the client pressing it makes no round trip.
// recording opens a RECORD stream of display's keys (its control
// connection closed at the test's end) and a connection that types on it
// with XTEST, with its root window.
func recording(t *testing.T, display string) (*Stream, *xgb.Conn, xproto.Window) {
	t.Helper()
	ctrl, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.Close)
	s, err := Open(ctrl, display)
	if err != nil {
		t.Fatal(err)
	}
	typer, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typer.Close)
	if err := xtest.Init(typer); err != nil {
		t.Fatal(err)
	}
	return s, typer, xproto.Setup(typer).DefaultScreen(typer).Root
}

func TestRecordPromptly(t *testing.T) {
	xquiet.Quiet()
	display := xvfbtest.Start(t)
	s, typer, root := recording(t, display)
	defer s.Close()
	got := make(chan Key)
	go func() {
		for {
			k, err := s.Next()
			if err != nil {
				return
			}
			got <- k
		}
	}()
	for i, down := range []bool{true, false, true, false} {
		typ := byte(xproto.KeyRelease)
		if down {
			typ = xproto.KeyPress
		}
		xtest.FakeInput(typer, typ, 38, 0, root, 0, 0, 0)
		select {
		case k := <-got:
			if k.Keycode != 38 || k.Down != down {
				t.Fatalf("key %d: recorded %+v, want keycode 38 down %v", i, k, down)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("key %d (down %v) not recorded within 2 s", i, down)
		}
	}
}

// TestDataConnectionGetsOnlyTheRecording (DESIGN.md, "RECORD's recording
// client gets only the recording"): while keys are pressed, another
// client remaps keycodes (as xmodmap and recv's spare keycodes do) and
// the keys reach the root window (which the flush connection listens to),
// yet the data connection reads no event, only the recording.
func TestDataConnectionGetsOnlyTheRecording(t *testing.T) {
	xquiet.Quiet()
	display := xvfbtest.Start(t)
	s, typer, root := recording(t, display)
	defer s.Close()
	setup := xproto.Setup(typer)
	km, err := xproto.GetKeyboardMapping(typer, setup.MaxKeycode, 1).Reply()
	if err != nil {
		t.Fatal(err)
	}
	syms := make([]xproto.Keysym, km.KeysymsPerKeycode)
	for i, sym := range []xproto.Keysym{0x6d6, 0} { // ж, then none
		syms[0] = sym
		if err := xproto.ChangeKeyboardMappingChecked(typer, 1, setup.MaxKeycode, km.KeysymsPerKeycode, syms).Check(); err != nil {
			t.Fatal(err)
		}
		xtest.FakeInput(typer, xproto.KeyPress, 38, 0, root, 0, 0, 0)
		xtest.FakeInput(typer, xproto.KeyRelease, 38, 0, root, 0, 0, 0)
		xproto.GetInputFocus(typer).Reply()
		for _, down := range []bool{true, false} {
			k, err := nextWithin(s, 5*time.Second)
			if err != nil {
				t.Fatalf("change %d: %v", i, err)
			}
			if k.Keycode != 38 || k.Down != down {
				t.Fatalf("change %d: recorded %+v, want keycode 38 down %v", i, k, down)
			}
		}
	}
	if n := s.events.Load(); n != 0 {
		t.Errorf("the data connection read %d events, want none", n)
	}
}

// nextWithin is s.Next, failing after timeout.
func nextWithin(s *Stream, timeout time.Duration) (Key, error) {
	type result struct {
		k   Key
		err error
	}
	got := make(chan result, 1)
	go func() {
		k, err := s.Next()
		got <- result{k, err}
	}()
	select {
	case r := <-got:
		return r.k, r.err
	case <-time.After(timeout):
		return Key{}, fmt.Errorf("nothing recorded within %v", timeout)
	}
}

func FuzzParseXauthority(f *testing.F) {
	f.Add(xauthEntry(familyLocal, "host", "0", "MIT-MAGIC-COOKIE-1", bytes.Repeat([]byte{1}, 16)))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Total, and every entry read re-encodes to a prefix of the input.
		var re []byte
		for _, e := range ParseXauthority(b) {
			re = append(re, xauthEntry(e.Family, e.Address, e.Number, e.Name, e.Data)...)
		}
		if !bytes.HasPrefix(b, re) {
			t.Fatalf("entries re-encode to % x, not a prefix of % x", re, b)
		}
	})
}

func FuzzParseDisplay(f *testing.F) {
	for _, s := range []string{":0", "host:1.2", "/tmp/x:3", "tcp/h:4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDisplay(s)
		if err == nil && (d.Network == "" || d.Address == "" || d.Number == "") {
			t.Fatalf("ParseDisplay(%q) = %+v with no error", s, d)
		}
	})
}
