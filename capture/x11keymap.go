package capture

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"unicode"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/x11/keysym"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// X11Keymap reads the keymap of the X server of $DISPLAY, for send --keys
// characters with --input x11: each key's keysyms at levels 1-4 of its
// first group, as the core keyboard mapping gives XKB's keymap (level 1
// and 2, then group 2's, then levels 3 and 4), and the dead-key pairs of
// compose (the Compose file, which X's own input method reads for the
// same keys). FollowX11Keymap reads it again as it changes; a second
// group (a layout switched to with a group key) is not read.
func X11Keymap(compose io.Reader) (*charmode.Table, error) {
	c, err := dialX11()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	t, err := readX11Table(c)
	if err != nil {
		return nil, err
	}
	t.Seqs = map[[2]uint32]rune{}
	err = xkblayout.ParseCompose(compose, func(seq []string, result string) {
		if len(seq) != 2 || len([]rune(result)) != 1 {
			return
		}
		d, ok1 := keysym.Parse(seq[0])
		b, ok2 := keysym.Parse(seq[1])
		if !ok1 || !ok2 || d < 0xfe50 || d > 0xfe93 {
			return
		}
		if _, dup := t.Seqs[[2]uint32{d, b}]; !dup {
			t.Seqs[[2]uint32{d, b}] = []rune(result)[0]
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the Compose file: %w", err)
	}
	return t, nil
}

// readX11Table reads the core keyboard mapping of c's server.
func readX11Table(c *xgb.Conn) (*charmode.Table, error) {
	setup := xproto.Setup(c)
	first, last := setup.MinKeycode, setup.MaxKeycode
	m, err := xproto.GetKeyboardMapping(c, first, byte(last-first+1)).Reply()
	if err != nil {
		return nil, fmt.Errorf("%w: reading the keymap: %v", ErrNoX11, err)
	}
	return x11Table(first, int(m.KeysymsPerKeycode), m.Keysyms), nil
}

// FollowX11Keymap follows the keymap of the X server of $DISPLAY from
// was, which X11Keymap read: each time the server's keyboard mapping
// changes (setxkbmap, xmodmap), it reads it again and, if a key's
// keysyms changed, calls changed with the new table (with was's Compose
// pairs, which no keymap changes), until ctx is done or the server goes
// away (then it returns the reason). A change between X11Keymap and this
// call is caught too: the keymap is read once more as it starts.
//
// It learns of a change from the core protocol's MappingNotify, which the
// server sends every client that has not turned XKB on for itself (an
// XKB-aware client gets no MappingNotify for a whole new keymap, as
// setxkbmap loads): the connection is its own, for that reason.
func FollowX11Keymap(ctx context.Context, was *charmode.Table, changed func(*charmode.Table)) error {
	c, err := dialX11()
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, c.Close)
	defer stop()
	display := os.Getenv("DISPLAY")
	last := was
	reread := func() error {
		t, err := readX11Table(c)
		if err != nil {
			return err
		}
		if maps.Equal(t.Syms, last.Syms) && maps.Equal(t.Alpha, last.Alpha) {
			return nil
		}
		t.Seqs = was.Seqs
		last = t
		changed(t)
		return nil
	}
	if err := reread(); err != nil {
		return err
	}
	for {
		ev, err := c.WaitForEvent()
		if ev == nil && err == nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return xGone(display)
		}
		if n, ok := ev.(xproto.MappingNotifyEvent); !ok || n.Request != xproto.MappingKeyboard {
			continue
		}
		// One setxkbmap sends several: those already here are taken
		// with this one, and a later one finds the keymap unchanged
		// (the server replaces it whole before it notifies).
		for {
			next, err := c.PollForEvent()
			if next == nil && err == nil {
				break
			}
		}
		if err := reread(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// x11Table turns a core keyboard mapping (per keycode from first, per
// entries: group 1 levels 1-2, group 2 levels 1-2, group 1 levels 3-4)
// into a charmode.Table. An X keycode is its evdev code + 8.
func x11Table(first xproto.Keycode, per int, syms []xproto.Keysym) *charmode.Table {
	t := &charmode.Table{Syms: map[keys.Code][4]uint32{}, Alpha: map[keys.Code]bool{}}
	at := func(row []xproto.Keysym, i int) uint32 {
		if i < len(row) {
			return uint32(row[i])
		}
		return 0
	}
	for i := 0; per > 0 && (i+1)*per <= len(syms); i++ {
		kc := int(first) + i
		if kc < 8 {
			continue
		}
		code, ok := keys.FromEvdev(uint16(kc - 8))
		if !ok {
			continue
		}
		row := syms[i*per : (i+1)*per]
		lv := [4]uint32{at(row, 0), at(row, 1), at(row, 4), at(row, 5)}
		if lv == [4]uint32{} {
			continue
		}
		t.Syms[code] = lv
		lo, ok1 := keysym.ToRune(lv[0])
		up, ok2 := keysym.ToRune(lv[1])
		// A letter and its capital: Caps Lock shifts them, as XKB's
		// alphabetic types do.
		t.Alpha[code] = ok1 && ok2 && unicode.IsLower(lo) && unicode.IsUpper(up)
	}
	return t
}

// checkX11Keymap is doctor's look at the X server's keymap (SourceKeymap's
// Check): read as send reads it, with the layout's name when the server
// records one.
func checkX11Keymap(compose io.Reader) (string, error) {
	if _, err := X11Keymap(compose); err != nil {
		return "", fmt.Errorf("the X server's keymap cannot be read: %w", err)
	}
	name, _ := x11LayoutName()
	if name != "" {
		name = ", now the layout " + name
	}
	return fmt.Sprintf("through the X server's keymap (DISPLAY=%s%s), read as send starts and again each time it changes (setxkbmap)", os.Getenv("DISPLAY"), name), nil
}

// x11LayoutName is the layout the X server of $DISPLAY was last given by
// name (setxkbmap, the desktop's settings), as its root window's
// _XKB_RULES_NAMES says: "de", "us,de", "fr(bepo)". Empty when none is
// recorded (a keymap loaded by xkbcomp or changed by xmodmap has none).
// doctor names it (checkX11Keymap): the keymap itself is what characters
// mode reads.
func x11LayoutName() (string, error) {
	c, err := dialX11()
	if err != nil {
		return "", err
	}
	defer c.Close()
	const name = "_XKB_RULES_NAMES"
	atom, err := xproto.InternAtom(c, true, uint16(len(name)), name).Reply()
	if err != nil {
		return "", fmt.Errorf("%w: reading %s: %v", ErrNoX11, name, err)
	}
	if atom.Atom == xproto.AtomNone {
		return "", nil
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	p, err := xproto.GetProperty(c, false, root, atom.Atom, xproto.AtomString, 0, 1024).Reply()
	if err != nil {
		return "", fmt.Errorf("%w: reading %s: %v", ErrNoX11, name, err)
	}
	return rulesLayout(p.Value), nil
}

// rulesLayout is the layout an _XKB_RULES_NAMES value names: its rules,
// model, layout, variant and options are NUL-terminated strings, and the
// layouts and variants lists by group ("us,de" and ",nodeadkeys" are
// "us,de(nodeadkeys)"). Empty when the value names none.
func rulesLayout(v []byte) string {
	f := strings.Split(string(v), "\x00")
	if len(f) < 3 || f[2] == "" {
		return ""
	}
	layouts := strings.Split(f[2], ",")
	var variants []string
	if len(f) > 3 {
		variants = strings.Split(f[3], ",")
	}
	for i, l := range layouts {
		if i < len(variants) && variants[i] != "" {
			layouts[i] = l + "(" + variants[i] + ")"
		}
	}
	return strings.Join(layouts, ",")
}
