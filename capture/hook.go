package capture

import (
	"github.com/keyrelay/keyrelay/keys"
)

// evdevToHID maps Linux evdev key codes to HID usages (the lowest usage where
// several share one), from the generated keys table.
var evdevToHID = func() map[uint16]keys.Code {
	m := map[uint16]keys.Code{}
	for _, k := range keys.All() {
		if _, dup := m[k.Evdev]; !dup && k.Evdev != 0 {
			m[k.Evdev] = k.Code
		}
	}
	return m
}()

// EvdevToHID returns the HID usage of a Linux evdev key code.
func EvdevToHID(evdev uint16) (keys.Code, bool) {
	c, ok := evdevToHID[evdev]
	return c, ok
}
