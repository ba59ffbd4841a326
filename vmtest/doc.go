// Package vmtest runs the built keyrelay in a small Linux VM (QEMU, software
// emulation) to prove evdev capture, uinput injection and the USB keyboard
// gadget (recv --inject hidg) on a real kernel: no CI machine has
// /dev/input, /dev/uinput or a USB device controller, and the unit tests
// only see fakes of them. For the gadget the guest kernel is its own USB
// host: dummy_hcd's controller takes the gadget keyrelay gadget setup
// makes, usbhid makes a keyboard of it, and the checks read that keyboard.
//
// The host side (TestVM) builds keyrelay and this package's test binary
// statically, packs them with busybox and the evdev and uinput modules into
// an initramfs, boots the machine's own kernel on it and reads the guest's
// results from the serial console. The guest side (TestGuest) types on a
// virtual keyboard made with uinput and reads what recv's uinput keyboard,
// then the USB host's keyboard of the gadget, reports.
//
// Everything is behind the vmtest build tag, so go test ./... never boots a
// VM: run it with `make vmtest`.
package vmtest
