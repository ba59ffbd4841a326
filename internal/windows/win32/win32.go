//go:build windows

package win32

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32                  = windows.NewLazySystemDLL("user32.dll")
	kernel32                = windows.NewLazySystemDLL("kernel32.dll")
	procSetWindowsHookExW   = user32.NewProc("SetWindowsHookExW")
	procUnhookWindowsHookEx = user32.NewProc("UnhookWindowsHookEx")
	procCallNextHookEx      = user32.NewProc("CallNextHookEx")
	procGetMessageW         = user32.NewProc("GetMessageW")
	procPostThreadMessageW  = user32.NewProc("PostThreadMessageW")
	procSendInput           = user32.NewProc("SendInput")
	procMapVirtualKeyW      = user32.NewProc("MapVirtualKeyW")
	procGetKeyState         = user32.NewProc("GetKeyState")
	procGetModuleHandleW    = kernel32.NewProc("GetModuleHandleW")

	procOpenInputDesktop          = user32.NewProc("OpenInputDesktop")
	procCloseDesktop              = user32.NewProc("CloseDesktop")
	procGetUserObjectInformationW = user32.NewProc("GetUserObjectInformationW")
)

// Constants of WinUser.h.
const (
	WH_KEYBOARD_LL = 13
	HC_ACTION      = 0
	WM_QUIT        = 0x0012

	INPUT_KEYBOARD        = 1
	KEYEVENTF_EXTENDEDKEY = 0x0001
	KEYEVENTF_KEYUP       = 0x0002
	KEYEVENTF_UNICODE     = 0x0004
	KEYEVENTF_SCANCODE    = 0x0008

	MAPVK_VSC_TO_VK_EX = 3

	VK_CAPITAL = 0x14
	VK_NUMLOCK = 0x90
)

// KBDLLHOOKSTRUCT is what a WH_KEYBOARD_LL hook's lParam points to.
type KBDLLHOOKSTRUCT struct {
	VkCode      uint32
	ScanCode    uint32
	Flags       uint32
	Time        uint32
	DwExtraInfo uintptr
}

// KEYBDINPUT is a keyboard INPUT's payload.
type KEYBDINPUT struct {
	Vk        uint16
	Scan      uint16
	Flags     uint32
	Time      uint32
	ExtraInfo uintptr
}

// Input is an INPUT of type INPUT_KEYBOARD, padded to the size of the
// union's largest member (MOUSEINPUT), as SendInput checks cbSize.
type Input struct {
	Type uint32
	Ki   KEYBDINPUT
	_    [8]byte
}

// HookProc is a low-level keyboard hook's work: wParam (the message,
// WM_KEYDOWN...) and the KBDLLHOOKSTRUCT; it returns whether to swallow
// the key.
type HookProc func(wParam uintptr, kb *KBDLLHOOKSTRUCT) bool

// RunHook installs proc as a low-level keyboard hook on the calling thread
// (which must be locked to its OS thread: runtime.LockOSThread) and runs the
// thread's message loop, which Windows needs to call the hook, until
// StopHook is called with the thread id started receives. The callback
// made for proc is never freed (Windows callbacks are a fixed number per
// process): call RunHook a few times per process at most.
func RunHook(proc HookProc, started func(threadID uint32)) error {
	cb := windows.NewCallback(func(nCode int32, wParam, lParam uintptr) uintptr {
		if nCode == HC_ACTION && proc(wParam, *(**KBDLLHOOKSTRUCT)(unsafe.Pointer(&lParam))) {
			return 1
		}
		r, _, _ := procCallNextHookEx.Call(0, uintptr(nCode), wParam, lParam)
		return r
	})
	mod, _, _ := procGetModuleHandleW.Call(0)
	h, _, err := procSetWindowsHookExW.Call(WH_KEYBOARD_LL, cb, mod, 0)
	if h == 0 {
		return fmt.Errorf("SetWindowsHookEx(WH_KEYBOARD_LL): %w", err)
	}
	defer procUnhookWindowsHookEx.Call(h)
	started(windows.GetCurrentThreadId())
	var msg [48]byte // MSG
	for {
		r, _, err := procGetMessageW.Call(uintptr(unsafe.Pointer(&msg[0])), 0, 0, 0)
		switch int32(r) {
		case 0:
			return nil // WM_QUIT
		case -1:
			return fmt.Errorf("GetMessage: %w", err)
		}
	}
}

// StopHook ends the message loop of RunHook on thread.
func StopHook(thread uint32) {
	procPostThreadMessageW.Call(uintptr(thread), WM_QUIT, 0, 0)
}

// SendInput sends in; it returns how many Windows took and, if not all,
// why.
func SendInput(in []Input) (int, error) {
	if len(in) == 0 {
		return 0, nil
	}
	n, _, err := procSendInput.Call(uintptr(len(in)), uintptr(unsafe.Pointer(&in[0])), unsafe.Sizeof(in[0]))
	if int(n) != len(in) {
		return int(n), fmt.Errorf("SendInput took %d of %d inputs: %w", n, len(in), err)
	}
	return int(n), nil
}

// MapVirtualKey is MapVirtualKeyW.
func MapVirtualKey(code, mapType uint32) uint32 {
	r, _, _ := procMapVirtualKeyW.Call(uintptr(code), uintptr(mapType))
	return uint32(r)
}

// KeyToggled reports whether a toggle key (VK_CAPITAL, VK_NUMLOCK) is on.
func KeyToggled(vk int) bool {
	r, _, _ := procGetKeyState.Call(uintptr(vk))
	return r&1 != 0
}

// ReadDesktop reads this process's Desktop.
func ReadDesktop() Desktop {
	var d Desktop
	if err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &d.Session); err != nil {
		d.Session = ^uint32(0)
	}
	d.Elevated = windows.GetCurrentProcessToken().IsElevated()
	d.Input, d.InputErr = inputDesktop()
	return d
}

// inputDesktop names the desktop that receives the keyboard now.
func inputDesktop() (string, error) {
	const desktopReadObjects, uoiName = 0x0001, 2
	h, _, err := procOpenInputDesktop.Call(0, 0, desktopReadObjects)
	if h == 0 {
		return "", fmt.Errorf("OpenInputDesktop: %w", err)
	}
	defer procCloseDesktop.Call(h)
	var buf [256]uint16
	var need uint32
	r, _, err := procGetUserObjectInformationW.Call(h, uoiName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)*2), uintptr(unsafe.Pointer(&need)))
	if r == 0 {
		return "", fmt.Errorf("GetUserObjectInformation: %w", err)
	}
	return windows.UTF16ToString(buf[:]), nil
}
