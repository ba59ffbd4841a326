package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/transport"
)

// ImpairOptions are the flags of `keyrelay impair`.
type ImpairOptions struct {
	Listen, To string
	Link       netsim.Config
	// Symmetric applies the same impairment to replies (receiver to sender).
	Symmetric bool
}

// NewCmdImpair builds `keyrelay impair`, a UDP proxy that makes a link bad
// on purpose.
func NewCmdImpair(stdio IO, runF func(context.Context, *ImpairOptions) error) *cobra.Command {
	opts := &ImpairOptions{}
	c := &cobra.Command{
		Use:     "impair --listen ADDR --to ADDR [--loss P] [--delay D] ...",
		Example: impairExample,
		Short:   "A UDP proxy that drops, delays, duplicates and reorders datagrams",
		Long: `Run a UDP proxy between a sender and a receiver that impairs the link on
purpose, to see (and test) the relay on a bad network: point send --to at
its --listen address, and its --to at the receiver (see the example).

Replies from the target (acks) go back to each client through the same
impairment unless --symmetric=false. On SIGINT/SIGTERM it prints what it did.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runImpair(c.Context(), stdio, opts)
		},
	}
	f := c.Flags()
	l := &opts.Link
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:7576", "UDP address senders send to")
	f.StringVar(&opts.To, "to", "", "address of the receiver to forward to (required)")
	f.Float64Var(&l.Loss, "loss", 0, "probability of dropping a datagram (0..1)")
	f.Float64Var(&l.BurstEnter, "burst-enter", 0, "per-datagram probability of starting a loss burst (0..1)")
	f.Float64Var(&l.BurstExit, "burst-exit", 0, "per-datagram probability of ending a loss burst (0..1)")
	f.Float64Var(&l.BurstLoss, "burst-loss", 0, "loss probability inside a burst (default 1)")
	f.DurationVar(&l.Delay, "delay", 0, "one-way delay")
	f.DurationVar(&l.Jitter, "jitter", 0, "delay varies uniformly by up to this much either way")
	f.Float64Var(&l.Duplicate, "duplicate", 0, "probability of delivering a datagram twice (0..1)")
	f.Float64Var(&l.Reorder, "reorder", 0, "probability of holding a datagram back so later ones overtake it (0..1)")
	f.DurationVar(&l.ReorderDelay, "reorder-delay", 0, "how long a reordered datagram is held back (default 2×jitter or 10ms)")
	f.Uint64Var(&l.Seed, "seed", 1, "random seed: the same seed makes the same decisions")
	f.BoolVar(&opts.Symmetric, "symmetric", true, "impair replies the same way")
	return c
}

func runImpair(ctx context.Context, stdio IO, o *ImpairOptions) error {
	if o.To == "" {
		return config.Usagef("no target: give --to HOST:PORT of a keyrelay recv")
	}
	if err := o.Link.Validate(); err != nil {
		return config.Usagef("%v", err)
	}
	listen, err := config.ListenAddr(o.Listen)
	if err != nil {
		return err
	}
	o.Listen = listen
	if err := dest.CheckTo(o.To); err != nil {
		return err
	}
	p := &netsim.Proxy{Listen: o.Listen, Target: transport.WithDefaultPort(o.To, DefaultPort), Forward: o.Link,
		Logf: func(format string, args ...any) { fmt.Fprintf(stdio.Err, "keyrelay impair: "+format+"\n", args...) }}
	if o.Symmetric {
		p.Backward = o.Link
	}
	addr, err := p.Start()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Err, "keyrelay impair: listening on %v, forwarding to %s\n", addr, p.Target)
	err = p.Serve(ctx)
	fwd, back := p.Stats()
	fmt.Fprintf(stdio.Err, "keyrelay impair: forward: %v; back: %v\n", fwd, back)
	return err
}
