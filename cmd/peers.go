package cmd

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/transport"
)

// NewCmdPeers builds `keyrelay peers` and its add and remove.
func NewCmdPeers(stdio IO) *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:     "peers [add NAME KEY [--addr HOST[:PORT]] | remove NAME]",
		Example: peersExample,
		Short:   "List, add and remove the machines this one is paired with",
		Long: `List the machines this one is paired with: each by a name, the public key
'keyrelay id' prints on it, the key's fingerprint and, if known, the address
its recv listens on.

The list is the peers file, ` + displayConfigDirFile(peers.FileName) + ` (else
--peers, $` + peers.Env + ` or peers in the config file), TOML, mode 0600 when
made here. A peers file other users can write is refused: whoever can write
it could pair a machine that types here. recv accepts only these machines
(and its own), reading the file again within a second of a change: a machine
removed stops typing then, its held keys released; a file that does not load
accepts none until it loads again. send reaches a NAME at its address.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, l, err := loadPeers(c)
			if err != nil {
				return err
			}
			if l.Len() == 0 {
				fmt.Fprintf(stdio.Err, "keyrelay peers: no peers in %s; add one with 'keyrelay peers add NAME KEY' (KEY is what 'keyrelay id' prints on that machine)\n", p)
				return nil
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKEY\tFINGERPRINT\tADDR")
			for _, peer := range l.Peers() {
				addr := peer.Addr
				if addr == "" {
					addr = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", peer.Name, identity.FormatPublic(peer.Key), identity.Fingerprint(peer.Key), addr)
			}
			return w.Flush()
		},
	}
	// Persistent: add and remove take them too.
	registerPeersFlag(c.PersistentFlags(), &path)
	config.AddFlag(c.PersistentFlags())
	c.AddCommand(newCmdPeersAdd(stdio), newCmdPeersRemove(stdio))
	return c
}

func newCmdPeersAdd(stdio IO) *cobra.Command {
	var addr, idPath string
	c := &cobra.Command{
		Use:     "add NAME KEY [--addr HOST[:PORT]]",
		Example: peersExample,
		Short:   "Pair with a machine: add its name and public key",
		Long: `Add a machine to the peers file: NAME is how keyrelay will call it (1 to 63
letters, digits, '-', '_' or '.', starting with a letter or digit; its host
name is a good one), KEY the public key 'keyrelay id' prints on it. Compare
the fingerprint this prints with the one 'keyrelay id' shows there.

--addr is where its recv listens (HOST[:PORT], port ` + DefaultPort + ` if none).
A name (case ignored) or a key already in the file is refused, and so is this
machine's own key.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return config.Usagef("peers add takes a NAME and a KEY, got %d argument(s): keyrelay peers add NAME KEY (KEY is what 'keyrelay id' prints on that machine)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			name, text := args[0], args[1]
			if err := peers.CheckName(name); err != nil {
				return config.Usagef("%v", err)
			}
			key, err := identity.ParsePublic(text)
			if err != nil {
				return config.Usagef("KEY %v", err)
			}
			if c.Flags().Changed("addr") {
				if err := peers.CheckAddr(addr); err != nil {
					return config.BadValue("addr", err.Error(), "--addr: "+err.Error())
				}
				addr = transport.WithDefaultPort(addr, DefaultPort)
			}
			if own, ok, err := ownKey(c); err != nil {
				return err
			} else if ok && own == key {
				return config.Usagef("KEY %s is this machine's own (keyrelay id): give the key 'keyrelay id' prints on the other machine", text)
			}
			p, l, err := loadPeers(c)
			if err != nil {
				return err
			}
			// A machine is paired once, whatever runs on it: a second
			// recv there (another port, another display) needs no name
			// of its own, and is reached as NAME:PORT (resolveDests).
			if old, ok := l.ByKey(key); ok && !strings.EqualFold(old.Name, name) {
				return fmt.Errorf("that key is %s's already (fingerprint %s): a machine is paired once, whatever runs on it; a second recv there needs no second name: --to %s:PORT (or addr = \"%s:PORT\" in [[send.to]]) reaches it on its port. To rename %s instead, 'keyrelay peers remove %s' and add it again",
					old.Name, identity.Fingerprint(key), old.Name, old.Name, old.Name, old.Name)
			}
			if err := l.Add(peers.Peer{Name: name, Key: key, Addr: addr}); err != nil {
				return err
			}
			if err := l.Save(p); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "keyrelay peers: added %s, fingerprint %s (compare it with 'keyrelay id' there), to %s\n", name, identity.Fingerprint(key), p)
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "", "where its recv listens: HOST[:PORT], port "+DefaultPort+" if none")
	registerIdentityFlag(c.Flags(), &idPath)
	return c
}

func newCmdPeersRemove(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Example: peersExample,
		Short:   "Unpair a machine: remove it from the peers file",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return config.Usagef("peers remove takes one NAME, got %d argument(s) ('keyrelay peers' lists the names)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			p, l, err := loadPeers(c)
			if err != nil {
				return err
			}
			old, _ := l.ByName(args[0])
			if err := l.Remove(args[0]); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := l.Save(p); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Err, "keyrelay peers: removed %s (fingerprint %s) from %s\n", old.Name, identity.Fingerprint(old.Key), p)
			return nil
		},
	}
}

// loadPeers finds and loads the peers file.
func loadPeers(c *cobra.Command) (string, *peers.List, error) {
	p, err := config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName)
	if err != nil {
		return "", nil, err
	}
	l, err := peers.Load(p)
	return p, l, err
}
