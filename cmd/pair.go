package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/netio/udpsock"
	"github.com/keyrelay/keyrelay/pair"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/transport"
)

// PairOptions are `keyrelay pair`'s settings.
type PairOptions struct {
	Listen   string
	Name     string
	As       string
	Port     int
	Timeout  time.Duration
	Scripted bool   // --scripted: answers from a standard input that is no terminal
	From     string // --from: the only address the listener takes a request from
}

// NewCmdPair builds `keyrelay pair`: two machines learn each other's
// identity, a person comparing a 6-digit code on both screens.
func NewCmdPair(stdio IO) *cobra.Command {
	o := &PairOptions{}
	var idPath, peersPath string
	c := &cobra.Command{
		Use:     "pair [HOST[:PORT]]",
		Example: pairExample,
		Short:   "Pair this machine with another: both show a code, you compare it",
		Long: `Pair two machines without copying a secret. On one machine run 'keyrelay pair'
(it waits on UDP ` + DefaultPort + `, recv's port: stop recv there first, or give --listen),
on the other 'keyrelay pair HOST' naming the first. Both then show the other's
name, fingerprint and the same 6-digit code; compare the two screens and answer
y on both. Only when both said yes does each store the other in its peers file
(keyrelay peers): its name, public key and the address its recv listens on.

The code comes from an exchange in which each machine commits to its random
part before it sees the other's, so a machine in the middle that swapped the
keys shows different codes on the two screens and gets one guess in a
million: if the codes differ, answer n, and nothing is stored on either side.

The answer is a person's: without a terminal on standard input, pair stores
nothing and exits 2, unless --scripted says that a script answers (yes |
keyrelay pair --scripted ...); the machine that waits then needs --from ADDR,
the only machine whose request it takes, as no one watches who asks. Each
machine's answer is authenticated (a MAC under a key only the two machines
share), so nothing on the path can turn a no into a yes.

For set-up without a person (provisioning, CI), 'keyrelay peers add NAME KEY'
on each machine does the same with the keys 'keyrelay id' prints.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runPair(c, stdio, o, args)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", ":"+DefaultPort, "without HOST: the UDP address to wait on for the other machine's request")
	f.StringVar(&o.Name, "name", "", "this machine's name, as the other machine stores it (default its host name)")
	f.StringVar(&o.As, "as", "", "the name to store the other machine under (default the name it gives)")
	f.IntVar(&o.Port, "port", 0, "the UDP port this machine's recv listens on, told to the other machine for its peers file (default "+DefaultPort+", or --listen's port)")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "give up after this long (the person has until then to compare the codes)")
	f.BoolVar(&o.Scripted, "scripted", false, "take the answer from standard input when it is not a terminal (a script: nobody compares the codes); the machine that waits also needs --from")
	f.StringVar(&o.From, "from", "", "without HOST: take a pairing request only from this machine (a host name or IP address); required with --scripted")
	registerIdentityFlag(f, &idPath)
	registerPeersFlag(f, &peersPath)
	config.AddFlag(f)
	return c
}

func runPair(c *cobra.Command, stdio IO, o *PairOptions, args []string) error {
	if o.Timeout <= 0 {
		return config.BadValue("timeout", "a positive duration", fmt.Sprintf("--timeout %v: give a positive duration (2m)", o.Timeout))
	}
	for _, n := range []struct{ flag, v string }{{"name", o.Name}, {"as", o.As}} {
		if n.v != "" {
			if err := peers.CheckName(n.v); err != nil {
				return config.BadValue(n.flag, err.Error(), "--"+n.flag+": "+err.Error())
			}
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		return config.BadValue("port", "a port 1..65535", fmt.Sprintf("--port %d is no port (1..65535)", o.Port))
	}
	if !o.Scripted && !stdinTerminal(stdio.In) {
		return config.Usagef("standard input is not a terminal: no person is there to compare the codes, so nothing would be stored; run pair in a terminal, or give --scripted if a script answers (and, on the machine that waits, --from ADDR: the only machine whose request it takes); 'keyrelay peers add' on each machine pairs without a prompt")
	}
	var target *net.UDPAddr
	hostport := ""
	if len(args) == 1 {
		if c.Flags().Changed("listen") {
			return config.Usagef("--listen is for the machine that waits ('keyrelay pair' without HOST); the one that asks (HOST given) needs none")
		}
		if o.From != "" {
			return config.Usagef("--from is for the machine that waits ('keyrelay pair' without HOST): the one that asks talks to HOST only")
		}
		if err := peers.CheckAddr(args[0]); err != nil {
			return config.Usagef("HOST %v", err)
		}
		hostport = transport.WithDefaultPort(args[0], DefaultPort)
		var err error
		if target, err = transport.Resolve(hostport, DefaultPort); err != nil {
			return err
		}
	}

	var accept func(string) bool
	if target == nil {
		if o.Scripted && o.From == "" {
			return config.Usagef("--scripted without a terminal takes the first request from anyone: give --from ADDR, the machine to pair with")
		}
		if o.From != "" {
			var err error
			if accept, err = acceptFrom(c.Context(), o.From); err != nil {
				return err
			}
		}
	}

	idPath, err := config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName)
	if err != nil {
		return err
	}
	peersPath, list, err := loadPeers(c)
	if err != nil {
		return err
	}
	id, created, err := identity.LoadOrCreate(idPath)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdio.Err, "keyrelay pair: made a new identity at %s\n", idPath)
	}
	name := o.Name
	if name == "" {
		if name, err = pair.DefaultName(); err != nil {
			return err
		}
		if peers.CheckName(name) != nil {
			return config.Usagef("this machine's host name %q cannot name it in a peers file: give --name NAME", name)
		}
	}

	listenAddr := ":0"
	if target == nil {
		listenAddr = o.Listen
	}
	conn, err := udpsock.Listen("udp", listenAddr)
	if err != nil {
		if target == nil {
			return fmt.Errorf("unable to wait for a pairing request on UDP %s: %w (a keyrelay recv running here holds the port: stop it while pairing, or give --listen :PORT and pair with HOST:PORT on the other machine)", listenAddr, err)
		}
		return fmt.Errorf("unable to open a UDP socket: %w", err)
	}
	defer conn.Close()
	port := o.Port
	if port == 0 {
		port, _ = strconv.Atoi(DefaultPort)
		if target == nil {
			port = conn.LocalAddr().(*net.UDPAddr).Port
		}
	}
	self := pair.Info{Name: name, Key: id.Public(), Port: uint16(port)}
	fmt.Fprintf(stdio.Err, "keyrelay pair: this machine is %s, fingerprint %s\n", name, identity.Fingerprint(self.Key))

	ui := &pairUI{out: stdio.Err, in: bufio.NewReader(orEmpty(stdio.In)), list: list, as: o.As}
	ctx, cancel := context.WithTimeout(c.Context(), o.Timeout)
	defer cancel()
	var peer pair.Info
	var addr string
	if target == nil {
		var from net.Addr
		if accept != nil {
			fmt.Fprintf(stdio.Err, "keyrelay pair: taking a request only from %s (--from)\n", o.From)
		}
		peer, from, err = pair.Listen(ctx, conn, self, id.DH, ui, pair.RunOptions{Options: pair.Options{Accept: accept}})
		if err == nil {
			// Its recv listens on the address it asked from, at the port
			// it gave.
			host, _, _ := net.SplitHostPort(from.String())
			addr = net.JoinHostPort(host, strconv.Itoa(int(peer.Port)))
		}
	} else {
		peer, err = pair.Dial(ctx, conn, target, self, id.DH, ui, pair.RunOptions{Target: hostport})
		addr = hostport
	}
	switch {
	case errors.Is(err, pair.ErrRejected):
		return fmt.Errorf("not paired, and nothing was stored: the code was not confirmed on both machines. If the other machine's peers file already has a machine named %q, that name is taken there (it says so): pair again with --as OTHERNAME on that machine, or --name OTHERNAME here. Only if the two codes differed did something between the machines change the exchange", name)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("not paired within --timeout %v: nothing was stored", o.Timeout)
	case errors.Is(err, context.Canceled):
		return errors.New("pairing stopped: nothing was stored")
	case err != nil:
		return err
	}
	stored := ui.storeAs(peer)
	if old, ok := list.ByName(stored); ok && old.Key == peer.Key {
		if err := list.Remove(stored); err != nil {
			return err
		}
	}
	if err := list.Add(peers.Peer{Name: stored, Key: peer.Key, Addr: addr}); err != nil {
		return fmt.Errorf("paired, but unable to store %s: %w", stored, err)
	}
	if err := list.Save(peersPath); err != nil {
		return fmt.Errorf("paired, but unable to store %s: %w", stored, err)
	}
	fmt.Fprintf(stdio.Err, "keyrelay pair: paired with %s (fingerprint %s, recv at %s), stored in %s\n", stored, identity.Fingerprint(peer.Key), addr, peersPath)
	return nil
}

// stdinTerminal reports whether in is a terminal: a person can answer.
func stdinTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// acceptFrom is the listener's test of a request's source for --from: one
// of the addresses from (an IP address, or a host name) resolves to, any
// port.
func acceptFrom(ctx context.Context, from string) (func(string) bool, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(from, "[]")); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		if err := peers.CheckAddr(from); err != nil {
			return nil, config.BadValue("from", "a host name or IP address", "--from "+err.Error())
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", from)
		if err != nil {
			return nil, fmt.Errorf("unable to resolve --from %q: %w", from, err)
		}
		for _, a := range ips {
			addrs = append(addrs, a.Unmap())
		}
	}
	return func(src string) bool {
		ap, err := netip.ParseAddrPort(src)
		return err == nil && slices.Contains(addrs, ap.Addr().Unmap())
	}, nil
}

// pairUI asks the person at this machine, on the command's standard
// streams.
type pairUI struct {
	out  io.Writer
	in   *bufio.Reader
	list *peers.List
	as   string
}

func (u *pairUI) Status(msg string) { fmt.Fprintf(u.out, "keyrelay pair: %s\n", msg) }

// storeAs is the name the peer is stored under.
func (u *pairUI) storeAs(p pair.Info) string {
	if u.as != "" {
		return u.as
	}
	return p.Name
}

// Confirm shows the code and asks; anything but y or yes is no, and so is
// the end of the input (no person to ask). A peer that could not be stored
// (its name taken by another key, a name the peers file does not allow) is
// refused before the person is asked, so that neither side stores it.
func (u *pairUI) Confirm(code string, p pair.Info) (bool, error) {
	name := u.storeAs(p)
	if err := peers.CheckName(name); err != nil {
		fmt.Fprintf(u.out, "keyrelay pair: the other machine calls itself %q, which cannot name it in the peers file (%v): pair again with --as NAME\n", p.Name, err)
		return false, nil
	}
	if old, ok := u.list.ByName(name); ok && old.Key != p.Key {
		fmt.Fprintf(u.out, "keyrelay pair: the peers file already has %s with another key (fingerprint %s): pair again with --as OTHERNAME, or remove it first (keyrelay peers remove %s)\n", name, identity.Fingerprint(old.Key), name)
		return false, nil
	}
	if old, ok := u.list.ByKey(p.Key); ok && !strings.EqualFold(old.Name, name) {
		fmt.Fprintf(u.out, "keyrelay pair: the peers file already has this machine's key as %s: a second recv on it needs no pairing (--to %s:PORT reaches it on its port); to pair it again (a new address), pair with --as %s; to store it as %s, remove it first (keyrelay peers remove %s)\n", old.Name, old.Name, old.Name, name, old.Name)
		return false, nil
	}
	fmt.Fprintf(u.out, "\n  Other machine: %s, fingerprint %s, recv port %d\n  Code:          %s %s\n\nDoes the other machine show the same code? [y/N] ", p.Name, identity.Fingerprint(p.Key), p.Port, code[:3], code[3:])
	line, err := u.in.ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	if err != nil && answer == "" {
		fmt.Fprintln(u.out)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(u.out, "keyrelay pair: no answer (the input ended): taken as no; to set up without a person, use 'keyrelay peers add' on each machine")
			return false, nil
		}
		return false, err
	}
	return answer == "y" || answer == "yes", nil
}

// orEmpty is r, or an empty reader when there is none.
func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return strings.NewReader("")
	}
	return r
}
