package cmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/keys"
)

// NewCmdKeys builds `keyrelay keys`: the key names scripts and logs use.
func NewCmdKeys(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:     "keys",
		Example: keysExample,
		Short:   "List key names (W3C KeyboardEvent.code) and their codes",
		Long: `List every physical key keyrelay knows: its W3C KeyboardEvent.code name
(used in scripts and logs, case-insensitive: what a browser reports as
event.code for the key; Chromium's name for the few keys the UI Events spec
does not name, such as MediaPlay and BrightnessUp), its code (what travels
on the wire; also accepted in scripts as 0xNN): the USB HID usage, or
0xE000 + the evdev code for a key that has none (media, launch and
brightness keys, Redo, Print: PROTOCOL.md §3.1), its Linux evdev name (what
--inject uinput presses;
"-" for a code the kernel gives no name, such as 84, X's ISO_Level3_Shift),
the X keycode --inject x11 presses (evdev + 8; "-" when the key has none),
the keysym the US layout puts on it (what --inject robotgo looks up on the
receiver's layout; "-" for none), and the other names scripts take for it
("-" for none: X keysym names such as Return, short forms such as ctrl, and
older names such as Katakana for Lang3). The receiver's layout decides what
a physical key types; characters ("é" in a script, text from a terminal) are
not keys and are not listed.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			also := map[keys.Code][]string{}
			for a, c := range keys.Aliases() {
				also[c] = append(also[c], a)
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tCODE\tEVDEV\tX KEYCODE\tUS KEYSYM\tALSO")
			for _, k := range keys.All() {
				name := k.Name
				if name == "" {
					name = "-"
				}
				evdev := k.EvdevName
				if evdev == "" {
					evdev = "-"
				}
				keycode := "-"
				if k.Evdev != 0 && k.Evdev+8 <= 255 {
					keycode = strconv.Itoa(int(k.Evdev) + 8)
				}
				keysym := k.X11Name
				if keysym == "" {
					keysym = "-"
				}
				others := also[k.Code]
				slices.SortFunc(others, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
				aliases := strings.Join(others, ",")
				if aliases == "" {
					aliases = "-"
				}
				fmt.Fprintf(w, "%s\t0x%02X\t%s\t%s\t%s\t%s\n", name, uint16(k.Code), evdev, keycode, keysym, aliases)
			}
			return w.Flush()
		},
	}
}
