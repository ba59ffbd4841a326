package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/keys"
)

// NewCmdKeys builds `keyrelay keys`: the key names scripts and logs use.
func NewCmdKeys(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "keys",
		Short: "List key names (W3C KeyboardEvent.code) and their codes",
		Long: `List every key keyrelay knows: its W3C KeyboardEvent.code name (used in
scripts and logs, case-insensitive), its USB HID usage (what travels on the
wire; also accepted in scripts as 0xNN), and its Linux evdev and X11 names.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(stdio.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tUSAGE\tEVDEV\tX11")
			for _, k := range keys.All() {
				name := k.Name
				if name == "" {
					name = "-"
				}
				fmt.Fprintf(w, "%s\t0x%02X\t%s\t%s\n", name, uint16(k.Code), k.EvdevName, k.X11Name)
			}
			return w.Flush()
		},
	}
}
