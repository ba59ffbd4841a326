//go:build windows

package win32

import "golang.org/x/sys/windows"

// HasForeground reports whether an application's window is in the
// foreground of the desktop this process types into: the window whose
// thread the keyboard's input goes to. There is none while the desktop is
// locked or the secure desktop is up (the input desktop is another one),
// or while no window is active; and none when the foreground is the
// desktop window itself (GetDesktopWindow, the system's, as under Wine
// with no window shown), which no application reads keys from. The
// shell's desktop (Explorer's, GetShellWindow) is an application's.
func HasForeground() bool {
	fg := windows.GetForegroundWindow()
	return fg != 0 && fg != windows.GetDesktopWindow()
}
