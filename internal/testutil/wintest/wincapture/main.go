//go:build windows

// Command wincapture runs keyrelay's Windows capture (capture.Windows)
// with no socket and prints each key event it would relay, one a line
// ("down KeyA", "up KeyA"), and with -trace each hook event as Windows
// gave it. The capture's status lines go to standard error: the first says
// the hook is in. It ends after -n events, or when killed.
//
// With -local and -targets it plays a send with named destinations
// (routing.RoutingSource): the keys of -local act here while relaying, and
// in local use each hotkey of -targets picks its destination, printed as
// "target N" (N from 0, in -targets's order).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/keys"
)

func main() {
	grab := flag.Bool("grab", false, "swallow keys while relaying (send --grab)")
	n := flag.Int("n", 0, "end after this many events (0: never)")
	trace := flag.Bool("trace", false, "print every hook event too")
	local := flag.String("local", "", "keys that act here while relaying, comma-separated (a destination's local-keys)")
	targets := flag.String("targets", "", "destinations' hotkeys, comma-separated (ControlRight+Digit1,...)")
	flag.Parse()
	src := &capture.Windows{Label: "stdout", Status: os.Stderr, Grab: *grab}
	if *local != "" || *targets != "" {
		var here []keys.Code
		for _, name := range strings.FieldsFunc(*local, func(r rune) bool { return r == ',' }) {
			c, err := keys.Parse(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "wincapture: -local:", err)
				os.Exit(2)
			}
			here = append(here, c)
		}
		var hotkeys [][]keys.Code
		for _, s := range strings.FieldsFunc(*targets, func(r rune) bool { return r == ',' }) {
			h, err := capture.ParseHotkey(s)
			if err != nil {
				fmt.Fprintln(os.Stderr, "wincapture: -targets:", err)
				os.Exit(2)
			}
			hotkeys = append(hotkeys, h)
		}
		src.SetRouting(func(c keys.Code) bool { return slices.Contains(here, c) }, hotkeys, func(i int) {
			fmt.Printf("target %d\n", i)
		})
	}
	if *trace {
		src.Trace = func(e capture.HookEvent, skip string) {
			fmt.Printf("hook vk=%#02x scan=%#02x flags=%#02x %s\n", e.VK, e.Scan, e.Flags, skip)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	count := 0
	err := src.Play(ctx, func(k keys.Key, down bool) error {
		dir := "up"
		if down {
			dir = "down"
		}
		fmt.Printf("%s %v locks=%v\n", dir, k, src.Locks())
		count++
		if *n > 0 && count >= *n {
			cancel()
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "wincapture:", err)
		os.Exit(1)
	}
}
