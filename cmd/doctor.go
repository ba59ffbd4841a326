package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/internal/udpsock"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/transport"
	"github.com/keyrelay/keyrelay/wire"
)

// DoctorOptions are the flags of `keyrelay doctor`.
type DoctorOptions struct {
	Role   string // auto, send, recv or both
	Inject string
	Input  string
	Listen string
	// Allow is recv's --allow ([recv] allow in the config file): a probe
	// from this machine that it drops says nothing of the port's holder.
	Allow    []string
	KeyFile  string
	Insecure bool
	Peer     string
	Devices  []string
	// Keys and Layout are send's --keys and --layout: characters mode,
	// and this keyboard's layout for it.
	Keys, Layout string
	// charDests are the [[send.to]] tables with keys = "characters".
	charDests []string
	// To are send's destinations ([send] to, $KEYRELAY_SEND_TO, --to):
	// with the send role, each unicast one is probed as --peer is.
	To []string
	// toNames are the destinations' names (NAME=HOST[:PORT], [[send.to]]
	// tables), "" for an unnamed one, parallel to To after validation.
	toNames []string
	// Identity and Peers are --identity and --peers (sharedPath resolves
	// them into identityPath and peersPath).
	Identity, Peers         string
	identityPath, peersPath string
	// id and peerList are what the identity and peers checks loaded: the
	// probes reach a recv as send would.
	id       *identity.Identity
	peerList *peers.List

	config *config.File // the config file the settings came from, if any
	// given are doctor's settings from its command line, [doctor] and
	// KEYRELAY_DOCTOR_ variables, which send's and recv's settings
	// checks take as theirs (givenToDoctor).
	given map[string][]string
	// toFrom and peerFrom say where To and Peer came from, for people to
	// find and change them ("[send] to in config.toml:3").
	toFrom, peerFrom string
	// keysFrom and layoutFrom say where --keys and --layout came from.
	keysFrom, layoutFrom string
	// sendBy and recvBy say what points at each role (a table of the config
	// file, a flag, a variable), for --role auto.
	sendBy, recvBy []string
	probeTimeout   time.Duration // of one probe; 0: doctorProbeTimeout
}

// Doctor's roles (--role).
const (
	roleAuto = "auto"
	roleSend = "send"
	roleRecv = "recv"
	roleBoth = "both"
)

// doctorProbeTimeout bounds the wait for a probe's ack.
const doctorProbeTimeout = 2 * time.Second

// check is one line of the doctor's report.
type check struct {
	name    string
	needed  bool  // a failure makes doctor exit non-zero
	err     error // nil: fine
	ok      string
	fix     string
	skipped string // not run: why (another role's check)
	// notNeeded says why a failure of a check that is not needed is
	// fine ("": the choices made, notNeededFor).
	notNeeded string
}

// NewCmdDoctor builds `keyrelay doctor`.
func NewCmdDoctor(stdio IO) *cobra.Command {
	return newCmdDoctor(stdio, &DoctorOptions{})
}

// newCmdDoctor builds `keyrelay doctor` filling opts, whose fields that
// are no flag (a test's shorter probe timeout) are kept.
func newCmdDoctor(stdio IO, opts *DoctorOptions) *cobra.Command {
	c := &cobra.Command{
		Use:     "doctor [--role ROLE] [--to DEST ...] [--peer ADDR]",
		Example: doctorExample,
		Short:   "Check what send and recv need here, and how to fix what is missing",
		Long: `Check, one line each, what this machine needs to send or receive keys,
and say how to fix what is missing. Exit status 1 if something needed is.

doctor reads send's and recv's settings as they do (the config file,
KEYRELAY_ variables; its own flags of the same names win) and validates
them as they do; it checks what the injector (recv) or the key source
(send) needs here, and makes a round trip to each of send's destinations,
resolved as send resolves them, or to --peer. The role (--role, default
auto) comes from the config file's [send] and [recv] tables and the flags
given; the other role's checks are listed as not checked.

Every check, and what a probe does: man keyrelay-doctor.`,
		Args: cobra.NoArgs,
	}
	var settings []config.Setting
	c.RunE = func(c *cobra.Command, _ []string) error {
		var err error
		if opts.identityPath, err = config.SharedPath(c.Flags(), configSchema(), "identity", identity.FileName); err != nil {
			return err
		}
		if opts.peersPath, err = config.SharedPath(c.Flags(), configSchema(), "peers", peers.FileName); err != nil {
			return err
		}
		// A wrong value from the file or the environment is named there.
		return config.Attribute(runDoctor(c.Context(), stdio, opts), settings, opts.config)
	}
	f := c.Flags()
	registerIdentityFlag(f, &opts.Identity)
	registerPeersFlag(f, &opts.Peers)
	f.StringVar(&opts.Role, "role", roleAuto, "what this machine does: send, recv, both, or auto (from the config file's tables and the settings given)")
	f.StringVar(&opts.Inject, "inject", "auto", "the injector recv will use ("+strings.Join(injectorNames(), ", ")+")")
	f.StringVar(&opts.Input, "input", "terminal", "the key source send will use ("+strings.Join(capture.SourceNames(false), ", ")+"; "+strings.TrimSuffix(sourceAliases(), "; ")+")")
	f.StringArrayVar(&opts.Devices, "device", nil, "with --input evdev: the /dev/input/event* devices send will read (repeatable; default: every keyboard)")
	f.StringVar(&opts.Listen, "listen", ":"+DefaultPort, "the address recv will listen on")
	f.StringArrayVar(&opts.Allow, "allow", nil, "recv's --allow (default [recv] allow): when it leaves out this machine, doctor's probe of a recv running here is dropped, and the port check says so instead of failing")
	f.StringVar(&opts.KeyFile, "key-file", "", "the key file (default $"+secret.Env+")")
	f.BoolVar(&opts.Insecure, "insecure", false, "send and recv run with --insecure: no key file needed, probes in plaintext")
	f.Var(dest.Flag{To: &opts.To, Chars: &opts.charDests}, "to", "send's destinations, HOST[:PORT], a paired peer's name (NAME:PORT: its recv on another port) or NAME=HOST[:PORT] (repeatable or comma-separated; default [send] to or $KEYRELAY_SEND_TO): each is probed with the send role")
	f.Lookup("to").DefValue = ""
	f.StringVar(&opts.Keys, "keys", "", `send's --keys: with "characters", doctor checks where this keyboard's layout comes from (default [send] keys; [[send.to]] tables with keys = "characters" are checked too)`)
	f.StringVar(&opts.Layout, "layout", "", "send's --layout: this keyboard's XKB layout for characters mode, LAYOUT or LAYOUT(VARIANT), checked against this machine's XKB data (default [send] layout)")
	f.StringVar(&opts.Peer, "peer", "", "a running recv to test a round trip with (HOST[:PORT]), instead of send's destinations")
	config.AddFlag(f)
	manual(c, `Check, one line each, what this machine's role needs, and say how to fix
what is missing. Exit status 1 if something needed is missing.

The role (--role) says which checks apply. auto, the default, takes it from
the config file and the settings given: a config file with a [recv] table and
no [send] is a receiver, one with [send] and no [recv] a sender; --inject or
--listen point at recv, --input, --device or --to at send; with nothing to go
by, or both, doctor checks both. The checks of the other role are listed as
"not checked".

  both roles  the settings send and recv will run with, read and
              validated as those commands read and validate them (the
              config file, KEYRELAY_ variables, and doctor's own flags of
              the same names); the key file (present, mode 0600,
              fingerprint; none with --insecure)
`+doctorRoleHelp()+`

With --peer HOST[:PORT], whatever the role, a round trip to that recv
instead of send's destinations. A probe is one short session holding no
key, started with the handshake as send's are (so a recv, which refuses
one-way senders unless --one-way, answers it), which the receiver logs as a new session that ended, not as a
lost one; a failed one names the address, where it came from and the
likely causes. A clock offset past 15s is named with its fix but fails
nothing: only one-way packets (send --one-way: broadcast, multicast,
--feedback=false) depend on it.`)
	commonFlags(c, "role", "inject", "input", "to", "peer", "config")
	briefly(c, map[string]string{
		"role":   "what this machine does: send, recv, both, or auto (from the config file and the flags given)",
		"inject": "the injector recv will use (" + strings.Join(injectorNames(), ", ") + ")",
		"input":  "the key source send will use (" + strings.Join(capture.SourceNames(false), ", ") + ")",
		"to":     "send's destinations, as send takes them (default [send] to, $KEYRELAY_SEND_TO)",
		"peer":   "a running recv to make a round trip to (HOST[:PORT]), instead of send's destinations",
		"config": "settings file (default ~/.config/keyrelay/config.toml; keyrelay config)",
	})
	c.PreRunE = func(c *cobra.Command, _ []string) error {
		var cf *config.File
		var err error
		settings, cf, err = configure(c)
		if err != nil {
			return err
		}
		opts.config = cf
		opts.given = givenToDoctor(settings)
		opts.noteRoles(settings)
		for _, s := range settings {
			switch s.Name {
			case "to":
				opts.toFrom = s.Origin(cf)
			case "peer":
				opts.peerFrom = s.Origin(cf)
			case "keys":
				opts.keysFrom = s.Origin(cf)
			case "layout":
				opts.layoutFrom = s.Origin(cf)
			}
		}
		return nil
	}
	return c
}

// noteRoles records what points at each role, for --role auto: the config
// file's [send] and [recv] tables, and send's or recv's settings given on
// the command line, in the environment or in [doctor]. A [send] script
// makes the input a script, as it does for send.
func (o *DoctorOptions) noteRoles(settings []config.Setting) {
	if cf := o.config; cf.HasTable("send") {
		o.sendBy = append(o.sendBy, "[send] in "+cf.Path)
	}
	if cf := o.config; cf.HasTable("recv") {
		o.recvBy = append(o.recvBy, "[recv] in "+cf.Path)
	}
	for _, s := range settings {
		given := s.Rank == config.RankFlag || s.Rank == config.RankEnv || s.Rank == config.RankFile && strings.HasSuffix(s.Source, "[doctor]")
		if !given {
			continue
		}
		switch s.Name {
		case "input", "device", "to":
			o.sendBy = append(o.sendBy, s.Source)
		case "inject", "listen", "allow":
			o.recvBy = append(o.recvBy, s.Source)
		}
	}
	i := slices.IndexFunc(settings, func(s config.Setting) bool { return s.Name == "input" })
	if i >= 0 && settings[i].Rank == config.RankDefault {
		script := os.Getenv(config.EnvName("send", "script")) != ""
		_, inFile := o.config.Lookup("send", "script")
		script = script || inFile
		if script {
			o.Input = "script"
		}
	}
}

// roles resolves --role: which of send's and recv's checks run, and why.
func (o *DoctorOptions) roles() (send, recv bool, why string, err error) {
	switch o.Role {
	case roleSend:
		return true, false, "--role send", nil
	case roleRecv:
		return false, true, "--role recv", nil
	case roleBoth:
		return true, true, "--role both", nil
	case roleAuto, "":
	default:
		return false, false, "", config.Usagef("unknown --role %q (choose auto, send, recv or both)", o.Role)
	}
	switch {
	case len(o.recvBy) > 0 && len(o.sendBy) == 0:
		return false, true, "from " + strings.Join(o.recvBy, ", ") + ", and nothing of send's", nil
	case len(o.sendBy) > 0 && len(o.recvBy) == 0:
		return true, false, "from " + strings.Join(o.sendBy, ", ") + ", and nothing of recv's", nil
	case len(o.sendBy) > 0:
		return true, true, "from " + strings.Join(append(o.sendBy, o.recvBy...), ", "), nil
	}
	return true, true, "no config table or setting says which", nil
}

func runDoctor(ctx context.Context, stdio IO, o *DoctorOptions) error {
	doSend, doRecv, why, err := o.roles()
	if err != nil {
		return err
	}
	// Called without the command (tests): the files beside the default
	// config file.
	if o.identityPath == "" || o.peersPath == "" {
		if p, err := config.DefaultPath(); err == nil {
			o.identityPath = cmp.Or(o.identityPath, filepath.Join(filepath.Dir(p), identity.FileName))
			o.peersPath = cmp.Or(o.peersPath, filepath.Join(filepath.Dir(p), peers.FileName))
		}
	}
	// --listen as recv reads it: a bare port is every address.
	if o.Listen, err = config.ListenAddr(o.Listen); err != nil {
		return err
	}
	// send's destinations as send reads them, when they are to be probed.
	o.To = config.SplitList(o.To)
	o.toNames = make([]string, len(o.To))
	for i, a := range o.To {
		// The name is for people reading the checks; the probe needs
		// the address.
		o.toNames[i], o.To[i] = dest.SplitNamed(a)
	}
	if doSend && o.Peer == "" {
		for _, a := range o.To {
			if err := dest.CheckTo(a); err != nil {
				return err
			}
		}
	}
	inj := o.Inject
	if inj == "auto" {
		inj = autoInjector()
	}
	var checks []check
	add := func(c check) { checks = append(checks, c) }
	// forRole adds a check of send's (roleSend) or recv's (roleRecv): run
	// when this machine has the role, listed as not checked otherwise.
	forRole := func(role, name string, run func() check) {
		if role == roleSend && !doSend || role == roleRecv && !doRecv {
			other := map[string]string{roleSend: "receives only", roleRecv: "sends only"}[role]
			add(check{name: name, skipped: "not checked: this machine " + other + " (--role " + role + " or both checks it)"})
			return
		}
		c := run()
		c.name = name
		add(c)
	}

	switch {
	case doSend && doRecv:
		add(check{name: "role", ok: "send and recv (" + why + "); --role send or recv checks one"})
	case doSend:
		add(check{name: "role", ok: "send only (" + why + "); recv's checks are skipped (--role both runs them)"})
	default:
		add(check{name: "role", ok: "recv only (" + why + "); send's checks are skipped (--role both runs them)"})
	}

	// The config file (a broken one stopped doctor before this, with the
	// place of the mistake).
	switch cf := o.config; {
	case cf != nil && cf.Found:
		add(check{name: "config file", ok: cf.Path + " read ('keyrelay config' shows every setting and its source)"})
	case cf != nil && cf.Path != "":
		add(check{name: "config file", ok: "none at " + cf.Path + " (optional: flags, KEYRELAY_ variables and defaults apply)"})
	}

	// Every setting of send and recv, as each reads and validates it; the
	// source's checks follow send's settings as validated.
	var sendOpts *SendOptions
	if o.config != nil {
		forRole(roleRecv, "recv's settings", func() check { c, _ := settingsCheck(roleRecv, o.given, o.config); return c })
		forRole(roleSend, "send's settings", func() check {
			var c check
			c, sendOpts = settingsCheck(roleSend, o.given, o.config)
			return c
		})
	}

	// The key.
	path := o.KeyFile // $KEYRELAY_KEY_FILE and the config file applied (configure)
	var key []byte
	switch {
	case o.Insecure && path != "":
		add(check{name: "key file", needed: true, err: errors.New("--insecure and a key file exclude each other"),
			fix: "give one: the key file (and no insecure setting), or --insecure on both ends"})
	case o.Insecure:
		add(check{name: "key file", ok: "none needed: --insecure (keys travel in plaintext; both ends must run --insecure)"})
	case path == "":
		add(check{name: "key file", ok: "none (optional: the handshake authenticates the machines by their identities; one-way use needs one: 'keyrelay keygen --out " + filepath.Join(filepath.Dir(o.configPath()), "key") + "', copied to both machines, key-file = \"key\" in " + o.configPath() + ")"})
	default:
		k, err := secret.Load(path)
		key = k
		switch {
		case errors.Is(err, secret.ErrUnprotected):
			add(check{name: "key file mode", needed: true, err: err, fix: "chmod 600 " + path})
		case err != nil:
			add(check{name: "key file", needed: true, err: err, fix: "make one with 'keyrelay keygen --out " + path + "'"})
		default:
			add(check{name: "key file", ok: fmt.Sprintf("%s, mode 0600, fingerprint %s", path, secret.Fingerprint(k))})
		}
	}

	// The identity and the peers file (PROTOCOL.md §8.3).
	if !o.Insecure {
		for _, c := range o.checkIdentity() {
			add(c)
		}
	}

	// recv: what each injector needs (inject.Backends' checks), those of
	// other operating systems only when named.
	for _, b := range inject.Backends {
		if b.Check == nil || inj != b.Name && !runsHere(b.GOOS) {
			continue
		}
		forRole(roleRecv, b.Check.What+" (--inject "+b.Name+")", func() check {
			ok, err := b.Check.Run(inject.Options{Device: o.recvDevice(b)})
			return check{needed: inj == b.Name, err: err, ok: ok, fix: b.Check.Fix}
		})
	}

	// send: what each key source needs (capture.Sources' checks).
	src, _ := capture.LookupSource(o.Input)
	for _, b := range capture.Sources {
		if b.Check == nil || src.Name != b.Name && !runsHere(b.GOOS) {
			continue
		}
		// A check needed only without --grab gives way, when send grabs
		// with this source, to what send itself checks at start (its
		// Ready: for x11, the display without RECORD).
		if src.Name == b.Name && b.Check.When == "without --grab" && sendOpts != nil && sendOpts.Grab && b.Ready != nil {
			forRole(roleSend, "what send checks at start (--input "+b.Name+" --grab)", func() check {
				return check{needed: true, err: b.Ready(sendOpts.sourceOptions()), fix: "give send what --input " + b.Name + " needs: " + strings.ReplaceAll(b.Needs, "`", ""),
					ok: "send --input " + b.Name + " --grab can start here (it needs no " + b.Check.What + ")"}
			})
			continue
		}
		name := b.Check.What + " (--input " + b.Name
		if b.Check.When != "" {
			name += " " + b.Check.When
		}
		forRole(roleSend, name+")", func() check {
			ok, err := b.Check.Run(capture.SourceOptions{Devices: o.Devices})
			return check{needed: src.Name == b.Name, err: err, ok: ok, fix: b.Check.Fix}
		})
	}

	// send: where characters mode takes this keyboard's layout from.
	if name, run, ok := o.charactersCheck(src); ok {
		forRole(roleSend, name, run)
	}

	// recv: the UDP port.
	forRole(roleRecv, "UDP port for recv", func() check { return o.checkListen(ctx, key) })

	// A round trip to --peer, else (send) to each of send's destinations.
	switch {
	case o.Peer != "":
		if doSend && len(o.To) > 0 {
			add(check{name: "send's destinations (" + o.origin(o.toFrom, "--to") + ")",
				skipped: "not probed: " + o.Peer + " (" + o.origin(o.peerFrom, "--peer") + ") is probed instead"})
		}
		for _, c := range o.roundTrip(ctx, o.Peer, "", key) {
			add(c)
		}
	case !doSend:
		// Listed as not checked, as send's other checks are (forRole
		// runs nothing for a role this machine does not have).
		for _, to := range o.To {
			forRole(roleSend, "round trip to "+transport.WithDefaultPort(to, DefaultPort)+" ("+o.origin(o.toFrom, "--to")+")", nil)
		}
	default:
		for i, to := range o.To {
			from := o.origin(o.toFrom, "--to")
			if o.toNames[i] != "" {
				from = "destination " + o.toNames[i] + ", " + from
			}
			for _, c := range o.roundTrip(ctx, to, from, key) {
				add(c)
			}
		}
	}
	// The send running now, if any: its target and destinations, as
	// keyrelay status shows them.
	forRole(roleSend, "running send", func() check { return runningSend() })

	failed := 0
	for _, c := range checks {
		switch {
		case c.skipped != "":
			fmt.Fprintf(stdio.Out, "--    %s: %s\n", c.name, c.skipped)
		case c.err == nil:
			fmt.Fprintf(stdio.Out, "ok    %s: %s\n", c.name, c.ok)
		case c.needed:
			failed++
			fmt.Fprintf(stdio.Out, "FAIL  %s: %v\n      fix: %s\n", c.name, c.err, c.fix)
		case c.notNeeded != "":
			fmt.Fprintf(stdio.Out, "--    %s: %v (not needed: %s)\n      fix: %s\n", c.name, c.err, c.notNeeded, c.fix)
		default:
			fmt.Fprintf(stdio.Out, "--    %s: %v (not needed for %s)\n", c.name, c.err, notNeededFor(doSend, doRecv, inj, o.Input))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d check(s) failed", failed)
	}
	return nil
}

// notNeededFor names the choices a check that failed but is not needed was
// measured against.
func notNeededFor(doSend, doRecv bool, inj, input string) string {
	switch {
	case doSend && doRecv:
		return "--inject " + inj + " --input " + input
	case doSend:
		return "--input " + input
	}
	return "--inject " + inj
}

// runsHere reports whether a backend of these operating systems (nil:
// every one) works on this one: doctor leaves out the checks of the others
// unless they are named.
func runsHere(goos []string) bool {
	return goos == nil || slices.Contains(goos, runtime.GOOS)
}

// recvDevice is the device recv would open with injector b: recv's
// --device as the environment (KEYRELAY_RECV_DEVICE) or the config file's
// [recv] table sets it, else b's default. Not doctor's own --device,
// which is send's (flagSections).
func (o *DoctorOptions) recvDevice(b inject.Backend) string {
	if b.Device == nil {
		return ""
	}
	if d := os.Getenv(config.EnvName("recv", "device")); d != "" {
		return d
	}
	if v, _ := o.config.Lookup("recv", "device"); v != nil {
		if d, ok := v.(string); ok && d != "" {
			return d
		}
	}
	return b.Device.Default
}

// keyWords describes how a probe was sealed: under the key, or in
// plaintext with --insecure.
func (o *DoctorOptions) keyWords(withKey string) string {
	if o.Insecure {
		return "in plaintext: --insecure"
	}
	return withKey
}

// origin is where a setting came from (from, as Setting.origin says it),
// or flag when it was not recorded (runDoctor called directly).
func (o *DoctorOptions) origin(from, flag string) string {
	if from == "" || from == "default" {
		return flag
	}
	return from
}

// roundTrip probes a recv at target and checks its clock: the checks of
// --peer (from "") and of each of send's destinations (from: where it came
// from, which the check's name and fix then give). target is resolved as
// send resolves it (resolveDests): a paired machine's name at the address
// its peers file gives, NAME:PORT at that port, HOST[:PORT] through DNS;
// the probe goes there under that machine's key. A broadcast or
// multicast destination is one-way: no one receiver answers for it, so it
// is named and not probed (send does not wait for its acks either).
func (o *DoctorOptions) roundTrip(ctx context.Context, target, from string, key []byte) []check {
	name, fixAddr := "round trip to "+target, ""
	if from != "" {
		name = "round trip to " + transport.WithDefaultPort(target, DefaultPort) + " (" + from + ")"
		fixAddr = "; if the receiver is elsewhere, correct " + from
	}
	d, err := o.dest(target)
	if err != nil {
		var ue config.UsageError
		fix := "check the host name and this machine's DNS (getent hosts NAME), or give the receiver's IP address or a paired machine's name ('keyrelay peers' lists them)"
		if errors.As(err, &ue) {
			// Not paired, or a port of 0: the error says what to do.
			fix = "as the error says (send refuses it the same way)"
		}
		return []check{{name: name, needed: true, err: err, fix: fix + fixAddr}}
	}
	if d.Name != "" {
		// A paired machine: where its peers file says, which DNS
		// need not know.
		at := d.Addr.String()
		if from != "" {
			name = "round trip to " + target + " at " + at + " (paired machine " + d.Name + ", " + from + ")"
		} else {
			name = "round trip to " + target + " at " + at + " (paired machine " + d.Name + ")"
		}
	}
	if from != "" && transport.IsBroadcast(d.Addr.IP) {
		kind := "a broadcast address"
		if d.Addr.IP.IsMulticast() {
			kind = "a multicast group"
		}
		return []check{{name: name, skipped: "not probed: " + kind + " is one-way (any number of receivers may answer, or none; send does not wait for their acks either)"}}
	}
	target = d.Addr.String()
	port := portOf(target)
	rtt, offset, err := o.probe(ctx, d, key)
	fix := "start 'keyrelay recv' there, listening on port " + port + ", with the same key file (or none on both) or both --insecure; open UDP " + port + " in its firewall"
	if !o.Insecure && o.id != nil {
		fix += "; on THAT machine, keyrelay peers must list this one (fingerprint " + identity.Fingerprint(o.id.Public()) + "); here, keyrelay peers must list it ('keyrelay pair' on both does both)"
	}
	fix += fixAddr
	if errors.As(err, &versionError{}) {
		fix = versionFix
	}
	checks := []check{{name: name, needed: true, err: err,
		ok:  fmt.Sprintf("a recv answered in %v (%s)", rtt.Round(time.Microsecond), o.keyWords("handshake and session under the same key")),
		fix: fix}}
	if err != nil {
		return checks
	}
	// send's sessions with a receiver that answers are handshaken and
	// check no clock (PROTOCOL.md §8.3); only one-way packets (broadcast
	// and multicast destinations, send --feedback=false) are held to
	// recv's --max-skew (§8.4). So a clock far off is said, with its fix,
	// at half of the default --max-skew, but fails nothing.
	var clockErr error
	if offset > receiver.DefaultMaxSkew/2 || offset < -receiver.DefaultMaxSkew/2 {
		clockErr = fmt.Errorf("its clock is %s: one-way packets (broadcast or multicast destinations, send --feedback=false) past recv's --max-skew (default %v) are rejected", describeOffset(offset), receiver.DefaultMaxSkew)
	}
	return append(checks, check{name: "clock offset to " + target, err: clockErr,
		notNeeded: "send's sessions with a recv that answers are handshaken and depend on no clock",
		ok:        fmt.Sprintf("its clock is %s (±%v; only one-way packets are held to recv's --max-skew, default %v)", describeOffset(offset), (rtt/2 + time.Millisecond).Round(time.Millisecond), receiver.DefaultMaxSkew),
		fix:       "keep both clocks in sync with NTP (timedatectl set-ntp true; chrony or systemd-timesyncd)"})
}

// checkListen checks the UDP port recv listens on: free, or held by a
// keyrelay recv that answers a probe (already running: fine), or held by
// something else (named, with how to find it).
func (o *DoctorOptions) checkListen(ctx context.Context, key []byte) check {
	pc, err := udpsock.Listen("udp", o.Listen)
	if err == nil {
		pc.Close()
		return check{ok: o.Listen + " is free"}
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return check{needed: true, err: err, fix: "give recv --listen an address of this machine and a port, like :" + DefaultPort}
	}
	port := portOf(o.Listen)
	holder := "ss -ulpn 'sport = :" + port + "' shows the program holding it (run it with sudo to see other users' programs)"
	target := localAddr(o.Listen)
	d, perr := o.dest(target)
	var rtt time.Duration
	if perr == nil {
		rtt, _, perr = o.probe(ctx, d, key)
	}
	if perr == nil {
		return check{ok: fmt.Sprintf("keyrelay recv already running on %s (it answered a probe to %s in %v, %s)", o.Listen, target, rtt.Round(time.Microsecond), o.keyWords("under this key"))}
	}
	if errors.As(perr, &versionError{}) {
		return check{needed: true, err: fmt.Errorf("%s is in use by a keyrelay recv of another protocol version: %w", o.Listen, perr),
			fix: versionFix + "; or give recv --listen another port (and send --to HOST:PORT)"}
	}
	// A recv whose --allow leaves out the address the probe comes from
	// drops it unread (PROTOCOL.md §8.8 step 1), as it should: its
	// silence then says nothing of who holds the port.
	if from, ok := probeSource(target); ok && len(o.Allow) > 0 {
		if allow, err := parseAllow(o.Allow); err == nil && !slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(from) }) {
			return check{skipped: fmt.Sprintf("not checked: %s is in use, and recv's allow (%s) leaves out %s, where doctor's probe comes from: a recv running there drops it unread (add %s to allow to let doctor check it; %s)",
				o.Listen, strings.Join(o.Allow, ", "), from, netip.PrefixFrom(from, from.BitLen()), holder)}
		}
	}
	return check{needed: true,
		err: fmt.Errorf("%s is in use by a program that does not answer a keyrelay probe %s: another program, or a keyrelay recv with another key or another --insecure setting", o.Listen, o.keyWords("under this key")),
		fix: holder + "; stop it, or give recv --listen another port (and send --to HOST:PORT)"}
}

// probeSource is the address a probe of target comes from: target's own
// when it is a loopback or unspecified address (a probe of this machine),
// false otherwise.
func probeSource(target string) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// portOf is the port of HOST:PORT (the whole string if it has none).
func portOf(hostport string) string {
	if _, port, err := net.SplitHostPort(hostport); err == nil {
		return port
	}
	return hostport
}

// localAddr is where a recv listening on listen answers on this machine:
// a wildcard host is reached on loopback.
func localAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// dest resolves a destination as send does (resolveDests), with the
// identity and peers file checkIdentity loaded.
func (o *DoctorOptions) dest(target string) (dest.Resolved, error) {
	list := o.peerList
	if list == nil {
		list = &peers.List{}
	}
	ds, err := dest.Resolve([]string{target}, list, o.id, false, o.Insecure)
	if err != nil {
		return dest.Resolved{}, err
	}
	return ds[0], nil
}

// probe runs one probe session with the recv at d, under d's key.
func (o *DoctorOptions) probe(ctx context.Context, d dest.Resolved, key []byte) (rtt, offset time.Duration, err error) {
	timeout := o.probeTimeout
	if timeout == 0 {
		timeout = doctorProbeTimeout
	}
	pc := sender.ProbeConfig{PSK: key, Insecure: o.Insecure, Identity: o.id, PeerKey: d.Key}
	if o.Insecure {
		pc.PSK = nil
	}
	return probePeer(ctx, d.Addr.String(), pc, timeout)
}

// checkIdentity checks this machine's identity file (its mode: the
// private key is in it) and the peers file, and keeps what they hold for
// the probes. A missing identity is made by send or recv on first use:
// doctor probes with a throwaway one meanwhile, which no recv pairs.
func (o *DoctorOptions) checkIdentity() []check {
	var out []check
	// Made here on first use, as send, recv and pair make it: a probe of
	// this machine's own recv needs the identity that recv uses, and a
	// recv started at the same moment makes the same file (one of the two
	// writes it, the other reads it whole: identity.LoadOrCreate).
	id, created, err := identity.LoadOrCreate(o.identityPath)
	switch {
	case err == nil && created:
		out = append(out, check{name: "identity", ok: fmt.Sprintf("made now at %s (as send, recv and pair do on first use), mode 0600, fingerprint %s", o.identityPath, identity.Fingerprint(id.Public()))})
	case err != nil:
		out = append(out, check{name: "identity", needed: true, err: err, fix: "chmod 600 " + o.identityPath + " if others can read it; else move it away and run 'keyrelay id' to make a new one (and pair again)"})
	default:
		out = append(out, check{name: "identity", ok: fmt.Sprintf("%s, mode 0600, fingerprint %s", o.identityPath, identity.Fingerprint(id.Public()))})
	}
	o.id = id
	list, err := peers.Load(o.peersPath)
	if err != nil {
		out = append(out, check{name: "peers file", needed: true, err: err, fix: "chmod go-w " + o.peersPath + ", or fix the line it names ('keyrelay peers' lists what it holds)"})
		return out
	}
	o.peerList = list
	out = append(out, check{name: "peers file", ok: fmt.Sprintf("%s: %d paired machines (recv accepts them and this one; send's --to names them)", o.peersPath, list.Len())})
	return out
}

// probePeer runs one short session with a running recv at peer, with send's
// own code (sender.Probe): its handshake, keys and acks, so a recv that
// takes only handshaken senders (--one-way=false) answers it too. It
// returns the RTT of the first packet acked and the receiver's clock minus
// ours, or why nothing was acked.
func probePeer(ctx context.Context, peer string, pc sender.ProbeConfig, timeout time.Duration) (rtt, offset time.Duration, err error) {
	addrs, err := dest.ResolveAll([]string{peer})
	if err != nil {
		return 0, 0, err
	}
	conn, err := udpsock.Listen("udp", ":0")
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	res, err := sender.Probe(ctx, conn, addrs[0], pc, timeout)
	port := portOf(addrs[0].String())
	var verr sender.VersionError
	switch {
	case errors.As(err, &verr):
		return 0, 0, versionError{verr.Speaks}
	case errors.Is(err, sender.ErrNoAcks):
		return 0, 0, fmt.Errorf("the recv there answered the handshake but acked nothing within %v: it runs with --acks=false (send then never knows what arrived), or its acks are lost on the way back", timeout)
	case errors.Is(err, sender.ErrNoAnswer):
		return 0, 0, fmt.Errorf("no answer within %v (no recv on port %s there, this machine not paired there, another key file, --insecure on one end only, or a firewall dropping UDP %s; recv's log names an unpaired machine)", timeout, port, port)
	case err != nil:
		return 0, 0, err
	}
	return res.RTT, res.ClockOffset, nil
}

// versionError is a probe's answer from a recv of another protocol
// version (its version notice, PROTOCOL.md §10).
type versionError struct{ speaks []uint8 }

func (e versionError) Error() string {
	return fmt.Sprintf("the recv there speaks keyrelay protocol %s; this keyrelay speaks %d", wire.DescribeVersions(e.speaks), wire.Version)
}

// versionFix is the fix of a versionError.
const versionFix = "install the same keyrelay release on both machines ('keyrelay version' on each names it)"

// configPath is the config file a key-file setting would go in: the one
// named by --config or $KEYRELAY_CONFIG, else the default.
func (o *DoctorOptions) configPath() string {
	if o.config != nil && o.config.Explicit {
		return o.config.Path
	}
	return config.DisplayDefaultPath()
}

// runningSend is doctor's look at the keyrelay sends running as this
// user: each one's target and each destination's state. None running is
// no failure: send may not be started yet.
func runningSend() check {
	sends, err := runningSends(0)
	if err != nil {
		return check{name: "running send", skipped: "none runs as this user now (keyrelay switch and status talk to one)"}
	}
	var all []string
	for _, s := range sends {
		var ds []string
		for _, d := range s.ans.Dests {
			k := ""
			if d.Keys == "characters" {
				k = ", characters"
			}
			ds = append(ds, fmt.Sprintf("%s %s (%s%s)", d.Name, d.Addr, d.State, k))
		}
		line := "target " + s.ans.Target + "; destinations " + strings.Join(ds, ", ")
		if len(sends) > 1 {
			line = fmt.Sprintf("pid %d: %s", s.ans.PID, line)
		}
		all = append(all, line)
	}
	return check{name: "running send", ok: strings.Join(all, "; ")}
}
