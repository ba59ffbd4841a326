package inject

import (
	"slices"
	"testing"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/keyrelay/keyrelay/keys"
)

// heldInPage lists the keycodes X11's guard page says are held.
func heldInPage(x *X11) []int {
	var out []int
	for kc := range 256 {
		if x.held[kc/8]&(1<<(kc%8)) != 0 {
			out = append(out, kc)
		}
	}
	return out
}

// TestX11GuardPageFollowsKeys: the guard's page holds exactly the keycodes
// the server holds for X11 (the guard releases those when recv is
// killed): a physical key, Shift pressed for a character, both released.
func TestX11GuardPageFollowsKeys(t *testing.T) {
	xvfb(t)
	c := xconn(t)
	x := newX11(t)
	if x.guard == nil {
		t.Fatal("X11 started no guard")
	}
	check := func(when string, want ...int) {
		t.Helper()
		if got := heldInPage(x); !slices.Equal(got, want) {
			t.Errorf("%s: the guard's page holds keycodes %v, want %v", when, got, want)
		}
		if got := pressed(t, c); !slices.Equal(got, want) {
			t.Errorf("%s: the server holds keycodes %v, want %v", when, got, want)
		}
	}
	inj(t, x, keys.Key(keys.KeyA), true)
	check("KeyA down", 38)
	inj(t, x, keys.Char('Q'), true) // Shift (50) and KeyQ (24)
	check("KeyA and Q down", 24, 38, 50)
	inj(t, x, keys.Char('Q'), false)
	inj(t, x, keys.Key(keys.KeyA), false)
	check("all released")
}

// TestX11GuardReleases: the X server keeps the keys of an XTEST client
// that went without releasing them; X11's guard, given the page, releases
// them through a connection of its own.
func TestX11GuardReleases(t *testing.T) {
	display := xvfb(t)
	c := xconn(t)
	undo := releaseX11([]string{display})
	gone := xconn(t)
	if err := xtest.Init(gone); err != nil {
		t.Fatal(err)
	}
	root := xproto.Setup(gone).DefaultScreen(gone).Root
	xtest.FakeInput(gone, xproto.KeyPress, 38, 0, root, 0, 0, 0)
	// The client goes as xkill ends one: the server closes it while
	// handling KillClient, so that it is gone when the request is done.
	pix, err := xproto.NewPixmapId(gone)
	if err != nil {
		t.Fatal(err)
	}
	xproto.CreatePixmap(gone, xproto.Setup(gone).DefaultScreen(gone).RootDepth, pix, xproto.Drawable(root), 1, 1)
	xproto.GetInputFocus(gone).Reply()
	if err := xproto.KillClientChecked(c, uint32(pix)).Check(); err != nil {
		t.Fatal(err)
	}
	if got := pressed(t, c); !slices.Equal(got, []int{38}) {
		t.Fatalf("after the client went, the server holds %v, want [38] (does it release a gone XTEST client's keys now?)", got)
	}
	page := make([]byte, x11HeldSize)
	page[38/8] |= 1 << (38 % 8)
	did, err := undo(page)
	if err != nil {
		t.Fatal(err)
	}
	if got := pressed(t, c); len(got) != 0 {
		t.Errorf("after the guard, the server holds %v", got)
	}
	t.Log(did)
	if did, err := releaseX11([]string{display})(make([]byte, x11HeldSize)); did != "" || err != nil {
		t.Errorf("an empty page: the guard said %q, %v; want nothing", did, err)
	}
}
