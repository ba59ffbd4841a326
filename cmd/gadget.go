package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/usb/gadget"
)

// NewCmdGadget builds `keyrelay gadget setup|remove`: the USB keyboard
// gadget recv --inject hidg types through. A command rather than a shell
// script: the report descriptor it announces is the one internal/usb/hidkbd
// encodes reports for (one source for both), it needs nothing on the
// board but keyrelay, and its steps are tested.
func NewCmdGadget(stdio IO) *cobra.Command {
	var o gadget.Options
	c := &cobra.Command{
		Use:   "gadget setup|remove",
		Short: "Make this board a USB keyboard for recv --inject hidg",
		Long: `Make (setup) or take apart (remove) a USB keyboard gadget through the
Linux kernel's configfs (libcomposite, usb_f_hid): a boot keyboard with Caps,
Num and Scroll Lock LEDs, bound to this board's USB device controller (the
first in /sys/class/udc, or --udc). Its device, /dev/hidg0, is what
keyrelay recv --inject hidg types through; the computer at the other end of
the USB cable sees a keyboard and needs nothing installed.

Needs root and a USB port that can be a device: on a Raspberry Pi Zero, 4 or
5, dtoverlay=dwc2 in config.txt and dwc2 and libcomposite in /etc/modules
(then reboot), and the USB-C or OTG port to the computer. configfs does not
keep the gadget across a reboot: run setup at boot (contrib/systemd).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"setup", "remove"},
		RunE: func(c *cobra.Command, args []string) error {
			if runtime.GOOS != "linux" {
				return fmt.Errorf("the USB keyboard gadget is a Linux kernel function; this is %s", runtime.GOOS)
			}
			switch args[0] {
			case "setup":
				udc, err := gadget.Setup(gadget.OS{}, o)
				if err != nil {
					return err
				}
				dev, err := gadget.Device(gadget.OS{}, o)
				if err != nil {
					dev = "/dev/hidgN"
				}
				fmt.Fprintf(stdio.Out, "made the USB keyboard gadget on %s: %s; type through it with keyrelay recv --inject hidg --device %s\n", udc, dev, dev)
				return nil
			case "remove":
				return gadget.Remove(gadget.OS{}, o)
			}
			return config.Usagef("unknown gadget action %q (choose setup or remove)", args[0])
		},
	}
	c.Flags().StringVar(&o.UDC, "udc", "", "the USB device controller to bind to (ls /sys/class/udc; default: the first)")
	c.Flags().StringVar(&o.Name, "name", gadget.DefaultName, "the gadget's name in configfs (/sys/kernel/config/usb_gadget/NAME)")
	return c
}
