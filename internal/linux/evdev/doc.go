// Package evdev reads Linux input devices (/dev/input/event*): their names,
// key capabilities, key and LED state, events, and the exclusive grab
// (EVIOCGRAB). It is keyrelay's own small layer over golang.org/x/sys/unix
// rather than github.com/holoplot/go-evdev, because keyrelay needs what that
// library's design rules out: every go-evdev method reaches the descriptor
// through os.File.Fd, which puts it back into blocking mode, so once the
// grab is switched or the LEDs are read while a reader waits (the hotkey
// does both), that reader can no longer be woken by Close or a deadline; it
// exposes neither the file nor its descriptor, so nothing else can; and it
// turns errno values into plain strings, so a permission problem, a busy
// grab and an unplugged device cannot be told apart with errors.Is.
//
// Here a device is opened non-blocking and stays so: reads wait in the Go
// runtime's poller (Close and SetReadDeadline end them at once) and ioctls
// go through syscall.RawConn.Control, which leaves the mode alone.
//
// Only Linux has these devices; on other systems the package is empty.
package evdev
