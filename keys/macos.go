package keys

//go:generate go run gen.go -kind macos -in testdata/keycodemapdb/keymaps.csv -chromium testdata/chromium/dom_codes.tsv -spec testdata/uievents-code/codes.tsv -out macos_gen.go

// FromMacOS returns the key a macOS virtual keycode (kVK_ANSI_A is 0,
// kVK_Function 0x3F) is relayed as: its USB HID usage, or EvdevBase + the
// evdev code for a key without one (Function is EvdevBase + KEY_FN),
// the lowest where several keys share the keycode. It is false for a
// keycode keycodemapdb does not list.
func FromMacOS(vk uint16) (Code, bool) {
	if int(vk) >= len(macOSKeys) || macOSKeys[vk] == 0 {
		return 0, false
	}
	return macOSKeys[vk], true
}

// MacOSKeycode returns the macOS virtual keycode that presses c, and false
// for a key keycodemapdb gives none (Power, most media keys).
func MacOSKeycode(c Code) (uint16, bool) {
	e := byCode[c]
	if e == nil || e.MacOS < 0 {
		return 0, false
	}
	return uint16(e.MacOS), true
}
