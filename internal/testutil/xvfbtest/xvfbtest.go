// Package xvfbtest starts virtual X servers (Xvfb) for tests: the inject
// package's and the end-to-end tests share it.
package xvfbtest

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Start starts an Xvfb with extra server arguments and returns its DISPLAY
// once it is ready (Xvfb writes the display number to -displayfd when it
// is); the server is killed when the test ends. -noreset keeps it from
// resetting when its last client goes, which short-lived test connections
// raced with. Without Xvfb the test is skipped, except in CI, where .ci/run
// installs it and a skip would hide a broken install.
func Start(tb testing.TB, extra ...string) string {
	tb.Helper()
	display, _ := StartStoppable(tb, extra...)
	return display
}

// StartStoppable is Start, and also returns a function that kills the
// server then (for tests of what happens when the X server goes away).
func StartStoppable(tb testing.TB, extra ...string) (string, func()) {
	tb.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("Xvfb missing in CI: .ci/run must install it")
		}
		tb.Skip("needs Xvfb (apt-get install xvfb)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("Xvfb", append([]string{"-displayfd", "3", "-noreset", "-nolisten", "tcp", "-screen", "0", "1024x768x24"}, extra...)...)
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w.Close()
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	tb.Cleanup(stop)
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if _, err := strconv.Atoi(n); err != nil {
			tb.Fatalf("Xvfb gave display %q", n)
		}
		return ":" + n, stop
	case <-time.After(15 * time.Second):
		tb.Fatal("Xvfb did not start")
	}
	return "", stop
}
