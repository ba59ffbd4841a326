//go:build linux

package inject

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/keys"
)

// startXvfb starts a virtual X server for the benchmark and returns its
// DISPLAY; it skips without Xvfb.
func startXvfb(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		b.Skip("needs Xvfb (apt-get install xvfb)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-noreset", "-nolisten", "tcp", "-screen", "0", "640x480x24")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w.Close()
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if _, err := strconv.Atoi(n); err != nil {
			b.Fatalf("Xvfb gave display %q", n)
		}
		return ":" + n
	case <-time.After(15 * time.Second):
		b.Fatal("Xvfb did not start")
	}
	return ""
}

// BenchmarkX11VsRobotgo is the cost of one key tap (down and up) through
// --inject x11 and --inject robotgo on one Xvfb (US layout): a physical key
// (KeyA), a character on the layout ('a') and one it lacks ('é': x11 maps a
// spare keycode once and keeps it, robotgo remaps its scratch keycode on
// every tap). robotgo waits for the server after every key event; x11 sends
// without waiting, so it is measured both "synced", with a round trip after
// each tap (the server has processed it, as with robotgo), and "pipelined",
// with one round trip per 100 taps (its cost spread over them), as a burst
// of keys goes. x11 runs first and is closed before robotgo connects: each
// remaps the first empty keycode, and robotgo does not re-read the keymap.
func BenchmarkX11VsRobotgo(b *testing.B) {
	b.Setenv("DISPLAY", startXvfb(b))
	taps := []struct {
		name string
		key  keys.Key
	}{{"KeyA", keys.Key(keys.KeyA)}, {"a", keys.Char('a')}, {"é", keys.Char('é')}}
	tap := func(b *testing.B, inj Injector, k keys.Key) {
		if err := inj.Inject(Event{Key: k, Down: true}); err != nil {
			b.Fatal(err)
		}
		if err := inj.Inject(Event{Key: k}); err != nil {
			b.Fatal(err)
		}
	}

	x, err := NewX11(nil)
	if err != nil {
		b.Fatal(err)
	}
	sync := func(b *testing.B) {
		if _, err := xproto.GetInputFocus(x.conn).Reply(); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range taps {
		b.Run("x11-synced/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tap(b, x, k.key)
				sync(b)
			}
		})
		b.Run("x11-pipelined/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				tap(b, x, k.key)
				if n++; n%100 == 0 {
					sync(b)
				}
			}
			sync(b)
		})
	}
	if err := x.Close(); err != nil {
		b.Fatal(err)
	}

	r, err := NewRobotgo(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, k := range taps {
		b.Run("robotgo/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tap(b, r, k.key)
			}
		})
	}
}
