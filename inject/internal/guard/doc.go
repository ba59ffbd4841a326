// Package guard runs a small process beside recv that outlives it, to undo
// what recv leaves behind when it ends without cleaning up: SIGKILL, the
// OOM killer, a crash. An injector that holds keys where nothing releases
// them when recv vanishes (an X server keeps auto-repeating a dead XTEST
// client's key; a USB host keeps the gadget's last report) writes what it
// holds into a page of memory shared with its guard, one plain store per
// change, no system call and no message on the way of a key. The guard
// waits on a pipe whose only writer is recv: the pipe's end, however recv
// ends, wakes it; it reads the page and undoes what it finds there (an
// Action), then exits. A recv that ends cleanly has undone everything
// itself and left the page empty: the guard then exits doing nothing.
//
// The guard is this same program started again (Start), in a session of
// its own, so that a signal to recv's process group (Ctrl+C in a terminal,
// kill -- -PGID) does not end it first; it ignores the signals that stop
// recv cleanly, and ends with the pipe. Nothing covers the guard being
// killed with recv (a cgroup's SIGKILL, as systemd's after a stop times
// out).
//
// A program that starts guards calls Serve first thing in main: in a
// guard it runs the guard's action and exits; elsewhere it returns and
// enables Start. Start refuses in a program that did not call it (a test
// binary), which would start itself again for nothing.
package guard
