// Package keys names keyboard keys. On the wire a key is its USB HID usage ID on
// the keyboard page (0x07); people name keys with W3C KeyboardEvent.code names
// (KeyA, ShiftLeft, Enter). The tables are generated from qemu's keycodemapdb.
package keys

// Code is a USB HID usage ID on the keyboard/keypad page (0x07). The zero Code
// is "no event" in HID and never names a key.
type Code uint16
