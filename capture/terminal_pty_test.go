//go:build linux

package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/keyrelay/keyrelay/keys"
)

// The pty is opened with golang.org/x/sys/unix (already a dependency)
// rather than github.com/creack/pty: a dozen lines of Linux ioctls, no new
// module for a test.

// fakeTerminal plays the terminal on the master side of a pty: the source
// gets the slave side as its TTY.
type fakeTerminal struct {
	t      *testing.T
	master *os.File
	slave  *os.File

	mu     sync.Mutex
	out    bytes.Buffer  // what the source wrote to its terminal
	notify chan struct{} // a value after each write to out
}

func newFakeTerminal(t *testing.T) *fakeTerminal {
	t.Helper()
	// Non-blocking, so the os.File is pollable and Close ends a pending
	// Read.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		t.Fatalf("ptsname: %v", err)
	}
	ft := &fakeTerminal{t: t, master: os.NewFile(uintptr(fd), "/dev/ptmx"), notify: make(chan struct{}, 1)}
	ft.slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ft.master.Close()
		t.Fatalf("open slave: %v", err)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 1024)
		for {
			n, err := ft.master.Read(buf)
			if n > 0 {
				ft.mu.Lock()
				ft.out.Write(buf[:n])
				ft.mu.Unlock()
				select {
				case ft.notify <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		ft.slave.Close()
		ft.master.Close()
		<-readDone
	})
	return ft
}

// waitFor waits until the source has written s to its terminal, from byte
// from on, and returns where it ends.
func (ft *fakeTerminal) waitFor(s string, from int) int {
	ft.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		ft.mu.Lock()
		written := ft.out.String()
		ft.mu.Unlock()
		if i := strings.Index(written[from:], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-ft.notify:
		case <-deadline:
			ft.t.Fatalf("the source did not write %q; it wrote %q", s, written)
		}
	}
}

func (ft *fakeTerminal) written() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.out.String()
}

// typeIn writes what the terminal sends: keys and answers.
func (ft *fakeTerminal) typeIn(s string) {
	ft.t.Helper()
	if _, err := ft.master.WriteString(s); err != nil {
		ft.t.Fatalf("write to the pty: %v", err)
	}
}

func (ft *fakeTerminal) termios() *unix.Termios {
	ft.t.Helper()
	tio, err := unix.IoctlGetTermios(int(ft.slave.Fd()), unix.TCGETS)
	if err != nil {
		ft.t.Fatal(err)
	}
	return tio
}

// session is a Terminal source playing on a fakeTerminal.
type session struct {
	t      *testing.T
	keys   chan string
	done   chan error
	cancel context.CancelFunc
	status *lockedBuffer
}

func startSession(t *testing.T, ft *fakeTerminal) *session {
	t.Helper()
	s := &session{t: t, keys: make(chan string, 256), done: make(chan error, 1), status: &lockedBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	t.Cleanup(cancel)
	src := &Terminal{Label: "test", Status: s.status, TTY: ft.slave}
	go func() {
		s.done <- src.Play(ctx, func(k keys.Key, down bool) error {
			sign := "-"
			if down {
				sign = "+"
			}
			s.keys <- sign + k.String()
			return nil
		})
	}()
	return s
}

// expect waits for the key events want, in order.
func (s *session) expect(want ...string) {
	s.t.Helper()
	deadline := time.After(5 * time.Second)
	check := func(i int, got string) {
		if got != want[i] {
			s.t.Fatalf("key event %d: got %s, want %s (all: %v)", i, got, want[i], want)
		}
	}
	for i := 0; i < len(want); i++ {
		select {
		case got := <-s.keys:
			check(i, got)
		case err := <-s.done:
			// Play may return (Ctrl+]) with its last events still
			// buffered, and select picks at random among ready cases:
			// the events come first, the end is kept for end().
			select {
			case got := <-s.keys:
				s.done <- err
				check(i, got)
			default:
				s.t.Fatalf("the source ended (%v) before %v", err, want[i:])
			}
		case <-deadline:
			s.t.Fatalf("no key event %s within 5 s", want[i])
		}
	}
}

// expectNone checks that no key event comes for d.
func (s *session) expectNone(d time.Duration) {
	s.t.Helper()
	select {
	case got := <-s.keys:
		s.t.Fatalf("unexpected key event %s", got)
	case <-time.After(d):
	}
}

// end waits for Play to return.
func (s *session) end() error {
	s.t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(5 * time.Second):
		s.t.Fatal("the source did not end within 5 s")
		return nil
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// checkRestored: raw mode is off again, as it was before the session.
func checkRestored(t *testing.T, before, after *unix.Termios) {
	t.Helper()
	if after.Lflag&(unix.ICANON|unix.ECHO) != before.Lflag&(unix.ICANON|unix.ECHO) || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal not restored: lflag %#x iflag %#x oflag %#x, was %#x %#x %#x",
			after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag)
	}
}

// TestTerminalKittyPty: on a terminal that answers the kitty query, the
// source pushes the flags and relays true presses and releases — a held key
// stays down until the terminal reports its release — and pops the flags
// when Ctrl+] ends it (Terminal's doc).
func TestTerminalKittyPty(t *testing.T) {
	ft := newFakeTerminal(t)
	before := ft.termios()
	s := startSession(t, ft)

	at := ft.waitFor("\x1b[?u\x1b[c", 0)
	ft.typeIn("\x1b[?0u\x1b[?62;22c")
	at = ft.waitFor("\x1b[>27u", at)
	at = ft.waitFor("\x1b[?u", at)
	ft.typeIn("\x1b[?27u")

	ft.typeIn("\x1b[97;;97u")
	s.expect("+'a'")
	s.expectNone(200 * time.Millisecond) // held: no key-up yet
	ft.typeIn("\x1b[97;1:3u")
	s.expect("-'a'")

	ft.typeIn("\x1b[57441;2u\x1b[97;2;65u\x1b[97;2:1;65u\x1b[97;2:2;65u\x1b[97;2:3u\x1b[57441;1:3u")
	s.expect("+ShiftLeft", "+'A'", "-'A'", "-ShiftLeft")
	ft.typeIn("\x1b[57442;5u\x1b[99;5u\x1b[99;5:3u")
	s.expect("+ControlLeft", "+'c'", "-'c'")
	ft.typeIn("\x1b[93;5u") // Ctrl+], Ctrl still held
	s.expect("-ControlLeft")
	if err := s.end(); err != nil {
		t.Fatalf("Play after Ctrl+] = %v, want nil", err)
	}
	ft.waitFor("\x1b[<u", at)
	checkRestored(t, before, ft.termios())
	if st := s.status.String(); !strings.Contains(st, "Ctrl+] ends") || !strings.Contains(st, "kitty keyboard: presses and releases") {
		t.Errorf("status %q lacks the mode or Ctrl+] ends", st)
	}
}

// TestTerminalKittyPtyCancel: when ctx ends, the source releases what it
// holds, pops the flags and restores the terminal (Terminal's doc).
func TestTerminalKittyPtyCancel(t *testing.T) {
	ft := newFakeTerminal(t)
	before := ft.termios()
	s := startSession(t, ft)
	at := ft.waitFor("\x1b[?u\x1b[c", 0)
	ft.typeIn("\x1b[?1u\x1b[?62c")
	at = ft.waitFor("\x1b[>27u\x1b[?u", at)
	ft.typeIn("\x1b[?27u\x1b[57443;3u\x1b[120;3u")
	s.expect("+AltLeft", "+'x'")
	s.cancel()
	s.expect("-'x'", "-AltLeft")
	if err := s.end(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Play after cancel = %v, want context.Canceled", err)
	}
	ft.waitFor("\x1b[<u", at)
	checkRestored(t, before, ft.termios())
}

// TestTerminalKittyPartialFlags: a terminal that takes only some of the
// flags (no release events) gets them popped, and taps (Terminal's doc:
// never a key held forever).
func TestTerminalKittyPartialFlags(t *testing.T) {
	ft := newFakeTerminal(t)
	s := startSession(t, ft)
	at := ft.waitFor("\x1b[?u\x1b[c", 0)
	ft.typeIn("\x1b[?0u\x1b[?62c")
	at = ft.waitFor("\x1b[>27u\x1b[?u", at)
	ft.typeIn("\x1b[?1u")
	at = ft.waitFor("\x1b[<u", at)
	ft.typeIn("\x1b[99;5u") // Ctrl+C, disambiguated, as taps
	s.expect("+ControlLeft", "+'c'", "-'c'", "-ControlLeft")
	ft.typeIn("\x1d")
	if err := s.end(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(ft.written()[at:], "\x1b[<u"); n != 0 {
		t.Errorf("flags popped %d more times at exit", n)
	}
}

// TestTerminalLegacyPty: a terminal that answers only the device attributes
// query, or nothing at all, gets taps and no kitty flags (Terminal's doc).
func TestTerminalLegacyPty(t *testing.T) {
	for _, answer := range []string{"\x1b[?1;2c", ""} {
		t.Run(fmt.Sprintf("answer %q", answer), func(t *testing.T) {
			ft := newFakeTerminal(t)
			before := ft.termios()
			s := startSession(t, ft)
			ft.waitFor("\x1b[?u\x1b[c", 0)
			ft.typeIn(answer)
			ft.typeIn("é\x1b[1;5A\x03")
			s.expect("+'é'", "-'é'", "+ControlLeft", "+ArrowUp", "-ArrowUp", "-ControlLeft", "+ControlLeft", "+'c'", "-'c'", "-ControlLeft")
			// Past the query timeout: still no push.
			s.expectNone(300 * time.Millisecond)
			ft.typeIn("\x1b[Z\x1d")
			s.expect("+ShiftLeft", "+Tab", "-Tab", "-ShiftLeft")
			if err := s.end(); err != nil {
				t.Fatalf("Play after Ctrl+] = %v, want nil", err)
			}
			if w := ft.written(); strings.Contains(w, "\x1b[>") || strings.Contains(w, "\x1b[<u") {
				t.Errorf("kitty flags pushed or popped on a legacy terminal: %q", w)
			}
			checkRestored(t, before, ft.termios())
			if st := s.status.String(); !strings.Contains(st, "| taps |") || !strings.Contains(st, "Ctrl+] ends") {
				t.Errorf("status %q lacks the mode or Ctrl+] ends", st)
			}
		})
	}
}
