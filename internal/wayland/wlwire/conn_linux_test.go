package wlwire

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pair is a Conn on one end of a socketpair and the fake compositor's end.
func pair(t *testing.T, timeout time.Duration) (*Conn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]*net.UnixConn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = c.(*net.UnixConn)
	}
	t.Cleanup(func() { ends[1].Close() })
	c := &Conn{c: ends[0], path: "socketpair", next: DisplayID + 1, Timeout: timeout}
	t.Cleanup(func() { c.Close() })
	return c, ends[1]
}

// answerSyncs is a compositor that answers each wl_display.sync with its
// callback's done, and reports every other request on others.
func answerSyncs(srv *net.UnixConn, others chan<- Message) {
	var in []byte
	buf := make([]byte, MaxMessage)
	for {
		n, err := srv.Read(buf)
		if err != nil {
			close(others)
			return
		}
		in = append(in, buf[:n]...)
		for {
			m, n, err := Parse(in)
			if err != nil || n == 0 {
				break
			}
			in = in[n:]
			if m.Object == DisplayID && m.Opcode == displaySync {
				out, _ := Message{Object: NewReader(m.Args).Uint(), Opcode: callbackDone, Args: Args{}.Uint(0)}.Append(nil)
				srv.Write(out)
				continue
			}
			m.Args = append([]byte(nil), m.Args...)
			others <- m
		}
	}
}

// TestDeadlineEndsWithItsRead: a Roundtrip's deadline bounds its own
// read only. Once it has passed, the non-blocking read that follows every
// key (Drain) and the next request (Send) still work, as recv types the
// next key after any pause (DESIGN.md, the wayland injector's timeouts).
func TestDeadlineEndsWithItsRead(t *testing.T) {
	const timeout = 20 * time.Millisecond
	c, srv := pair(t, timeout)
	others := make(chan Message, 10)
	go answerSyncs(srv, others)
	if err := c.Roundtrip(nil); err != nil {
		t.Fatalf("Roundtrip: %v", err)
	}
	// Past the Roundtrip's deadline (its Timeout), and past Send's.
	time.Sleep(3 * timeout)
	if err := c.Drain(nil); err != nil {
		t.Fatalf("Drain after the Roundtrip's deadline passed: %v", err)
	}
	if err := c.Send(7, 1, Args{}.Uint(42)); err != nil {
		t.Fatalf("Send after the deadlines passed: %v", err)
	}
	if m := <-others; m.Object != 7 || m.Opcode != 1 || NewReader(m.Args).Uint() != 42 {
		t.Errorf("the compositor got %+v, want object 7 opcode 1 arg 42", m)
	}
	time.Sleep(3 * timeout)
	if err := c.Drain(nil); err != nil {
		t.Fatalf("Drain after a Send's deadline passed: %v", err)
	}
	if err := c.Roundtrip(nil); err != nil {
		t.Fatalf("a second Roundtrip: %v", err)
	}
}

// TestRoundtripTimesOut: a compositor that never answers a Roundtrip makes
// it fail after Timeout, not hang; the connection then still reads what
// comes later without waiting.
func TestRoundtripTimesOut(t *testing.T) {
	const timeout = 20 * time.Millisecond
	c, srv := pair(t, timeout)
	start := time.Now()
	err := c.Roundtrip(nil)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Roundtrip with no answer = %v, want a deadline exceeded", err)
	}
	if d := time.Since(start); d < timeout {
		t.Errorf("Roundtrip gave up after %v, before its Timeout %v", d, timeout)
	}
	time.Sleep(3 * timeout)
	if err := c.Drain(nil); err != nil {
		t.Fatalf("Drain after a Roundtrip timed out: %v", err)
	}
	// An event sent later is read by the next Drain (a stream socket's
	// write has queued the bytes at the reader when it returns).
	out, _ := Message{Object: 9, Opcode: 2, Args: Args{}.Uint(5)}.Append(nil)
	if _, err := srv.Write(out); err != nil {
		t.Fatal(err)
	}
	var got []Message
	if err := c.Drain(func(m Message) error { got = append(got, m); return nil }); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if len(got) != 1 || got[0].Object != 9 || got[0].Opcode != 2 {
		t.Errorf("Drain handed %+v, want the one event object 9 opcode 2", got)
	}
}
