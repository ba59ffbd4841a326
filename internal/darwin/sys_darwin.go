package darwin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The frameworks the functions come from: loaded with dlopen through
// purego, so no cgo and no C toolchain are needed to build.
const (
	coreGraphics    = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	coreFoundation  = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"
	appServices     = "/System/Library/Frameworks/ApplicationServices.framework/ApplicationServices"
	carbon          = "/System/Library/Frameworks/Carbon.framework/Carbon"
	libSystem       = "/usr/lib/libSystem.B.dylib"
	ioKit           = "/System/Library/Frameworks/IOKit.framework/IOKit"
	ioHIDParamConn  = 1          // kIOHIDParamConnectType
	ioHIDCapsLock   = 1          // kIOHIDCapsLockState
	cgHIDEventTap   = 0          // kCGHIDEventTap: where events are posted, as a keyboard's enter
	cgSessionTap    = 1          // kCGSessionEventTap: where the tap sits (a HID tap wants root on older macOS)
	cgHeadInsert    = 0          // kCGHeadInsertEventTap
	cgTapDefault    = 0          // kCGEventTapOptionDefault: the tap may drop events
	cgTapListenOnly = 1          // kCGEventTapOptionListenOnly
	cgStateCombined = 0          // kCGEventSourceStateCombinedSessionState
	cgStateHID      = 1          // kCGEventSourceStateHIDSystemState
	cfUTF8          = 0x08000100 // kCFStringEncodingUTF8
	cfNumberInt     = 9          // kCFNumberIntType
)

// System is the macOS frameworks' functions keyrelay calls. Load makes the
// one of the process; its methods are safe for concurrent use but RunTap,
// of which one runs at a time.
type System struct {
	cgEventTapCreate                func(tap, place, options uint32, mask uint64, callback, refcon uintptr) uintptr
	cgEventTapEnable                func(tap uintptr, enable bool)
	cgEventGetIntegerValueField     func(ev uintptr, field uint32) int64
	cgEventGetFlags                 func(ev uintptr) uint64
	cgEventSetFlags                 func(ev uintptr, flags uint64)
	cgEventSetType                  func(ev uintptr, typ uint32)
	cgEventCreateKeyboardEvent      func(source uintptr, keycode uint16, down bool) uintptr
	cgEventKeyboardSetUnicodeString func(ev uintptr, n uint64, s *uint16)
	cgEventPost                     func(tap uint32, ev uintptr)
	cgEventSourceCreate             func(state int32) uintptr
	cgEventSourceFlagsState         func(state int32) uint64
	cgPreflightListenEventAccess    func() bool
	cgPreflightPostEventAccess      func() bool
	cgSessionCopyCurrentDictionary  func() uintptr
	cfMachPortCreateRunLoopSource   func(alloc, port uintptr, order int64) uintptr
	cfRunLoopGetCurrent             func() uintptr
	cfRunLoopAddSource              func(rl, src, mode uintptr)
	cfRunLoopRunInMode              func(mode uintptr, seconds float64, returnAfterSource bool) int32
	cfRelease                       func(ref uintptr)
	cfStringCreateWithCString       func(alloc uintptr, s string, enc uint32) uintptr
	cfDictionaryGetValue            func(dict, key uintptr) uintptr
	cfNumberGetValue                func(num uintptr, typ int64, out *int32) bool
	axIsProcessTrusted              func() bool
	isSecureEventInputEnabled       func() bool
	procName                        func(pid int32, buf *byte, size uint32) int32
	cfRunLoopRemoveSource           func(rl, src, mode uintptr)
	cfMachPortInvalidate            func(port uintptr)

	ioServiceMatching           func(name string) uintptr
	ioServiceGetMatchingService func(mainPort uint32, matching uintptr) uint32
	ioServiceOpen               func(service, task, typ uint32, conn *uint32) int32
	ioServiceClose              func(conn uint32) int32
	ioObjectRelease             func(obj uint32) int32
	ioHIDGetModifierLockState   func(conn uint32, selector int32, state *bool) int32
	ioHIDSetModifierLockState   func(conn uint32, selector int32, state bool) int32
	taskSelf                    uint32 // mach_task_self_

	commonModes uintptr // kCFRunLoopCommonModes
	defaultMode uintptr // kCFRunLoopDefaultMode
	source      uintptr // for posted events
}

var (
	loadOnce sync.Once
	loaded   *System
	loadErr  error
)

// ErrUnavailable is wrapped by Load's error.
var ErrUnavailable = errors.New("macOS event functions unavailable")

// Load opens the frameworks once per process.
func Load() (*System, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*System, error) {
	libs := map[string]uintptr{}
	for _, path := range []string{coreGraphics, coreFoundation, appServices, carbon, libSystem, ioKit} {
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, fmt.Errorf("%w: loading %s: %v", ErrUnavailable, path, err)
		}
		libs[path] = h
	}
	s := &System{}
	for _, f := range []struct {
		lib, name string
		fn        any
		optional  bool // macOS before 10.15 lacks it
	}{
		{coreGraphics, "CGEventTapCreate", &s.cgEventTapCreate, false},
		{coreGraphics, "CGEventTapEnable", &s.cgEventTapEnable, false},
		{coreGraphics, "CGEventGetIntegerValueField", &s.cgEventGetIntegerValueField, false},
		{coreGraphics, "CGEventGetFlags", &s.cgEventGetFlags, false},
		{coreGraphics, "CGEventSetFlags", &s.cgEventSetFlags, false},
		{coreGraphics, "CGEventSetType", &s.cgEventSetType, false},
		{coreGraphics, "CGEventCreateKeyboardEvent", &s.cgEventCreateKeyboardEvent, false},
		{coreGraphics, "CGEventKeyboardSetUnicodeString", &s.cgEventKeyboardSetUnicodeString, false},
		{coreGraphics, "CGEventPost", &s.cgEventPost, false},
		{coreGraphics, "CGEventSourceCreate", &s.cgEventSourceCreate, false},
		{coreGraphics, "CGEventSourceFlagsState", &s.cgEventSourceFlagsState, false},
		{coreGraphics, "CGPreflightListenEventAccess", &s.cgPreflightListenEventAccess, true},
		{coreGraphics, "CGPreflightPostEventAccess", &s.cgPreflightPostEventAccess, true},
		{coreGraphics, "CGSessionCopyCurrentDictionary", &s.cgSessionCopyCurrentDictionary, true},
		{coreFoundation, "CFMachPortCreateRunLoopSource", &s.cfMachPortCreateRunLoopSource, false},
		{coreFoundation, "CFRunLoopGetCurrent", &s.cfRunLoopGetCurrent, false},
		{coreFoundation, "CFRunLoopAddSource", &s.cfRunLoopAddSource, false},
		{coreFoundation, "CFRunLoopRunInMode", &s.cfRunLoopRunInMode, false},
		{coreFoundation, "CFRelease", &s.cfRelease, false},
		{coreFoundation, "CFStringCreateWithCString", &s.cfStringCreateWithCString, false},
		{coreFoundation, "CFDictionaryGetValue", &s.cfDictionaryGetValue, false},
		{coreFoundation, "CFNumberGetValue", &s.cfNumberGetValue, false},
		{appServices, "AXIsProcessTrusted", &s.axIsProcessTrusted, false},
		{carbon, "IsSecureEventInputEnabled", &s.isSecureEventInputEnabled, true},
		{libSystem, "proc_name", &s.procName, true},
		{coreFoundation, "CFRunLoopRemoveSource", &s.cfRunLoopRemoveSource, false},
		{coreFoundation, "CFMachPortInvalidate", &s.cfMachPortInvalidate, false},
		{ioKit, "IOServiceMatching", &s.ioServiceMatching, true},
		{ioKit, "IOServiceGetMatchingService", &s.ioServiceGetMatchingService, true},
		{ioKit, "IOServiceOpen", &s.ioServiceOpen, true},
		{ioKit, "IOServiceClose", &s.ioServiceClose, true},
		{ioKit, "IOObjectRelease", &s.ioObjectRelease, true},
		{ioKit, "IOHIDGetModifierLockState", &s.ioHIDGetModifierLockState, true},
		{ioKit, "IOHIDSetModifierLockState", &s.ioHIDSetModifierLockState, true},
	} {
		addr, err := purego.Dlsym(libs[f.lib], f.name)
		if err != nil {
			if f.optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s has no %s: %v", ErrUnavailable, f.lib, f.name, err)
		}
		purego.RegisterFunc(f.fn, addr)
	}
	for _, v := range []struct {
		name string
		to   *uintptr
	}{{"kCFRunLoopCommonModes", &s.commonModes}, {"kCFRunLoopDefaultMode", &s.defaultMode}} {
		addr, err := purego.Dlsym(libs[coreFoundation], v.name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s has no %s: %v", ErrUnavailable, coreFoundation, v.name, err)
		}
		// The symbol is a CFStringRef variable: its address, read once.
		*v.to = **(**uintptr)(unsafe.Pointer(&addr))
	}
	if addr, err := purego.Dlsym(libs[libSystem], "mach_task_self_"); err == nil {
		s.taskSelf = **(**uint32)(unsafe.Pointer(&addr))
	}
	s.source = s.cgEventSourceCreate(cgStateCombined)
	return s, nil
}

// Access asks macOS what it allows this process. A check macOS lacks
// (before 10.15) counts as allowed: it had no such permission then.
func (s *System) Access() Access {
	a := Access{Accessibility: s.axIsProcessTrusted(), Listen: true, Post: true}
	if s.cgPreflightListenEventAccess != nil {
		a.Listen = s.cgPreflightListenEventAccess()
	}
	if s.cgPreflightPostEventAccess != nil {
		a.Post = s.cgPreflightPostEventAccess()
	}
	return a
}

// SecureInput reports whether an app has Secure Event Input on, and which
// (SecureInputApp's form; "" when macOS does not say).
func (s *System) SecureInput() (bool, string) {
	if s.isSecureEventInputEnabled == nil || !s.isSecureEventInputEnabled() {
		return false, ""
	}
	pid := s.secureInputPID()
	var name string
	if pid > 0 && s.procName != nil {
		buf := make([]byte, 256)
		if n := s.procName(pid, &buf[0], uint32(len(buf))); n > 0 {
			name = string(buf[:n])
		}
	}
	return true, SecureInputApp(int(pid), name)
}

// secureInputPID reads kCGSSessionSecureInputPID from the session's
// dictionary, 0 if it is not there.
func (s *System) secureInputPID() int32 {
	if s.cgSessionCopyCurrentDictionary == nil {
		return 0
	}
	dict := s.cgSessionCopyCurrentDictionary()
	if dict == 0 {
		return 0
	}
	defer s.cfRelease(dict)
	key := s.cfStringCreateWithCString(0, "kCGSSessionSecureInputPID", cfUTF8)
	if key == 0 {
		return 0
	}
	defer s.cfRelease(key)
	num := s.cfDictionaryGetValue(dict, key)
	var pid int32
	if num == 0 || !s.cfNumberGetValue(num, cfNumberInt, &pid) {
		return 0
	}
	return pid
}

// FlagsState is the flags of the keyboard as the HID system has them now
// (Caps Lock in FlagAlphaShift).
func (s *System) FlagsState() Flags { return Flags(s.cgEventSourceFlagsState(cgStateHID)) }

// Post creates and posts one keyboard event at the HID level, as a
// keyboard's would come.
func (s *System) Post(p Post) error {
	ev := s.cgEventCreateKeyboardEvent(s.source, p.Keycode, p.Down)
	if ev == 0 {
		return fmt.Errorf("CGEventCreateKeyboardEvent failed for virtual keycode %#x", p.Keycode)
	}
	defer s.cfRelease(ev)
	if p.Type == FlagsChanged {
		s.cgEventSetType(ev, uint32(FlagsChanged))
	}
	s.cgEventSetFlags(ev, uint64(p.Flags))
	if len(p.Text) > 0 {
		s.cgEventKeyboardSetUnicodeString(ev, uint64(len(p.Text)), &p.Text[0])
		runtime.KeepAlive(p.Text)
	}
	s.cgEventPost(cgHIDEventTap, ev)
	return nil
}

// tapHandler is the handler of the one tap that runs: the C callback is
// made once per process (purego callbacks are never freed) and calls it.
var (
	tapHandler  atomic.Pointer[func(Event) bool]
	tapPort     atomic.Uintptr
	callbackFn  uintptr
	callbackSet sync.Once
)

func tapCallback(proxy uintptr, typ uint32, ev uintptr, refcon uintptr) uintptr {
	h := tapHandler.Load()
	s := loaded
	if h == nil || s == nil {
		return ev
	}
	e := Event{Type: EventType(typ)}
	if e.Type == TapDisabledByTimeout || e.Type == TapDisabledByUserInput {
		// macOS turned the tap off: on again at once.
		if port := tapPort.Load(); port != 0 {
			s.cgEventTapEnable(port, true)
		}
		(*h)(e)
		return ev
	}
	e.Keycode = uint16(s.cgEventGetIntegerValueField(ev, FieldKeycode))
	e.Flags = Flags(s.cgEventGetFlags(ev))
	e.Autorepeat = s.cgEventGetIntegerValueField(ev, FieldAutorepeat) != 0
	if (*h)(e) {
		return 0 // dropped: no app sees it
	}
	return ev
}

// ErrTap is wrapped by RunTap's error when macOS refuses the tap.
var ErrTap = errors.New("macOS refused the keyboard event tap")

// RunTap taps the keyboard (KeyDown, KeyUp, FlagsChanged) of the login session
// until ctx is done, calling handle with each event on the tap's thread;
// handle returns true to drop the event (grab must then be set: a tap that
// only listens cannot drop). handle must be quick: macOS turns off a tap
// whose callback lags, and handle then gets a TapDisabled event.
func (s *System) RunTap(ctx context.Context, grab bool, handle func(Event) bool) error {
	callbackSet.Do(func() { callbackFn = purego.NewCallback(tapCallback) })
	if !tapHandler.CompareAndSwap(nil, &handle) {
		return fmt.Errorf("%w: a tap runs already in this process", ErrTap)
	}
	defer tapHandler.Store(nil)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	opt := uint32(cgTapListenOnly)
	if grab {
		opt = cgTapDefault
	}
	mask := uint64(1)<<KeyDown | uint64(1)<<KeyUp | uint64(1)<<FlagsChanged
	port := s.cgEventTapCreate(cgSessionTap, cgHeadInsert, opt, mask, callbackFn, 0)
	if port == 0 {
		need := NeedListen
		if grab {
			need = NeedGrab
		}
		if err := s.Access().Check(need, executable()); err != nil {
			return fmt.Errorf("%w: %w", ErrTap, err)
		}
		return fmt.Errorf("%w (CGEventTapCreate returned nothing though the permissions are granted: try turning keyrelay's entries in %s and %s off and on)", ErrTap, PaneInputMonitoring, PaneAccessibility)
	}
	defer s.cfRelease(port)
	tapPort.Store(port)
	defer tapPort.Store(0)
	src := s.cfMachPortCreateRunLoopSource(0, port, 0)
	if src == 0 {
		return fmt.Errorf("%w: CFMachPortCreateRunLoopSource failed", ErrTap)
	}
	defer s.cfRelease(src)
	rl := s.cfRunLoopGetCurrent()
	s.cfRunLoopAddSource(rl, src, s.commonModes)
	// The thread goes back to Go's pool: nothing of the tap may stay in
	// its run loop.
	defer s.cfRunLoopRemoveSource(rl, src, s.commonModes)
	defer s.cfMachPortInvalidate(port)
	s.cgEventTapEnable(port, true)
	defer s.cgEventTapEnable(port, false)
	// The loop runs in slices of a quarter second, each ending to look
	// at ctx: a CFRunLoopStop from another goroutine could come before
	// the loop runs, and be lost.
	for ctx.Err() == nil {
		s.cfRunLoopRunInMode(s.defaultMode, 0.25, false)
	}
	return ctx.Err()
}

func executable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "keyrelay"
}

// CapsLock reads and sets the Caps Lock state of the HID system through
// IOKit (IOHIDGetModifierLockState, IOHIDSetModifierLockState): posted key
// events do not toggle it. Safe for use from one goroutine at a time.
type CapsLock struct {
	s    *System
	conn uint32
}

// OpenCapsLock connects to the HID system.
func (s *System) OpenCapsLock() (*CapsLock, error) {
	if s.ioHIDSetModifierLockState == nil || s.ioHIDGetModifierLockState == nil || s.ioServiceOpen == nil ||
		s.ioServiceMatching == nil || s.ioServiceGetMatchingService == nil || s.taskSelf == 0 {
		return nil, errors.New("this macOS lacks IOHIDSetModifierLockState")
	}
	svc := s.ioServiceGetMatchingService(0, s.ioServiceMatching("IOHIDSystem"))
	if svc == 0 {
		return nil, errors.New("no IOHIDSystem service")
	}
	defer s.ioObjectRelease(svc)
	var conn uint32
	if kr := s.ioServiceOpen(svc, s.taskSelf, ioHIDParamConn, &conn); kr != 0 {
		return nil, fmt.Errorf("opening IOHIDSystem: kern_return_t %#x", kr)
	}
	return &CapsLock{s: s, conn: conn}, nil
}

// On reports whether Caps Lock is on.
func (c *CapsLock) On() (bool, error) {
	var on bool
	if kr := c.s.ioHIDGetModifierLockState(c.conn, ioHIDCapsLock, &on); kr != 0 {
		return false, fmt.Errorf("IOHIDGetModifierLockState: kern_return_t %#x", kr)
	}
	return on, nil
}

// Set turns Caps Lock on or off.
func (c *CapsLock) Set(on bool) error {
	if kr := c.s.ioHIDSetModifierLockState(c.conn, ioHIDCapsLock, on); kr != 0 {
		return fmt.Errorf("IOHIDSetModifierLockState: kern_return_t %#x", kr)
	}
	return nil
}

// Close ends the connection.
func (c *CapsLock) Close() error {
	c.s.ioServiceClose(c.conn)
	return nil
}
