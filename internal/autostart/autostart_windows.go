//go:build windows

package autostart

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// runKey is the per-user Run key: Windows starts each of its values' command
// lines when the user signs in (Task Manager's Startup apps lists them).
const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

// Set makes the Run entry name start line at every sign-in, replacing
// one of that name.
func Set(name, line string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	return k.SetStringValue(name, line)
}

// Delete removes the Run entry the value name; found is false if there was none.
func Delete(name string) (found bool, err error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer k.Close()
	err = k.DeleteValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Get reads the Run entry the value name; found is false if there is none.
func Get(name string) (line string, found bool, err error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer k.Close()
	line, _, err = k.GetStringValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	return line, err == nil, err
}

var (
	kernel32                  = windows.NewLazySystemDLL("kernel32.dll")
	procGetConsoleProcessList = kernel32.NewProc("GetConsoleProcessList")
	procFreeConsole           = kernel32.NewProc("FreeConsole")
)

// DetachConsole leaves the console Windows made for a console program
// started at sign-in, which closes its window; only when keyrelay is the
// console's one process, so that 'autostart run' typed in a terminal
// keeps that terminal.
func DetachConsole() {
	var pids [2]uint32
	n, _, _ := procGetConsoleProcessList.Call(uintptr(unsafe.Pointer(&pids[0])), 2)
	if n == 1 {
		procFreeConsole.Call()
	}
}
