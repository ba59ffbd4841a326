//go:build windows

package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/keyrelay/keyrelay/internal/windows/win32"
	"github.com/keyrelay/keyrelay/keys"
)

// Windows captures every key press and release of the desktop it runs on
// (--input windows) with a low-level keyboard hook (WH_KEYBOARD_LL), in
// pure Go: a physical key is its scan code and extended flag
// (keys.FromWindowsScanCode). Keys a program typed with SendInput are not
// relayed (keyrelay's own recv on this machine would loop), nor are the
// keys Windows makes up (DecodeHook). Windows keeps some keys from every
// program's hook: Ctrl+Alt+Del, and all keys while the secure desktop (the
// sign-in screen, UAC prompts) is up.
//
// Without Grab every key also acts here. With Grab the hook swallows keys
// while relaying, and the hotkey switches to local use and back
// (capture.Switch, winHook). Windows removes a hook whose thread dies, so
// keyrelay can never leave the keyboard swallowed; it also skips a hook
// that takes too long (LowLevelHooksTimeout), which is why the hook hands
// keys to Play's goroutine rather than to the sender.
//
// With named destinations (SetRouting) a destination's local key pressed
// while relaying is let through to Windows as well as relayed (winHook),
// and in local use, where the hook sees every key too, a destination's
// hotkey makes it the target and takes the keyboard again. The hook must
// answer at once, so it cannot ask the router (whose lock a sender can
// hold): which keys act here is asked after each key the source relays and
// each switch it makes or is told of (Retarget: keyrelay switch), and read
// by the hook without waiting (hereKeys).
//
// Locks reports the local Caps Lock and Num Lock as relaying starts or
// resumes, with the epoch bit flipped (keys.Locks). Relaying, Grabbing and
// Locks are safe for concurrent use; Play is called once.
type Windows struct {
	Label  string
	Status io.Writer
	Grab   bool
	Hotkey Hotkey
	// Trace, if set, is told every hook event, with why it is not relayed
	// ("" if it is), from the hook's thread (for tests: wincapture -trace).
	Trace func(e HookEvent, skip string)

	relaying atomic.Bool
	locks    atomic.Uint32

	// SetRouting's, read by Play.
	localKey func(keys.Code) bool
	targets  [][]keys.Code
	pick     func(int)
	// here is what the hook reads of localKey (nil: no key acts here).
	here atomic.Pointer[hereKeys]
	// retarget asks Play's goroutine to read here again (Retarget).
	retarget chan struct{}
}

// SetRouting takes what send's named destinations decide (the
// routing.RoutingSource interface): which keys act here, the destinations'
// hotkeys and how to make one the target. Call it before Play.
func (w *Windows) SetRouting(local func(keys.Code) bool, hotkeys [][]keys.Code, pick func(int)) {
	w.localKey, w.targets, w.pick = local, hotkeys, pick
	w.retarget = make(chan struct{}, 1)
}

// Retarget tells the source that the router's target changed by a switch
// it did not make (routing.RetargetSource: keyrelay switch), so that Play
// asks again which keys act here. It does not block.
func (w *Windows) Retarget() {
	select {
	case w.retarget <- struct{}{}:
	default: // one is pending already
	}
}

// CheckWindows checks what the Windows source needs: nothing beyond a
// desktop session, which only installing the hook can tell.
func CheckWindows() error { return nil }

// Relaying reports whether keys go to the receiver now.
func (w *Windows) Relaying() bool { return w.relaying.Load() }

// Grabbing reports whether the source swallows keys (--grab).
func (w *Windows) Grabbing() bool { return w.Grab }

// Locks is the lock state the receiver should have (keys.Locks).
func (w *Windows) Locks() keys.Locks { return keys.Locks(w.locks.Load()) }

// winKey is what the hook hands Play's goroutine, in order: a key event,
// or (pick) the route to make the target, for a destination's hotkey
// pressed in local use.
type winKey struct {
	key  keys.Key
	down bool
	pick bool
	to   int
}

// Play relays key events until ctx is done or the hook fails.
func (w *Windows) Play(ctx context.Context, emit func(keys.Key, bool) error) error {
	// The hook must not wait on the sender: keys go through a channel.
	// One that fills (the sender stuck for 4096 key events) ends the
	// source rather than stall every keyboard of the desktop.
	out := make(chan winKey, 4096)
	var full atomic.Bool
	send := func(k winKey) error {
		select {
		case out <- k:
			return nil
		default:
			full.Store(true)
			return fmt.Errorf("%w: keys came faster than they could be sent (4096 waiting)", ErrNoWindows)
		}
	}
	push := func(k keys.Key, down bool) error { return send(winKey{key: k, down: down}) }
	h := &winHook{grab: w.Grab, emit: push}
	var readHere func() // reads w.here again, on Play's goroutine
	if w.Grab {
		hotkey := w.Hotkey
		if len(hotkey) == 0 {
			hotkey, _ = ParseHotkey(DefaultHotkey)
		}
		h.sw = &Switch{Hotkey: hotkey, Emit: push}
		h.sw.OnToggle = func(relaying bool) error {
			w.relaying.Store(relaying)
			if relaying {
				w.readLocks()
				w.status("relaying to %s: keys are swallowed here (%v for local use)", w.Label, hotkey)
			} else {
				w.status("local use: keys act here (%v to relay to %s)", hotkey, w.Label)
			}
			return nil
		}
		if w.pick != nil {
			for _, t := range w.targets {
				h.sw.Targets = append(h.sw.Targets, Hotkey(t))
			}
			h.sw.OnTarget = func(i int) error { return send(winKey{pick: true, to: i}) }
		}
		if w.localKey != nil {
			codes := winKeys()
			readHere = func() { w.here.Store(askHere(w.localKey, codes)) }
			readHere()
			h.sw.Here = func(c keys.Code) bool { return w.here.Load().has(c) }
			h.sw.ActHere = h.actHere
		}
	}
	// take hands one item of the hook's to the sender, on Play's
	// goroutine: a key, or a target picked; after either, which keys act
	// here may have changed (a destination's hotkey, relayed, switches
	// the router's target).
	take := func(k winKey) error {
		if k.pick {
			w.pick(k.to)
		} else if err := emit(k.key, k.down); err != nil {
			return err
		}
		if readHere != nil && (k.pick || k.down) {
			readHere()
		}
		return nil
	}
	thread := make(chan uint32, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the hook is the thread's; it is never unlocked
		done <- win32.RunHook(func(_ uintptr, kb *win32.KBDLLHOOKSTRUCT) bool {
			e := HookEvent{VK: kb.VkCode, Scan: kb.ScanCode, Flags: kb.Flags}
			if w.Trace != nil {
				_, _, skip := DecodeHook(e)
				w.Trace(e, skip)
			}
			return h.event(e)
		}, func(id uint32) { thread <- id })
	}()
	var id uint32
	select {
	case id = <-thread:
	case err := <-done:
		return fmt.Errorf("%w: cannot install the keyboard hook (%v): run send in a desktop session, not as a service", ErrNoWindows, err)
	}
	// stop ends the hook's message loop (once); after it, h is this
	// goroutine's alone.
	var loopErr error
	ended := false
	stop := func() {
		if !ended {
			win32.StopHook(id)
			loopErr, ended = <-done, true
		}
	}
	defer stop()
	w.readLocks()
	w.relaying.Store(true)
	if w.Grab {
		w.status("relaying to %s: keys are swallowed here (%v for local use; Ctrl+C ends)", w.Label, h.sw.Hotkey)
	} else {
		w.status("capturing the keys of this desktop → %s (keys act here too; Ctrl+C ends)", w.Label)
	}
	for {
		select {
		case <-ctx.Done():
			stop()
			if h.sw != nil {
				h.sw.ReleaseAll() // into out, sent below
			}
			for len(out) > 0 {
				if err := take(<-out); err != nil {
					return err
				}
			}
			return ctx.Err()
		case loopErr = <-done:
			ended = true
			if loopErr == nil {
				loopErr = errors.New("it ended")
			}
			return fmt.Errorf("%w: the keyboard hook's message loop failed: %v", ErrNoWindows, loopErr)
		case <-w.retarget:
			if readHere != nil {
				readHere()
			}
		case k := <-out:
			if err := take(k); err != nil {
				return err
			}
			if full.Load() && len(out) == 0 {
				return fmt.Errorf("%w: keys came faster than they could be sent (4096 waiting); nothing more is relayed", ErrNoWindows)
			}
		}
	}
}

// readLocks reads the local Caps Lock and Num Lock and flips the epoch.
func (w *Windows) readLocks() {
	l := keys.LocksKnown | (keys.Locks(w.locks.Load())^keys.LockEpoch)&keys.LockEpoch
	if win32.KeyToggled(win32.VK_CAPITAL) {
		l |= keys.LockCaps
	}
	if win32.KeyToggled(win32.VK_NUMLOCK) {
		l |= keys.LockNum
	}
	w.locks.Store(uint32(l))
}

func (w *Windows) status(format string, args ...any) {
	if w.Status != nil {
		fmt.Fprintf(w.Status, "keyrelay send: "+format+"\n", args...)
	}
}

// checkWindowsDesktop says whether the hook can read keys on this desktop
// (doctor): win32.Desktop.Check.
func checkWindowsDesktop() (string, error) {
	ok, err := win32.ReadDesktop().Check("read keys")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoWindows, err)
	}
	return ok, nil
}
