//go:build windows

// Command winwatch is a test window for keyrelay's Windows injector and
// capture under Wine: it prints each key message it receives, one a line
// (WM_KEYDOWN/WM_KEYUP and their WM_SYS forms with the virtual key, the
// scan code and the extended bit of lParam; WM_CHAR with the character),
// and "ready" once its window is shown.
package main

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32            = windows.NewLazySystemDLL("user32.dll")
	kernel32          = windows.NewLazySystemDLL("kernel32.dll")
	pRegisterClassExW = user32.NewProc("RegisterClassExW")
	pCreateWindowExW  = user32.NewProc("CreateWindowExW")
	pShowWindow       = user32.NewProc("ShowWindow")
	pGetMessageW      = user32.NewProc("GetMessageW")
	pTranslateMessage = user32.NewProc("TranslateMessage")
	pDispatchMessageW = user32.NewProc("DispatchMessageW")
	pDefWindowProcW   = user32.NewProc("DefWindowProcW")
	pPostQuitMessage  = user32.NewProc("PostQuitMessage")
	pGetModuleHandleW = kernel32.NewProc("GetModuleHandleW")
)

type wndClassEx struct {
	size, style            uint32
	wndProc                uintptr
	clsExtra, wndExtra     int32
	instance, icon, cursor uintptr
	background             uintptr
	menuName, className    *uint16
	iconSm                 uintptr
}

const (
	wmDestroy    = 0x0002
	wmKeyDown    = 0x0100
	wmKeyUp      = 0x0101
	wmChar       = 0x0102
	wmSysKeyDown = 0x0104
	wmSysKeyUp   = 0x0105
	wmSysChar    = 0x0106
)

var names = map[uint32]string{wmKeyDown: "WM_KEYDOWN", wmKeyUp: "WM_KEYUP", wmSysKeyDown: "WM_SYSKEYDOWN", wmSysKeyUp: "WM_SYSKEYUP"}

func wndProc(hwnd uintptr, msg uint32, wParam, lParam uintptr) uintptr {
	switch msg {
	case wmKeyDown, wmKeyUp, wmSysKeyDown, wmSysKeyUp:
		fmt.Printf("%s vk=%#02x scan=%#02x ext=%d\n", names[msg], wParam, (lParam>>16)&0xff, (lParam>>24)&1)
	case wmChar, wmSysChar:
		fmt.Printf("WM_CHAR %U\n", rune(wParam))
	case wmDestroy:
		pPostQuitMessage.Call(0)
		return 0
	}
	r, _, _ := pDefWindowProcW.Call(hwnd, uintptr(msg), wParam, lParam)
	return r
}

func main() {
	runtime.LockOSThread()
	mod, _, _ := pGetModuleHandleW.Call(0)
	class, _ := windows.UTF16PtrFromString("keyrelayWinwatch")
	title, _ := windows.UTF16PtrFromString("keyrelay winwatch")
	wc := wndClassEx{wndProc: windows.NewCallback(wndProc), instance: mod, className: class, background: 6}
	wc.size = uint32(unsafe.Sizeof(wc))
	if r, _, err := pRegisterClassExW.Call(uintptr(unsafe.Pointer(&wc))); r == 0 {
		fmt.Fprintln(os.Stderr, "winwatch: RegisterClassEx:", err)
		os.Exit(1)
	}
	const wsOverlappedWindow, wsVisible = 0x00CF0000, 0x10000000
	hwnd, _, err := pCreateWindowExW.Call(0, uintptr(unsafe.Pointer(class)), uintptr(unsafe.Pointer(title)),
		wsOverlappedWindow|wsVisible, 10, 10, 400, 300, 0, 0, mod, 0)
	if hwnd == 0 {
		fmt.Fprintln(os.Stderr, "winwatch: CreateWindowEx:", err)
		os.Exit(1)
	}
	pShowWindow.Call(hwnd, 5)
	fmt.Println("ready")
	var msg [48]byte
	for {
		r, _, _ := pGetMessageW.Call(uintptr(unsafe.Pointer(&msg[0])), 0, 0, 0)
		if int32(r) <= 0 {
			return
		}
		pTranslateMessage.Call(uintptr(unsafe.Pointer(&msg[0])))
		pDispatchMessageW.Call(uintptr(unsafe.Pointer(&msg[0])))
	}
}
