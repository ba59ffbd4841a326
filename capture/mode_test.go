package capture

import (
	"strings"
	"testing"
	"testing/synctest"
)

// TestModeSignalsEachChange checks what keyrelay switch waits on: a
// channel closed when a grabbing source's mode changes (and not when it is
// stored unchanged), a new one for the next change, and requests that
// replace an untaken one, so the source acts on the newest only.
func TestModeSignalsEachChange(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	var m mode
	steps := []struct {
		store       bool
		wantChanged bool
	}{
		{false, false}, // the zero value is local use
		{true, true},
		{true, false},
		{false, true},
	}
	for i, s := range steps {
		c := m.Changed()
		m.Store(s.store)
		if got := closed(c); got != s.wantChanged {
			t.Errorf("step %d: Store(%v) signalled %v, want %v", i, s.store, got, s.wantChanged)
		}
		if m.Load() != s.store {
			t.Errorf("step %d: Load() = %v after Store(%v)", i, m.Load(), s.store)
		}
	}
	m.request(true)
	m.request(false)
	select {
	case on := <-m.requests():
		if on {
			t.Error("took the older request, true; want the newest, false")
		}
	default:
		t.Fatal("no request to take")
	}
	select {
	case on := <-m.requests():
		t.Errorf("a second request %v was left: the newest must replace the older", on)
	default:
	}
}

// TestEvdevSetRelayingFollowsLikeTheHotkey checks keyrelay switch's side of
// the evdev source with --grab (DESIGN.md, Named destinations): SetRelaying
// from another goroutine gives the keyboards back, releasing at the receiver
// what was held there, and takes them again, as the hotkey does; ModeChanged
// is closed at each change, so that a waiter needs no polling.
func TestEvdevSetRelayingFollowsLikeTheHotkey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := newFakeEvdev()
		kb := sys.add("/dev/input/event3", "AT keyboard", true)
		hk, _ := ParseHotkey("ScrollLock")
		p := startEvdev(t, sys, &Evdev{Grab: true, Hotkey: hk})
		if !kb.isGrabbed() || !p.e.Relaying() {
			t.Fatalf("at start: grabbed %v, relaying %v; want both", kb.isGrabbed(), p.e.Relaying())
		}
		kb.key(evA, 1)
		p.take()

		changed := p.e.ModeChanged()
		p.e.SetRelaying(false)
		<-changed // no sleep: the source says when it has switched
		if got := p.take(); got != "-KeyA" {
			t.Errorf("switching to local use relayed %q, want the held KeyA released", got)
		}
		if kb.isGrabbed() || p.e.Relaying() {
			t.Errorf("after SetRelaying(false): grabbed %v, relaying %v; want neither", kb.isGrabbed(), p.e.Relaying())
		}
		kb.key(evA, 0)
		kb.key(evB, 1) // local use: acts here only
		kb.key(evB, 0)
		if got := p.take(); got != "" {
			t.Errorf("in local use relayed %q", got)
		}

		changed = p.e.ModeChanged()
		p.e.SetRelaying(false) // already there: nothing changes
		synctest.Wait()
		select {
		case <-changed:
			t.Error("ModeChanged closed by a request for the mode the source is in")
		default:
		}
		p.e.SetRelaying(true)
		<-changed
		synctest.Wait()
		if !kb.isGrabbed() || !p.e.Relaying() {
			t.Errorf("after SetRelaying(true): grabbed %v, relaying %v; want both", kb.isGrabbed(), p.e.Relaying())
		}
		kb.key(evB, 1)
		kb.key(evB, 0)
		if got := p.take(); got != "+KeyB -KeyB" {
			t.Errorf("relaying again relayed %q, want +KeyB -KeyB", got)
		}
		if s := p.said(); !strings.Contains(s, "local use (ScrollLock to relay)") {
			t.Errorf("status: %q", s)
		}
		p.stop()
	})
}
