//go:build linux

package inject

import (
	"testing"

	"github.com/keyrelay/keyrelay/keys"
)

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
	xvfb(b)
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
		if err := x.keys.sync(); err != nil {
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
