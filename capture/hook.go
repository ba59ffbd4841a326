package capture

import (
	"github.com/keyrelay/keyrelay/keys"
)

// EvdevToHID returns the key a Linux evdev key code is relayed as: its HID
// usage, or keys.EvdevBase + evdev for a key without one (keys.FromEvdev;
// PROTOCOL.md §3.1). The X11 source relays X keycode kc as EvdevToHID(kc-8).
func EvdevToHID(evdev uint16) (keys.Code, bool) { return keys.FromEvdev(evdev) }
