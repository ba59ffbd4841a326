//go:build windows

// Command wininject runs keyrelay's Windows injector (inject.Windows) with
// no socket: it plays a key script (keyrelay-script(5), the file named, or
// standard input for -) into it, after setting the lock state -locks
// names (caps, num, caps,num, none; unset: left alone), then releases what
// the script left held, as recv does at a session's end. It says on
// standard error how many of the script's key events reached no
// application (Windows.LastReached, asked after each as recv does).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/sink"
)

func main() {
	locks := flag.String("locks", "", "caps, num, caps,num or none: set first")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: wininject [-locks caps,num] SCRIPT|-")
		os.Exit(2)
	}
	var r io.Reader = os.Stdin
	if name := flag.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wininject:", err)
			os.Exit(1)
		}
		defer f.Close()
		r = f
	}
	script, err := capture.ParseScript(flag.Arg(0), r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wininject:", err)
		os.Exit(2)
	}
	w, err := inject.NewWindows(func(f string, a ...any) { fmt.Fprintf(os.Stderr, "wininject: "+f+"\n", a...) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "wininject:", err)
		os.Exit(1)
	}
	defer w.Close()
	if *locks != "" {
		l := keys.LocksKnown
		for _, s := range strings.Split(*locks, ",") {
			switch s {
			case "caps":
				l |= keys.LockCaps
			case "num":
				l |= keys.LockNum
			}
		}
		if err := w.SetLocks(l, 1); err != nil {
			fmt.Fprintln(os.Stderr, "wininject: locks:", err)
			os.Exit(1)
		}
	}
	var held []keys.Key
	events, nowhere := 0, 0
	err = script.Play(context.Background(), func(k keys.Key, down bool) error {
		if down {
			held = append(held, k)
		} else {
			held = slices.DeleteFunc(held, func(h keys.Key) bool { return h == k })
		}
		err := w.Inject(inject.Event{Key: k, Down: down})
		// As the receiver asks (receiver.Aimed): did it reach an
		// application?
		events++
		if w.LastReached() != sink.Reached {
			nowhere++
		}
		return err
	})
	fmt.Fprintf(os.Stderr, "wininject: %d of %d key events reached no application (no window in the foreground)\n", nowhere, events)
	for i := len(held) - 1; i >= 0; i-- {
		w.Inject(inject.Event{Key: held[i]})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wininject:", err)
		os.Exit(1)
	}
}
