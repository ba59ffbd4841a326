// Package vmtest runs the built keyrelay in a small Linux VM (QEMU, software
// emulation) to prove evdev capture and uinput injection on a real kernel
// (issue 12 must-have 5): no CI machine has /dev/input or /dev/uinput, and
// the unit tests only see fakes of them.
//
// The host side (TestVM) builds keyrelay and this package's test binary
// statically, packs them with busybox and the evdev and uinput modules into
// an initramfs, boots the machine's own kernel on it and reads the guest's
// results from the serial console. The guest side (TestGuest) types on a
// virtual keyboard made with uinput and reads what recv's uinput keyboard
// reports.
//
// Everything is behind the vmtest build tag, so go test ./... never boots a
// VM: run it with `make vmtest`.
package vmtest
