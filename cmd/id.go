package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/peers"
)

// NewCmdID builds `keyrelay id`: this machine's identity, made on first
// use.
func NewCmdID(stdio IO) *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:     "id [--identity FILE]",
		Example: idExample,
		Short:   "Print this machine's public key and fingerprint",
		Long: `Print this machine's identity: its public key (44 characters of base64) and
the key's fingerprint, on one line. The other machine's 'keyrelay peers add'
takes the key; compare the fingerprints on both screens.

The identity is an X25519 key pair, made the first time it is needed and kept
in ` + displayDefaultIdentityPath() + ` (else --identity, $` + identity.Env + ` or
identity in the config file), mode 0600: the private key never leaves this
machine, and a file other users can read or write is refused. send and recv
authenticate each other by their identities in every handshake.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName)
			if err != nil {
				return err
			}
			id, created, err := identity.LoadOrCreate(p)
			if err != nil {
				return err
			}
			if created {
				fmt.Fprintf(stdio.Err, "keyrelay id: made a new identity at %s\n", p)
			}
			_, err = fmt.Fprintf(stdio.Out, "%s %s\n", identity.FormatPublic(id.Public()), identity.Fingerprint(id.Public()))
			return err
		},
	}
	registerIdentityFlag(c.Flags(), &path)
	config.AddFlag(c.Flags())
	return c
}

func registerIdentityFlag(f *pflag.FlagSet, path *string) {
	f.StringVar(path, "identity", "", "this machine's identity file (default $"+identity.Env+", else identity in the config file, else "+displayDefaultIdentityPath()+")")
}

func registerPeersFlag(f *pflag.FlagSet, path *string) {
	f.StringVar(path, "peers", "", "the peers file (default $"+peers.Env+", else peers in the config file, else "+displayConfigDirFile(peers.FileName)+")")
}

func displayDefaultIdentityPath() string { return displayConfigDirFile(identity.FileName) }

// displayConfigDirFile names a file beside the default config file, "~/"
// for the home directory.
func displayConfigDirFile(name string) string {
	return filepath.Join(filepath.Dir(config.DisplayDefaultPath()), name)
}

// ownKey is this machine's public key when its identity file exists (it is
// not made here), for refusing it as a peer.
func ownKey(c *cobra.Command) (key [identity.KeyLen]byte, ok bool, err error) {
	p, err := config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName)
	if err != nil {
		return key, false, err
	}
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return key, false, nil
	}
	id, err := identity.Load(p)
	if err != nil {
		return key, false, fmt.Errorf("unable to check the key against this machine's own: %w", err)
	}
	return id.Public(), true, nil
}
