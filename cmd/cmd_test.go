package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/notebuf"
	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/wire"
)

func TestSendFlags(t *testing.T) {
	var got *SendOptions
	c := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return nil })
	c.SetArgs([]string{"--to", "a.example", "--to", "[::1]:9", "--script", "-", "--queue", "32", "--interval", "50ms", "--insecure"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.To, ",") != "a.example,[::1]:9" || got.Script != "-" || got.Queue != 32 || got.Interval != 50*time.Millisecond || !got.Key.Insecure {
		t.Errorf("parsed %+v", got)
	}
}

func TestRecvFlagDefaults(t *testing.T) {
	var got *RecvOptions
	c := NewCmdRecv(IO{}, func(_ context.Context, o *RecvOptions) error { got = o; return nil })
	c.SetArgs(nil)
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	// One-way senders are refused unless asked for (PROTOCOL.md §8.6).
	if got.Listen != ":7575" || got.Inject != "auto" || got.Timeout != time.Second || !got.Balanced || got.OneWay {
		t.Errorf("defaults %+v", got)
	}
}

// TestExitCodes: usage errors exit 2 with a hint, runtime errors 1.
func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"send", "--nope"}, ExitUsage, "Run 'keyrelay send --help' for usage."},
		{[]string{"send", "extra", "--to", "x"}, ExitUsage, "unknown command"},
		{[]string{"recv", "--timeout", "1ms"}, ExitUsage, "--timeout 1ms is too short"},
		{[]string{"impair"}, ExitUsage, "no target"},
		{[]string{"impair", "--to", "127.0.0.1:1", "--loss", "2"}, ExitUsage, "loss 2 out of range"},
		{[]string{"send", "--to", "127.0.0.1", "--script", "/does/not/exist"}, ExitError, "unable to open script"},
		{[]string{"version"}, ExitOK, ""},
		// One-way only when asked for (PROTOCOL.md §8.6).
		{[]string{"send", "--insecure", "--script", "-", "--to", "255.255.255.255"}, ExitUsage, "--to 255.255.255.255:7575 is a broadcast address, which is one-way and needs --one-way: a one-way session has no handshake"},
		{[]string{"send", "--insecure", "--script", "-", "--to", "239.1.2.3:9"}, ExitUsage, "is a multicast group, which is one-way and needs --one-way"},
		{[]string{"send", "--insecure", "--script", "-", "--to", "127.0.0.1", "--feedback=false"}, ExitUsage, "--feedback=false is one-way and needs --one-way"},
	} {
		var out, errb bytes.Buffer
		code := Run(tc.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.msg)
		}
	}
}

func TestKeysListsNames(t *testing.T) {
	var out bytes.Buffer
	if code := Run([]string{"keys"}, IO{Out: &out, Err: &out}); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	for _, want := range []string{"KeyA", "0x04", "KEY_A", "ShiftLeft", "0xE1", "X KEYCODE", "ALSO"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("keys output lacks %q", want)
		}
	}
	// The X keycode --inject x11 presses: evdev + 8 (the ISO key is 94).
	// Keys without a HID usage have the code 0xE000 + evdev (PROTOCOL.md
	// §3.1): KEY_REDO, and X's <LVL3> (keycode 92), which has no KEY_ name.
	// A key is listed by the name a browser reports for it, then the
	// other names scripts take (keys/internal/keygen): Lang3 is also
	// keycodemapdb's Katakana, Enter xdotool's Return.
	for _, re := range []string{`(?m)^IntlBackslash\s+0x64\s+KEY_102ND\s+94\s`, `(?m)^-\s+0xE0B6\s+KEY_REDO\s+190\s`, `(?m)^-\s+0xE054\s+-\s+92\s`,
		`(?m)^Lang3\s+0x92\s+KEY_KATAKANA\s+98\s+XK_Katakana\s+Katakana$`, `(?m)^Enter\s+0x28\s+KEY_ENTER\s+36\s+XK_Return\s+Return$`,
		`(?m)^MediaPlay\s+0xE0CF\s+KEY_PLAY\s+215\s+-\s+-$`, `(?m)^Select\s+0x77\s+KEY_FRONT\s+140\s`, `(?m)^-\s+0xE161\s+KEY_SELECT\s+-\s+XK_Select\s+-$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("keys output lacks a line matching %s:\n%s", re, out.String())
		}
	}
}

// TestCompletions: completion scripts generate for bash, zsh and
// fish (the man pages: internal/manpage's tests).
func TestCompletions(t *testing.T) {
	for shell, mark := range map[string]string{"bash": "complete -o default", "zsh": "#compdef keyrelay", "fish": "complete -c keyrelay"} {
		var out, errb bytes.Buffer
		if code := Run([]string{"completion", shell}, IO{Out: &out, Err: &errb}); code != 0 || !strings.Contains(out.String(), mark) {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, out.Len(), errb.String())
		}
	}
}

// TestVersionString: module
// version, the commit (the toolchain's record, else the Makefile's stamp,
// else "commit unknown"), the build date when the Makefile stamps one, and
// the Go version.
func TestVersionString(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "023d9bf75c57aaaabbbbccccddddeeeeffff0000"}, {Key: "vcs.time", Value: "2026-11-26T09:03:49Z"}}
	dirty := append(slices.Clone(vcs), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		st       stamp
		want     string
	}{
		{"nothing stamped", nil, stamp{}, "keyrelay (devel) commit unknown go1.26"},
		{"toolchain", vcs, stamp{}, "keyrelay (devel) commit 023d9bf75c57 2026-11-26T09:03:49Z go1.26"},
		{"toolchain, dirty", dirty, stamp{}, "keyrelay (devel) commit 023d9bf75c57+dirty 2026-11-26T09:03:49Z go1.26"},
		{"toolchain wins over the Makefile", vcs, stamp{commit: "111111111111", buildDate: "2026-11-22T10:00:00Z"}, "keyrelay (devel) commit 023d9bf75c57 2026-11-26T09:03:49Z built 2026-11-22T10:00:00Z go1.26"},
		{"Makefile only (-buildvcs=false)", nil, stamp{commit: "023d9bf75c57+dirty", commitTime: "2026-11-26T09:03:49Z", buildDate: "2026-11-22T10:00:00Z"}, "keyrelay (devel) commit 023d9bf75c57+dirty 2026-11-26T09:03:49Z built 2026-11-22T10:00:00Z go1.26"},
		{"Makefile without git", nil, stamp{buildDate: "2026-11-22T10:00:00Z"}, "keyrelay (devel) commit unknown built 2026-11-22T10:00:00Z go1.26"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "(devel)"}, Settings: tc.settings}
			if got := formatVersion(bi, tc.st); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestStopSignals: SIGHUP and SIGQUIT stop a command cleanly as SIGINT and
// SIGTERM do (every key released), but a SIGHUP ignored from the start
// (nohup) is left ignored: notifying it would re-enable it.
func TestStopSignals(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		t.Skip("SIGHUP is ignored by what runs the tests (nohup): the default case cannot be checked")
	}
	if !slices.Equal(stopSignals(), []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP}) {
		t.Errorf("stopSignals() = %v, want interrupt, terminated, quit, hangup", stopSignals())
	}
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	if got := stopSignals(); slices.Contains(got, os.Signal(syscall.SIGHUP)) {
		t.Errorf("with SIGHUP ignored, stopSignals() = %v: it would undo nohup", got)
	}
}

// TestSendFailsClosedWithoutHandshake (PROTOCOL.md §8.4): a receiver
// whose handshake responses never reach send (here a socket that reads and answers
// nothing, as a firewall dropping them would leave it) gets initiations only,
// never a one-way packet carrying keys, however long send waits; send
// names the cause and exits 3.
func TestSendFailsClosedWithoutHandshake(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	types := make(chan []byte, 1)
	go func() {
		var got []byte
		buf := make([]byte, 2048)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				types <- got
				return
			}
			if n > 3 {
				got = append(got, buf[3]) // the type byte (PROTOCOL.md §4)
			}
		}
	}()
	isolate(t)
	addr := pc.LocalAddr().String()
	// The warning comes from a timer's goroutine.
	var out bytes.Buffer
	errb := notebuf.New()
	code := Run([]string{"send", "--script", "-", "--to", addr, "--timeout", "100ms", "--outage", "300ms", "--linger", "50ms"},
		IO{In: strings.NewReader("tap KeyA\nsleep 200ms\ntap KeyB\n"), Out: &out, Err: errb})
	pc.Close()
	got := <-types
	if code != ExitUndelivered {
		t.Errorf("exit %d, want %d\n%s", code, ExitUndelivered, errb.String())
	}
	for _, want := range []string{"no handshake with " + addr, "no key was sent to it", "nothing listening there (is keyrelay recv running", "this machine not paired there"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb.String())
		}
	}
	if len(got) == 0 {
		t.Fatal("the receiver's socket got nothing")
	}
	for i, ty := range got {
		if ty != 3 {
			t.Fatalf("packet %d of %d has type %d, want only initiations (3): a unicast destination got a one-way packet", i+1, len(got), ty)
		}
	}
}

// TestKeyFileOthersCanReadIsRefused (PROTOCOL.md §8.1): send and recv
// refuse a key file group or others may read, with the fix, before
// anything is sent or received.
func TestKeyFileOthersCanReadIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	if code := Run([]string{"keygen", "--out", path}, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); code != ExitOK {
		t.Fatalf("keygen exit %d", code)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"send", "--key-file", path, "--to", "127.0.0.1:9", "--script", "-"},
		{"recv", "--key-file", path, "--listen", "127.0.0.1:0", "--inject", "log"},
	} {
		var errb bytes.Buffer
		code := Run(args, IO{In: strings.NewReader("tap KeyA\n"), Out: &bytes.Buffer{}, Err: &errb})
		if want := "key file " + path + " has mode 0644: other users can read it (chmod 600 " + path + ")"; code != ExitError || !strings.Contains(errb.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", args[0], code, errb.String(), ExitError, want)
		}
	}
}

// TestDebugSaysSoOnce: --debug says once, at start, that key names will be
// in the log; without it nothing says so.
func TestDebugSaysSoOnce(t *testing.T) {
	for _, debug := range []bool{false, true} {
		args := []string{"send", "--insecure", "--script", "-", "--to", "127.0.0.1:9", "--one-way", "--feedback=false", "--linger", "10ms"}
		if debug {
			args = append(args, "--debug")
		}
		var errb bytes.Buffer
		code := Run(args, IO{In: strings.NewReader("tap KeyA\n"), Out: &bytes.Buffer{}, Err: &errb})
		if n := strings.Count(errb.String(), relay.DebugNote); code != ExitOK || (n == 1) != debug || n > 1 {
			t.Errorf("debug %v: exit %d, said %q %d times:\n%s", debug, code, relay.DebugNote, n, errb.String())
		}
	}
}

// TestOneWayQueueTooLong: a one-way packet carries the sending machine's
// public key and signature too (PROTOCOL.md §5, §8.6), so a one-way send
// takes a queue of at most wire.MaxSafeOneWayEvents: a longer --queue is
// a bad flag (exit 2), from the command line or the config file, said
// before the key file is read; the longest one runs.
func TestOneWayQueueTooLong(t *testing.T) {
	dir := isolate(t)
	keyFile := filepath.Join(dir, "k")
	if code := Run([]string{"keygen", "--out", keyFile}, IO{Out: io.Discard, Err: io.Discard}); code != ExitOK {
		t.Fatalf("keygen: exit %d", code)
	}
	tooLong := strconv.Itoa(wire.MaxSafeOneWayEvents + 1)
	send := func(args ...string) (int, string) {
		var errb bytes.Buffer
		args = append([]string{"send", "--script", "-", "--key-file", keyFile, "--one-way", "--linger", "10ms"}, args...)
		code := Run(args, IO{In: strings.NewReader("tap KeyA\n"), Out: io.Discard, Err: &errb})
		return code, errb.String()
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no feedback", []string{"--to", "127.0.0.1:9", "--feedback=false", "--queue", tooLong}},
		{"broadcast", []string{"--to", "255.255.255.255:9", "--queue", tooLong}},
	} {
		code, said := send(tc.args...)
		want := fmt.Sprintf("--queue %s: a one-way destination takes at most %d", tooLong, wire.MaxSafeOneWayEvents)
		if code != ExitUsage || !strings.Contains(said, want) {
			t.Errorf("%s: exit %d, %q; want %d and %q", tc.name, code, said, ExitUsage, want)
		}
	}
	writeFile(t, filepath.Join(dir, "config.toml"), "[send]\nqueue = "+tooLong+"\n")
	if code, said := send("--to", "127.0.0.1:9", "--feedback=false"); code != ExitUsage || !strings.Contains(said, "config.toml:2") {
		t.Errorf("queue from the config file: exit %d, %q; want %d naming its line", code, said, ExitUsage)
	}
	os.Remove(filepath.Join(dir, "config.toml"))
	if code, said := send("--to", "127.0.0.1:9", "--feedback=false", "--queue", strconv.Itoa(wire.MaxSafeOneWayEvents)); code != ExitOK {
		t.Errorf("the longest one-way queue: exit %d, %q; want 0", code, said)
	}
}
