package capture

import (
	"fmt"
	"io"
	"unicode"

	"github.com/jezek/xgb/xproto"

	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/keysym"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
	"github.com/keyrelay/keyrelay/keys"
)

// X11Keymap reads the keymap of the X server of $DISPLAY, for send --keys
// characters with --input x11: each key's keysyms at levels 1-4 of its
// first group, as the core keyboard mapping gives XKB's keymap (level 1
// and 2, then group 2's, then levels 3 and 4), and the dead-key pairs of
// compose (the Compose file, which X's own input method reads for the
// same keys). It is read once, as send starts: a layout changed during
// the session (setxkbmap) is not followed, nor a second group.
func X11Keymap(compose io.Reader) (*charmode.Table, error) {
	c, err := dialX11()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	setup := xproto.Setup(c)
	first, last := setup.MinKeycode, setup.MaxKeycode
	m, err := xproto.GetKeyboardMapping(c, first, byte(last-first+1)).Reply()
	if err != nil {
		return nil, fmt.Errorf("%w: reading the keymap: %v", ErrNoX11, err)
	}
	t := x11Table(first, int(m.KeysymsPerKeycode), m.Keysyms)
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
