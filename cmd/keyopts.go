package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/secret"
)

// registerKeyFlags adds the key flags send and recv share.
func registerKeyFlags(f *pflag.FlagSet, k *relay.KeyOptions) {
	f.StringVar(&k.KeyFile, "key-file", "", "pre-shared key made by 'keyrelay keygen' (or $"+secret.Env+", or key-file in the config file): an optional second factor of the handshake (both ends need the same one), required for one-way")
	f.BoolVar(&k.Insecure, "insecure", false, "relay in plaintext, without a key: anyone on the network can read and inject keys (command line only, never from the config file or the environment; recv: with a loopback --listen or an --allow list)")
}

// NewCmdKeygen builds `keyrelay keygen`.
func NewCmdKeygen(stdio IO) *cobra.Command {
	var out string
	var force bool
	c := &cobra.Command{
		Use:     "keygen [--out FILE] [--force]",
		Example: keygenExample,
		Short:   "Make a pre-shared key for send and recv",
		Long: `Make a random 256-bit pre-shared key. With --out it is written to FILE with
mode 0600 (an existing file is kept unless --force, which replaces it: a
symlink is replaced, its target left alone); without, it is printed.
Copy the file to both machines over a channel you trust (scp, a USB stick)
and give it to send and recv with --key-file (or $` + secret.Env + `). Both
print the key's fingerprint at start: compare them.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			key, err := secret.Generate()
			if err != nil {
				return err
			}
			if out == "" {
				_, err := stdio.Out.Write(secret.Encode(key))
				fmt.Fprintf(stdio.Err, "keyrelay keygen: fingerprint %s\n", secret.Fingerprint(key))
				return err
			}
			if err := secret.Write(out, key, force); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "keyrelay keygen: wrote %s (mode 0600), fingerprint %s\n", out, secret.Fingerprint(key))
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "write the key to this file (mode 0600)")
	c.Flags().BoolVar(&force, "force", false, "replace an existing key file")
	return c
}
