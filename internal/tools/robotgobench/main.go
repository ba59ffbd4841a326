//go:build robotgobench

// Command robotgobench measures robotgo's two Linux backends side by side on
// the X display of $DISPLAY: the cgo build (package robotgo, the default
// without build tags) and the pure-Go X11 build (package robotgo/x11) that
// keyrelay uses. It is built only with -tags robotgobench (make
// robotgo-bench), because the cgo backend needs libxtst-dev and friends.
//
// For each backend it reports the time to the first key (connection and
// keymap set-up included) and the median and 99th percentile of one
// key-down + key-up pair over -n taps.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-vgo/robotgo"
	"github.com/go-vgo/robotgo/x11"
)

func measure(name string, toggle func(key, dir string) error, n int) {
	start := time.Now()
	if err := toggle("a", "down"); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return
	}
	toggle("a", "up")
	first := time.Since(start)
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		toggle("a", "down")
		toggle("a", "up")
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	fmt.Printf("%-8s first key %-10v tap p50 %-10v p99 %v\n", name, first.Round(time.Microsecond), lat[n/2].Round(time.Microsecond), lat[n*99/100].Round(time.Microsecond))
}

func main() {
	n := flag.Int("n", 1000, "taps per backend")
	only := flag.String("only", "", "cgo or x11: measure one backend")
	flag.Parse()
	robotgo.KeySleep = 0
	x11.KeySleep = 0
	if *only != "x11" {
		measure("cgo", func(k, d string) error { return robotgo.KeyToggle(k, d) }, *n)
	}
	if *only != "cgo" {
		measure("pure-go", func(k, d string) error { return x11.KeyToggle(k, d) }, *n)
	}
}
