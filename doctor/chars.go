package doctor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/x11/xkblayout"
)

// charactersCheck is send's characters mode as doctor sees it: which
// destinations get characters (--keys characters, keys = "characters" in
// a [[send.to]] table), and where their layout comes from, the source's
// keymap (capture.SourceKeymap) or --layout through this machine's XKB data, or
// why it cannot come from anywhere: the check's name, and run, which
// reads the layout. ok is false when no destination gets characters and
// --layout names none: no check then.
func (o *Options) charactersCheck(src capture.SourceBackend) (name string, run func() Check, ok bool) {
	var who string
	switch o.Keys {
	case "characters":
		who = "every destination (" + setting("keys", o.Keys, o.keysFrom) + ")"
	case "physical":
		if o.Layout == "" {
			return "", nil, false
		}
		who = "no destination (" + setting("keys", o.Keys, o.keysFrom) + ")"
	case "":
		switch {
		case len(o.CharDests) > 0:
			who = strings.Join(o.CharDests, ", ") + ` (keys = "characters" in ` + o.origin(o.toFrom, "[[send.to]]") + ")"
		case o.Layout != "":
			who = "no destination"
		default:
			return "", nil, false
		}
	default:
		return "characters mode", func() Check {
			return Check{Needed: true, Err: fmt.Errorf("%s: unknown", setting("keys", strconv.Quote(o.Keys), o.keysFrom)),
				Fix: `choose "physical" or "characters"` + spell.Suggest(o.Keys, []string{"physical", "characters"})}
		}, true
	}
	return "characters mode: " + who, func() Check { return o.readLayout(src, who) }, true
}

// readLayout is charactersCheck's check of where the layout of who comes
// from: it reads it as send will.
func (o *Options) readLayout(src capture.SourceBackend, who string) Check {
	c := Check{Needed: true}
	if strings.HasPrefix(who, "no destination") {
		c.Err = fmt.Errorf("%s names this keyboard's layout for characters mode, and no destination gets characters", setting("layout", o.Layout, o.layoutFrom))
		c.Fix = `add --keys characters (or keys = "characters" to a [[send.to]]), or drop --layout`
		return c
	}
	compose, err := os.Open(xkblayout.ComposeFile)
	if err != nil {
		c.Err = fmt.Errorf("dead keys compose through the Compose file: %w", err)
		c.Fix = "apt-get install libx11-data"
		return c
	}
	defer compose.Close()
	if o.Layout != "" {
		from := setting("layout", o.Layout, o.layoutFrom)
		err := xkblayout.CheckName(o.Layout)
		var l *xkblayout.Layout
		if err == nil {
			l, err = xkblayout.Load(os.DirFS(xkblayout.Dir), o.Layout, compose)
		}
		switch {
		case err != nil && (errors.Is(err, xkblayout.ErrUnknown) || xkblayout.CheckName(o.Layout) != nil):
			c.Err = fmt.Errorf("%s: %w", from, err)
			c.Fix = "name the XKB layout this keyboard is used with, as LAYOUT or LAYOUT(VARIANT) (de, fr, us(intl)): " + xkblayout.Dir + "/rules/evdev.lst lists them, and setxkbmap -query shows the one an X desktop uses"
		case err != nil:
			c.Err = fmt.Errorf("%s: %w", from, err)
			c.Fix = "install the XKB data (apt-get install xkb-data), or name another layout"
		default:
			c.OK = fmt.Sprintf("through the layout %s (%s), named by %s, read from this machine's XKB data (%s) as send starts", l.Name(), l.Description(), from, xkblayout.Dir)
		}
		return c
	}
	if src.Keymap == nil {
		c.Err = fmt.Errorf("--input %s cannot tell this keyboard's layout, and no --layout names it", src.Name)
		c.Fix = `add --layout LAYOUT (layout = "de" in [send]): the XKB layout this keyboard is used with, e.g. --layout de (setxkbmap -query shows it on X)`
		var with []string
		for _, b := range capture.Sources {
			if b.Keymap != nil {
				with = append(with, "--input "+b.Name+", which reads "+b.Keymap.What)
			}
		}
		if len(with) > 0 {
			c.Fix += "; or use " + orList(with)
		}
		return c
	}
	c.OK, c.Err = src.Keymap.Check(compose)
	if c.Err != nil {
		c.Fix = src.Keymap.Fix
	}
	return c
}

// setting names a send setting doctor checks, and where it came from
// when not the command line: "--layout de", or "de ([send] layout in
// config.toml:3)".
func setting(flag, value, from string) string {
	if from == "" || from == "default" || from == "--"+flag {
		return "--" + flag + " " + value
	}
	return value + " (" + from + ")"
}

// orList joins words as a list in prose: "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
