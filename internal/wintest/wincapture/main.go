//go:build windows

// Command wincapture runs keyrelay's Windows capture (capture.Windows)
// with no socket and prints each key event it would relay, one a line
// ("down KeyA", "up KeyA"), and with -trace each hook event as Windows
// gave it. The capture's status lines go to standard error: the first says
// the hook is in. It ends after -n events, or when killed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/keys"
)

func main() {
	grab := flag.Bool("grab", false, "swallow keys while relaying (send --grab)")
	n := flag.Int("n", 0, "end after this many events (0: never)")
	trace := flag.Bool("trace", false, "print every hook event too")
	flag.Parse()
	src := &capture.Windows{Label: "stdout", Status: os.Stderr, Grab: *grab}
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
