package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/charmode"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/internal/xkblayout"
)

// characters reports whether any destination gets characters.
func (o *SendOptions) characters() bool {
	for _, d := range o.dests {
		if d.Characters {
			return true
		}
	}
	return false
}

// validateKeys checks --keys and --layout: --keys characters puts every
// destination in characters mode, which needs the sender's layout: the
// source's own keymap where it reads one (capture.SourceKeymap), else
// --layout.
func (o *SendOptions) validateKeys(b capture.SourceBackend) error {
	switch o.Keys {
	case "", "physical":
		if o.Keys == "physical" {
			for i := range o.dests {
				o.dests[i].Characters = false
			}
		}
	case "characters":
		for i := range o.dests {
			o.dests[i].Characters = true
		}
	default:
		want := `unknown (choose "physical" or "characters")` + spell.Suggest(o.Keys, []string{"physical", "characters"})
		return config.BadValue("keys", want, fmt.Sprintf("--keys %q: %s", o.Keys, want))
	}
	if o.Layout != "" {
		if err := xkblayout.CheckName(o.Layout); err != nil {
			return config.BadValue("layout", err.Error(), "--layout: "+err.Error())
		}
		if !o.characters() {
			return config.Involving(errors.New(`--layout names this keyboard's layout for characters mode, and no destination gets characters: add --keys characters (or keys = "characters" to a [[send.to]]), or drop --layout`), "layout", "keys")
		}
	}
	if o.characters() && o.Layout == "" && b.Keymap == nil {
		return config.Involving(fmt.Errorf("characters mode with --input %s needs this keyboard's layout, which the source cannot tell: add --layout LAYOUT (the XKB layout the keyboard is used with, e.g. --layout de; setxkbmap -query shows it on X)", b.Name), "layout", "keys")
	}
	return nil
}

// keymap is the sender's layout for characters mode: the XKB layout
// --layout names, read from the system's XKB data and Compose file, or
// the keymap source b reads (validateKeys checked it has one), with the
// same Compose file for its dead keys.
func (o *SendOptions) keymap(b capture.SourceBackend) (charmode.Keymap, error) {
	compose, err := os.Open(xkblayout.ComposeFile)
	if err != nil {
		return nil, fmt.Errorf("characters mode composes dead keys through the Compose file: %w (apt-get install libx11-data)", err)
	}
	defer compose.Close()
	if o.Layout != "" {
		l, err := xkblayout.Load(os.DirFS(xkblayout.Dir), o.Layout, compose)
		if err != nil {
			return nil, fmt.Errorf("--layout %s: %w", o.Layout, err)
		}
		return l, nil
	}
	return b.Keymap.Read(compose)
}
