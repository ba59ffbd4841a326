package inject

import (
	"errors"
	"unicode/utf16"

	"github.com/keyrelay/keyrelay/keys"
)

// ErrNoWindows is wrapped by NewWindows's error when it cannot inject.
var ErrNoWindows = errors.New("Windows key injection unavailable")

// KEYBDINPUT's flags (WinUser.h).
const (
	keyeventfExtendedKey = 0x0001
	keyeventfKeyUp       = 0x0002
	keyeventfUnicode     = 0x0004
	keyeventfScanCode    = 0x0008
)

// Virtual keys pressed by virtual key rather than by scan code: Pause and
// Num Lock share scan code 0x45, and Windows turns the scan code alone into
// Num Lock.
const (
	vkPause   = 0x13
	vkNumLock = 0x90
)

// winInput is one keyboard INPUT for SendInput: KEYBDINPUT's wVk, wScan and
// dwFlags.
type winInput struct {
	vk, scan uint16
	flags    uint32
}

// windowsInputs makes the SendInput records of one key event, pure so that
// it is tested anywhere. A physical key is pressed by its scan code
// (KEYEVENTF_SCANCODE, KEYEVENTF_EXTENDEDKEY for an 0xE0 one), so that
// this machine's layout decides the character as for a keyboard plugged
// in; wVk is set too, from vkOf (MapVirtualKey MAPVK_VSC_TO_VK_EX with the
// 0xE0XX scan code: this layout's virtual key), because Wine reads wVk
// even with KEYEVENTF_SCANCODE, and else from keycodemapdb's US virtual
// key. A character is typed as UTF-16 code units with KEYEVENTF_UNICODE
// (VK_PACKET: WM_CHAR with the character on any layout), the press on the
// key-down and the release on the key-up. ok is false for a key with no
// scan code.
func windowsInputs(ev Event, vkOf func(scan uint16) uint16) (in []winInput, ok bool) {
	var up uint32
	if !ev.Down {
		up = keyeventfKeyUp
	}
	if r, isChar := ev.Key.Char(); isChar {
		units := utf16.Encode([]rune{r})
		for _, u := range units {
			in = append(in, winInput{scan: u, flags: keyeventfUnicode | up})
		}
		return in, true
	}
	code, _ := ev.Key.Code()
	scan, ext, found := keys.WindowsScanCode(code)
	if !found {
		return nil, false
	}
	full := uint16(scan)
	var flags uint32 = keyeventfScanCode | up
	if ext {
		full |= 0xe000
		flags |= keyeventfExtendedKey
	}
	switch code {
	case keys.Pause:
		return []winInput{{vk: vkPause, scan: uint16(scan), flags: up}}, true
	case keys.NumLock:
		return []winInput{{vk: vkNumLock, scan: uint16(scan), flags: keyeventfExtendedKey | up}}, true
	}
	vk := vkOf(full)
	if vk == 0 {
		if info, ok := keys.Lookup(code); ok {
			vk = uint16(info.Win32VK)
		}
	}
	return []winInput{{vk: vk, scan: uint16(scan), flags: flags}}, true
}
