package capture

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"

	"github.com/keyrelay/keyrelay/keys"
)

// physicalKeys maps the decoder's named keys to the physical keys relayed
// for them. Keys a terminal names but HID has no key for (Begin, Select,
// F25 and up, Hyper, play and pause apart) are missing: they are dropped
// with a note, never replaced by another key.
var physicalKeys = func() map[rune]keys.Code {
	m := map[rune]keys.Code{
		uv.KeyUp: keys.ArrowUp, uv.KeyDown: keys.ArrowDown, uv.KeyLeft: keys.ArrowLeft, uv.KeyRight: keys.ArrowRight,
		uv.KeyInsert: keys.Insert, uv.KeyDelete: keys.Delete, uv.KeyHome: keys.Home, uv.KeyEnd: keys.End,
		uv.KeyPgUp: keys.PageUp, uv.KeyPgDown: keys.PageDown, uv.KeyFind: keys.Find,
		uv.KeyEnter: keys.Enter, uv.KeyTab: keys.Tab, uv.KeyBackspace: keys.Backspace,
		uv.KeyEscape: keys.Escape, uv.KeySpace: keys.Space,
		uv.KeyKpEnter: keys.NumpadEnter, uv.KeyKpEqual: keys.NumpadEqual, uv.KeyKpMultiply: keys.NumpadMultiply,
		uv.KeyKpPlus: keys.NumpadAdd, uv.KeyKpComma: keys.NumpadComma, uv.KeyKpSep: keys.NumpadComma,
		uv.KeyKpMinus: keys.NumpadSubtract, uv.KeyKpDecimal: keys.NumpadDecimal, uv.KeyKpDivide: keys.NumpadDivide,
		// The keypad's NumLock-off keys are relayed as what they did here:
		// the receiver's NumLock may be on, where Numpad8 would type 8.
		uv.KeyKpUp: keys.ArrowUp, uv.KeyKpDown: keys.ArrowDown, uv.KeyKpLeft: keys.ArrowLeft, uv.KeyKpRight: keys.ArrowRight,
		uv.KeyKpPgUp: keys.PageUp, uv.KeyKpPgDown: keys.PageDown, uv.KeyKpHome: keys.Home, uv.KeyKpEnd: keys.End,
		uv.KeyKpInsert: keys.Insert, uv.KeyKpDelete: keys.Delete,
		uv.KeyPrintScreen: keys.PrintScreen, uv.KeyPause: keys.Pause, uv.KeyMenu: keys.ContextMenu,
		uv.KeyMediaPlayPause: keys.MediaPlayPause, uv.KeyMediaStop: keys.MediaStop,
		uv.KeyMediaNext: keys.MediaTrackNext, uv.KeyMediaPrev: keys.MediaTrackPrevious,
		uv.KeyMute: keys.AudioVolumeMute, uv.KeyRaiseVol: keys.AudioVolumeUp, uv.KeyLowerVol: keys.AudioVolumeDown,
		// Modifier keys themselves: only the kitty protocol reports them.
		uv.KeyLeftShift: keys.ShiftLeft, uv.KeyLeftCtrl: keys.ControlLeft, uv.KeyLeftAlt: keys.AltLeft,
		uv.KeyLeftSuper: keys.MetaLeft, uv.KeyLeftMeta: keys.MetaLeft,
		uv.KeyRightShift: keys.ShiftRight, uv.KeyRightCtrl: keys.ControlRight, uv.KeyRightAlt: keys.AltRight,
		uv.KeyRightSuper: keys.MetaRight, uv.KeyRightMeta: keys.MetaRight,
	}
	for i := range rune(10) {
		m[uv.KeyKp0+i] = keys.Numpad0
		if i > 0 {
			m[uv.KeyKp0+i] = keys.Numpad1 + keys.Code(i-1)
		}
	}
	for i := range rune(12) {
		m[uv.KeyF1+i] = keys.F1 + keys.Code(i)
		m[uv.KeyF13+i] = keys.F13 + keys.Code(i)
	}
	return m
}()

// notRelayed are keys the kitty protocol reports that are deliberately not
// relayed: AltGr (ISO level 3 and 5 shift) and the lock keys only change
// which character another key types, and that character is what travels.
var notRelayed = map[rune]bool{
	uv.KeyIsoLevel3Shift: true, uv.KeyIsoLevel5Shift: true,
	uv.KeyCapsLock: true, uv.KeyNumLock: true, uv.KeyScrollLock: true,
}

// heldKey is one key down at the receiver and the terminal key holding it.
type heldKey struct {
	// by is the terminal key (the decoder's key code) whose release lets
	// go of key; tapKey for the keys of a tap.
	by  rune
	key keys.Key
}

// tapKey marks held keys that belong to a tap in progress. A tap is over
// before the next event is handled, so no release event meets its keys.
const tapKey rune = -1

// relayer turns decoded terminal events into key events. Without the kitty
// protocol every key is a tap; with it, presses and releases are relayed as
// they come. It owns no goroutine: Play and the tests feed it events.
type relayer struct {
	emit func(keys.Key, bool) error
	// kitty: the terminal reports presses, repeats and releases.
	kitty bool
	// held are the keys down at the receiver, in press order. A key two
	// terminal keys hold (Meta from Super and Meta) is listed for each and
	// goes up when the last one lets go, so no key goes down twice or up
	// while another terminal key still holds it.
	held []heldKey
	// eraseBS: the terminal's Backspace sends BS (stty erase ^H), which
	// the decoder reads as Ctrl+H; relay it as Backspace.
	eraseBS bool
	// sent counts key presses relayed, dropped the inputs not relayed.
	sent, dropped int
	// note says why the last dropped input was not relayed.
	note string
}

// event relays one decoded event. It reports end for Ctrl+], which ends the
// session and is not relayed.
func (r *relayer) event(ev uv.Event) (end bool, err error) {
	switch ev := ev.(type) {
	case uv.KeyPressEvent:
		k := uv.Key(ev)
		if k.Mod.Contains(uv.ModCtrl) && (k.Code == ']' || k.BaseCode == ']') {
			return true, nil
		}
		if r.kitty {
			return false, r.kittyPress(k)
		}
		return false, r.legacyPress(k)
	case uv.KeyReleaseEvent:
		// Without the kitty protocol nothing was pressed to release; with
		// it, a release of a key pressed before the session is nothing to
		// relay either.
		return false, r.release(ev.Code)
	case uv.PasteEvent:
		return false, r.paste(ev.Content)
	case uv.MultiEvent:
		for _, e := range ev {
			if end, err := r.event(e); end || err != nil {
				return end, err
			}
		}
	case uv.PasteStartEvent, uv.PasteEndEvent:
		// The paste's brackets; its text comes as one PasteEvent.
		return false, nil
	case uv.CursorPositionEvent:
		// Never asked for: the decoder reports CSI 1;<mod>R, a modified F3,
		// as both F3 and a cursor position; the F3 is relayed.
		return false, nil
	case uv.UnknownEvent, uv.UnknownCsiEvent, uv.UnknownSs3Event, uv.UnknownOscEvent,
		uv.UnknownDcsEvent, uv.UnknownApcEvent, uv.UnknownPmEvent, uv.UnknownSosEvent:
		// Their String is the sequence, quoted.
		r.drop(fmt.Sprintf("unknown sequence %s not sent", shorten(fmt.Sprint(ev))))
	case uv.MouseClickEvent, uv.MouseReleaseEvent, uv.MouseWheelEvent, uv.MouseMotionEvent:
		r.drop("mouse event not sent")
	case uv.FocusEvent, uv.BlurEvent:
		r.drop("focus report not sent")
	case decoderFailure:
		r.drop(fmt.Sprintf("input that broke the decoder not sent (%s)", shorten(fmt.Sprint(ev.reason))))
	case nil:
	default:
		r.drop(fmt.Sprintf("terminal report %s not sent", strings.TrimPrefix(fmt.Sprintf("%T", ev), "uv.")))
	}
	return false, nil
}

// legacyPress taps a key a terminal reported without the kitty protocol:
// modifiers the decoder saw are pressed first and released last; text is
// typed as characters, named keys as physical keys.
func (r *relayer) legacyPress(k uv.Key) error {
	if notRelayed[k.Code] {
		return nil
	}
	if r.eraseBS && k.Code == 'h' && k.Mod == uv.ModCtrl {
		return r.tap([]keys.Key{keys.Key(keys.Backspace)})
	}
	var mods []keys.Key
	if k.Mod.Contains(uv.ModCtrl) {
		mods = append(mods, keys.Key(keys.ControlLeft))
	}
	if k.Mod.Contains(uv.ModAlt) {
		mods = append(mods, keys.Key(keys.AltLeft))
	}
	if k.Mod&(uv.ModSuper|uv.ModMeta|uv.ModHyper) != 0 {
		mods = append(mods, keys.Key(keys.MetaLeft))
	}
	if k.Text != "" {
		return r.typeText(k.Text, mods)
	}
	if c, ok := physicalKeys[k.Code]; ok {
		// A physical key takes Shift as a key (Shift+Tab, Shift+↑); a
		// character below already carries its case.
		if k.Mod.Contains(uv.ModShift) {
			mods = append(mods, keys.Key(keys.ShiftLeft))
		}
		return r.tap(append(mods, keys.Key(c)))
	}
	c := k.Code
	if k.Mod.Contains(uv.ModShift) {
		// Alt+Shift+x is Alt and 'X'; the decoder does not always give the
		// shifted code.
		c = k.ShiftedCode
		if c == 0 {
			c = unicode.ToUpper(k.Code)
		}
	}
	if key, ok := codeChar(c); ok {
		return r.tap(append(mods, key))
	}
	r.drop(fmt.Sprintf("%s has no key: not sent", keyName(k)))
	return nil
}

// kittyPress presses a key the kitty protocol reported. Its text, if any,
// goes down as characters; else a named key as its physical key, or a
// Ctrl/Alt chord's key as its unshifted character. Modifier keys are keys
// like any other. Everything goes down until the terminal reports the
// release; repeats are dropped, as the receiver's OS repeats a held key.
func (r *relayer) kittyPress(k uv.Key) error {
	if k.IsRepeat || notRelayed[k.Code] || r.holds(k.Code) {
		return nil
	}
	var down []keys.Key
	if k.Text != "" {
		down = r.textKeys(k.Text)
	} else if c, ok := physicalKeys[k.Code]; ok {
		down = []keys.Key{keys.Key(c)}
	} else if key, ok := codeChar(k.Code); ok {
		down = []keys.Key{key}
	}
	if len(down) == 0 {
		if k.Text == "" {
			r.drop(fmt.Sprintf("%s has no key: not sent", keyName(k)))
		}
		return nil
	}
	for _, key := range down {
		if err := r.press(k.Code, key); err != nil {
			return err
		}
	}
	r.sent++
	return nil
}

// paste types pasted text: what the user put into the terminal. Line
// breaks are Enter (CR LF once), tabs Tab.
func (r *relayer) paste(text string) error {
	text = strings.ReplaceAll(text, "\r\n", "\r")
	for _, c := range text {
		var err error
		switch c {
		case '\r', '\n':
			err = r.tap([]keys.Key{keys.Key(keys.Enter)})
		case '\t':
			err = r.tap([]keys.Key{keys.Key(keys.Tab)})
		default:
			err = r.typeText(string(c), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// typeText taps each character of text, each inside mods.
func (r *relayer) typeText(text string, mods []keys.Key) error {
	for _, key := range r.textKeys(text) {
		if err := r.tap(append(mods[:len(mods):len(mods)], key)); err != nil {
			return err
		}
	}
	return nil
}

// textKeys are the keys that type text: its characters, a space as the
// Space key (the same key on every layout, and one a receiver that cannot
// type characters still presses). What is not a character is dropped.
func (r *relayer) textKeys(text string) []keys.Key {
	var out []keys.Key
	for _, c := range text {
		switch {
		case c == ' ':
			out = append(out, keys.Key(keys.Space))
		case keys.ValidChar(c) && c != utf8.RuneError:
			out = append(out, keys.Char(c))
		default:
			r.drop(fmt.Sprintf("%U is not a character: not sent", c))
		}
	}
	return out
}

// codeChar is the character a key code without text stands for (the key of
// Ctrl+C is 'c'), if it is one. U+FFFD is the decoder's invalid code, which
// no one typed; a private-use code is one of the kitty protocol's
// functional keys that has no mapping here, not a character.
func codeChar(c rune) (keys.Key, bool) {
	if !keys.ValidChar(c) || c == utf8.RuneError || unicode.Is(unicode.Co, c) {
		return 0, false
	}
	return keys.Char(c), true
}

// tap presses keys in order and releases them in reverse: a chord.
func (r *relayer) tap(chord []keys.Key) error {
	for _, key := range chord {
		if err := r.press(tapKey, key); err != nil {
			return err
		}
	}
	r.sent++
	return r.release(tapKey)
}

// holds reports whether the terminal key by holds anything.
func (r *relayer) holds(by rune) bool {
	for _, h := range r.held {
		if h.by == by {
			return true
		}
	}
	return false
}

// press puts key down for the terminal key by; a key already down stays
// down, held now by both.
func (r *relayer) press(by rune, key keys.Key) error {
	already := r.isDown(key)
	r.held = append(r.held, heldKey{by, key})
	if already {
		return nil
	}
	return r.emit(key, true)
}

// release lets go of what the terminal key by holds, last pressed first.
func (r *relayer) release(by rune) error {
	for i := len(r.held) - 1; i >= 0; i-- {
		if r.held[i].by != by {
			continue
		}
		key := r.held[i].key
		r.held = append(r.held[:i], r.held[i+1:]...)
		if r.isDown(key) {
			continue
		}
		if err := r.emit(key, false); err != nil {
			return err
		}
	}
	return nil
}

// releaseAll lets go of everything, last pressed first: the session ends.
func (r *relayer) releaseAll() error {
	for len(r.held) > 0 {
		if err := r.release(r.held[len(r.held)-1].by); err != nil {
			return err
		}
	}
	return nil
}

func (r *relayer) isDown(key keys.Key) bool {
	for _, h := range r.held {
		if h.key == key {
			return true
		}
	}
	return false
}

func (r *relayer) drop(note string) {
	r.dropped++
	r.note = note
}

// keyName names a decoded key for a note ("ctrl+begin").
func keyName(k uv.Key) string {
	if s := k.String(); s != "" {
		return shorten(fmt.Sprintf("%+q", s))
	}
	return fmt.Sprintf("key %#x", k.Code)
}

// shorten cuts s to a length the status line can show.
func shorten(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:37]) + "..."
}
