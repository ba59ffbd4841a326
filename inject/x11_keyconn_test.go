package inject

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jezek/xgb/xproto"
)

// TestKeyConn: keyConn's requests byte for byte; the waiting round trip gets
// its reply (or its X error), an error of a request sent without waiting
// goes to onError, events are dropped, and a round trip ends when the
// connection does.
func TestKeyConn(t *testing.T) {
	client, server := net.Pipe()
	k := newKeyConn(client)
	errs := make(chan string, 4)
	go k.read(func(code, major byte, minor uint16) { errs <- fmt.Sprintf("%d %d.%d", code, major, minor) })

	// expect reads one request and compares it with want, in "% x".
	expect := func(want string) {
		t.Helper()
		got := make([]byte, (len(want)+1)/3)
		if _, err := io.ReadFull(server, got); err != nil {
			t.Fatal(err)
		}
		if g := fmt.Sprintf("% x", got); g != want {
			t.Errorf("request\n got % x\nwant %s", got, want)
		}
	}
	packet := func(typ, code byte, seq uint16) []byte {
		b := make([]byte, 32)
		b[0], b[1] = typ, code
		binary.LittleEndian.PutUint16(b[2:], seq)
		return b
	}

	go k.fakeInput(132, xproto.KeyPress, 38, 0x4d2)
	expect("84 02 09 00 02 26 00 00 00 00 00 00 d2 04 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00")
	go k.changeKeyboardMapping(97, []xproto.Keysym{0xdf, 0xdf})
	expect("64 01 04 00 61 02 00 00 df 00 00 00 df 00 00 00")

	// An error of the FakeInput (sequence 1), nobody waiting for it.
	e := packet(0, 2, 1)
	e[10], e[8] = 132, 2
	server.Write(e)
	if got := <-errs; got != "2 132.2" {
		t.Errorf("onError got %q, want 2 132.2", got)
	}

	// QueryPointer (sequence 3): a MappingNotify first, then its reply.
	mask := make(chan uint16)
	go func() {
		m, err := k.queryPointer(0x4d2)
		if err != nil {
			t.Error(err)
		}
		mask <- m
	}()
	expect("26 00 02 00 d2 04 00 00")
	server.Write(packet(34, 0, 2))
	r := packet(1, 1, 3)
	binary.LittleEndian.PutUint16(r[24:], xproto.ModMaskLock|xproto.ModMask2)
	server.Write(r)
	if m := <-mask; m != xproto.ModMaskLock|xproto.ModMask2 {
		t.Errorf("queryPointer mask %#x, want %#x", m, xproto.ModMaskLock|xproto.ModMask2)
	}

	// A round trip answered with an X error, then one the end of the
	// connection interrupts.
	done := make(chan error)
	go func() { done <- k.sync() }()
	expect("2b 00 01 00")
	server.Write(packet(0, 17, 4))
	if err := <-done; err == nil {
		t.Error("sync answered with an X error: no error")
	}
	go func() { done <- k.sync() }()
	expect("2b 00 01 00")
	server.Close()
	if err := <-done; !errors.Is(err, errConnEnded) {
		t.Errorf("sync on an ended connection: %v, want errConnEnded", err)
	}
	select {
	case got := <-errs:
		t.Errorf("unexpected onError %q", got)
	default:
	}
}
