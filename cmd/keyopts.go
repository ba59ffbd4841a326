package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/secret"
)

// KeyOptions are the key flags send and recv share.
type KeyOptions struct {
	KeyFile  string
	Insecure bool
}

func (k *KeyOptions) register(f *pflag.FlagSet) {
	f.StringVar(&k.KeyFile, "key-file", "", "pre-shared key made by 'keyrelay keygen' (or $"+secret.Env+", or key-file in the config file): an optional second factor of the handshake (both ends need the same one), required for one-way")
	f.BoolVar(&k.Insecure, "insecure", false, "relay in plaintext, without a key: anyone on the network can read and inject keys (command line only, never from the config file or the environment; recv: with a loopback --listen or an --allow list)")
}

// load returns the key (nil with --insecure, or without a key file when
// none is required), telling the user its fingerprint or the risk they
// took. required: one-way use, whose packets are sealed with it
// (PROTOCOL.md §8.6); a handshake authenticates by the machines'
// identities, and mixes the key in when there is one (Noise psk2).
func (k *KeyOptions) load(logf func(string, ...any), required bool) ([]byte, error) {
	if k.Insecure {
		if k.KeyFile != "" {
			return nil, config.Involving(errors.New("--insecure and --key-file exclude each other"), "insecure", "key-file")
		}
		logf("WARNING: --insecure: keystrokes travel in plaintext and anyone who can reach this port can type into the receiver")
		return nil, nil
	}
	// $KEYRELAY_KEY_FILE and the config file have been applied to
	// k.KeyFile already (configure).
	path := k.KeyFile
	if path == "" && !required {
		return nil, nil
	}
	if path == "" {
		return nil, config.NoKeyError(config.DisplayDefaultPath())
	}
	key, err := secret.Load(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "key-file"}
	}
	logf("key file fingerprint %s (the other machine must show the same)", secret.Fingerprint(key))
	return key, nil
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
