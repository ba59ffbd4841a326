package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/dest"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/secret"
	"github.com/keyrelay/keyrelay/transport"
)

// Options are what doctor checks: the flags of `keyrelay doctor`, and
// what cmd tells it of the settings and the commands.
type Options struct {
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
	// CharDests are the [[send.to]] tables with keys = "characters".
	CharDests []string
	// To are send's destinations ([send] to, $KEYRELAY_SEND_TO, --to):
	// with the send role, each unicast one is probed as --peer is.
	To []string
	// Identity and Peers are --identity and --peers; IdentityPath and
	// PeersPath the files they name (config.SharedPath), else those
	// beside the default config file.
	Identity, Peers         string
	IdentityPath, PeersPath string
	// ProbeTimeout bounds one probe's wait for an ack; 0: 2s.
	ProbeTimeout time.Duration
	// CheckSettings, if set, reads and validates send's or recv's
	// settings (role) as that command does: the check, and for send the
	// key source's options as validated (nil when they are not valid),
	// which the source's checks follow.
	CheckSettings func(role string) (Check, *capture.SourceOptions)

	// toNames are the destinations' names (NAME=HOST[:PORT], [[send.to]]
	// tables), "" for an unnamed one, parallel to To after validation.
	toNames []string
	// id and peerList are what the identity and peers checks loaded: the
	// probes reach a recv as send would.
	id       *identity.Identity
	peerList *peers.List

	config *config.File // the config file the settings came from, if any
	// toFrom and peerFrom say where To and Peer came from, for people to
	// find and change them ("[send] to in config.toml:3").
	toFrom, peerFrom string
	// keysFrom and layoutFrom say where --keys and --layout came from.
	keysFrom, layoutFrom string
	// sendBy and recvBy say what points at each role (a table of the config
	// file, a flag, a variable), for --role auto.
	sendBy, recvBy []string
}

// Doctor's roles (--role).
const (
	RoleAuto = "auto"
	RoleSend = "send"
	RoleRecv = "recv"
	RoleBoth = "both"
)

// defaultProbeTimeout bounds the wait for a probe's ack.
const defaultProbeTimeout = 2 * time.Second

// Check is one line of doctor's report.
type Check struct {
	Name    string
	Needed  bool  // a failure makes doctor exit non-zero
	Err     error // nil: fine
	OK      string
	Fix     string
	Skipped string // not run: why (another role's check)
	// NotNeeded says why a failure of a check that is not needed is
	// fine ("": the choices made, Report.Choices).
	NotNeeded string
}

// Report is what doctor found, a check a line, in the order run.
type Report struct {
	Checks []Check
	// Choices are what a check that failed but is not needed was
	// measured against: "--inject x11 --input terminal".
	Choices string
}

// Failed is how many needed checks failed: doctor exits 1 if any did.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Skipped == "" && c.Err != nil && c.Needed {
			n++
		}
	}
	return n
}

// NoteSettings records where doctor's settings came from (cf: the config
// file read; settings: each flag's source, config.File.Apply), for the
// checks to name them and for --role auto.
func (o *Options) NoteSettings(settings []config.Setting, cf *config.File) {
	o.config = cf
	o.noteRoles(settings)
	for _, s := range settings {
		switch s.Name {
		case "to":
			o.toFrom = s.Origin(cf)
		case "peer":
			o.peerFrom = s.Origin(cf)
		case "keys":
			o.keysFrom = s.Origin(cf)
		case "layout":
			o.layoutFrom = s.Origin(cf)
		}
	}
}

// noteRoles records what points at each role, for --role auto: the config
// file's [send] and [recv] tables, and send's or recv's settings given on
// the command line, in the environment or in [doctor]. A [send] script
// makes the input a script, as it does for send.
func (o *Options) noteRoles(settings []config.Setting) {
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
func (o *Options) roles() (send, recv bool, why string, err error) {
	switch o.Role {
	case RoleSend:
		return true, false, "--role send", nil
	case RoleRecv:
		return false, true, "--role recv", nil
	case RoleBoth:
		return true, true, "--role both", nil
	case RoleAuto, "":
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

// Run runs doctor's checks: those of the role this machine has (o.Role,
// or what the settings point at), the other role's listed as not
// checked. Its error is a mistake in the options (a usage error), not a
// check that failed: those are in the report.
func Run(ctx context.Context, o *Options) (*Report, error) {
	doSend, doRecv, why, err := o.roles()
	if err != nil {
		return nil, err
	}
	// Called without the command (tests): the files beside the default
	// config file.
	if o.IdentityPath == "" || o.PeersPath == "" {
		if p, err := config.DefaultPath(); err == nil {
			o.IdentityPath = cmp.Or(o.IdentityPath, filepath.Join(filepath.Dir(p), identity.FileName))
			o.PeersPath = cmp.Or(o.PeersPath, filepath.Join(filepath.Dir(p), peers.FileName))
		}
	}
	// --listen as recv reads it: a bare port is every address.
	if o.Listen, err = config.ListenAddr(o.Listen); err != nil {
		return nil, err
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
				return nil, err
			}
		}
	}
	inj := o.Inject
	if inj == "auto" {
		// What --inject auto picks here, as recv picks it.
		if b, _, ok := inject.Choose(inject.OSHost()); ok {
			inj = b.Name
		}
	}
	var checks []Check
	add := func(c Check) { checks = append(checks, c) }
	// forRole adds a check of send's (RoleSend) or recv's (RoleRecv): run
	// when this machine has the role, listed as not checked otherwise.
	forRole := func(role, name string, run func() Check) {
		if role == RoleSend && !doSend || role == RoleRecv && !doRecv {
			other := map[string]string{RoleSend: "receives only", RoleRecv: "sends only"}[role]
			add(Check{Name: name, Skipped: "not checked: this machine " + other + " (--role " + role + " or both checks it)"})
			return
		}
		c := run()
		c.Name = name
		add(c)
	}

	switch {
	case doSend && doRecv:
		add(Check{Name: "role", OK: "send and recv (" + why + "); --role send or recv checks one"})
	case doSend:
		add(Check{Name: "role", OK: "send only (" + why + "); recv's checks are skipped (--role both runs them)"})
	default:
		add(Check{Name: "role", OK: "recv only (" + why + "); send's checks are skipped (--role both runs them)"})
	}

	// The config file (a broken one stopped doctor before this, with the
	// place of the mistake).
	switch cf := o.config; {
	case cf != nil && cf.Found:
		add(Check{Name: "config file", OK: cf.Path + " read ('keyrelay config' shows every setting and its source)"})
	case cf != nil && cf.Path != "":
		add(Check{Name: "config file", OK: "none at " + cf.Path + " (optional: flags, KEYRELAY_ variables and defaults apply)"})
	}

	// Every setting of send and recv, as each reads and validates it; the
	// source's checks follow send's settings as validated.
	var sendSource *capture.SourceOptions
	if o.CheckSettings != nil {
		forRole(RoleRecv, "recv's settings", func() Check { c, _ := o.CheckSettings(RoleRecv); return c })
		forRole(RoleSend, "send's settings", func() Check {
			var c Check
			c, sendSource = o.CheckSettings(RoleSend)
			return c
		})
	}

	// The key.
	path := o.KeyFile // $KEYRELAY_KEY_FILE and the config file applied (configure)
	var key []byte
	switch {
	case o.Insecure && path != "":
		add(Check{Name: "key file", Needed: true, Err: errors.New("--insecure and a key file exclude each other"),
			Fix: "give one: the key file (and no insecure setting), or --insecure on both ends"})
	case o.Insecure:
		add(Check{Name: "key file", OK: "none needed: --insecure (keys travel in plaintext; both ends must run --insecure)"})
	case path == "":
		add(Check{Name: "key file", OK: "none (optional: the handshake authenticates the machines by their identities; one-way use needs one: 'keyrelay keygen --out " + filepath.Join(filepath.Dir(o.configPath()), "key") + "', copied to both machines, key-file = \"key\" in " + o.configPath() + ")"})
	default:
		k, err := secret.Load(path)
		key = k
		switch {
		case errors.Is(err, secret.ErrUnprotected):
			add(Check{Name: "key file mode", Needed: true, Err: err, Fix: "chmod 600 " + path})
		case err != nil:
			add(Check{Name: "key file", Needed: true, Err: err, Fix: "make one with 'keyrelay keygen --out " + path + "'"})
		default:
			add(Check{Name: "key file", OK: fmt.Sprintf("%s, mode 0600, fingerprint %s", path, secret.Fingerprint(k))})
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
		forRole(RoleRecv, b.Check.What+" (--inject "+b.Name+")", func() Check {
			ok, err := b.Check.Run(inject.Options{Device: o.recvDevice(b)})
			return Check{Needed: inj == b.Name, Err: err, OK: ok, Fix: b.Check.Fix}
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
		if src.Name == b.Name && b.Check.When == "without --grab" && sendSource != nil && sendSource.Grab && b.Ready != nil {
			forRole(RoleSend, "what send checks at start (--input "+b.Name+" --grab)", func() Check {
				return Check{Needed: true, Err: b.Ready(*sendSource), Fix: "give send what --input " + b.Name + " needs: " + strings.ReplaceAll(b.Needs, "`", ""),
					OK: "send --input " + b.Name + " --grab can start here (it needs no " + b.Check.What + ")"}
			})
			continue
		}
		name := b.Check.What + " (--input " + b.Name
		if b.Check.When != "" {
			name += " " + b.Check.When
		}
		forRole(RoleSend, name+")", func() Check {
			ok, err := b.Check.Run(capture.SourceOptions{Devices: o.Devices})
			return Check{Needed: src.Name == b.Name, Err: err, OK: ok, Fix: b.Check.Fix}
		})
	}

	// send: where characters mode takes this keyboard's layout from.
	if name, run, ok := o.charactersCheck(src); ok {
		forRole(RoleSend, name, run)
	}

	// recv: the UDP port.
	forRole(RoleRecv, "UDP port for recv", func() Check { return o.checkListen(ctx, key) })

	// A round trip to --peer, else (send) to each of send's destinations.
	switch {
	case o.Peer != "":
		if doSend && len(o.To) > 0 {
			add(Check{Name: "send's destinations (" + o.origin(o.toFrom, "--to") + ")",
				Skipped: "not probed: " + o.Peer + " (" + o.origin(o.peerFrom, "--peer") + ") is probed instead"})
		}
		for _, c := range o.roundTrip(ctx, o.Peer, "", key) {
			add(c)
		}
	case !doSend:
		// Listed as not checked, as send's other checks are (forRole
		// runs nothing for a role this machine does not have).
		for _, to := range o.To {
			forRole(RoleSend, "round trip to "+transport.WithDefaultPort(to, config.DefaultPort)+" ("+o.origin(o.toFrom, "--to")+")", nil)
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
	forRole(RoleSend, "running send", runningSend)
	return &Report{Checks: checks, Choices: notNeededFor(doSend, doRecv, inj, o.Input)}, nil
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
func (o *Options) recvDevice(b inject.Backend) string {
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
func (o *Options) keyWords(withKey string) string {
	if o.Insecure {
		return "in plaintext: --insecure"
	}
	return withKey
}

// origin is where a setting came from (from, as Setting.origin says it),
// or flag when it was not recorded (runDoctor called directly).
func (o *Options) origin(from, flag string) string {
	if from == "" || from == "default" {
		return flag
	}
	return from
}

// checkIdentity checks this machine's identity file (its mode: the
// private key is in it) and the peers file, and keeps what they hold for
// the probes. A missing identity is made by send or recv on first use:
// doctor probes with a throwaway one meanwhile, which no recv pairs.
func (o *Options) checkIdentity() []Check {
	var out []Check
	// Made here on first use, as send, recv and pair make it: a probe of
	// this machine's own recv needs the identity that recv uses, and a
	// recv started at the same moment makes the same file (one of the two
	// writes it, the other reads it whole: identity.LoadOrCreate).
	id, created, err := identity.LoadOrCreate(o.IdentityPath)
	switch {
	case err == nil && created:
		out = append(out, Check{Name: "identity", OK: fmt.Sprintf("made now at %s (as send, recv and pair do on first use), mode 0600, fingerprint %s", o.IdentityPath, identity.Fingerprint(id.Public()))})
	case err != nil:
		out = append(out, Check{Name: "identity", Needed: true, Err: err, Fix: "chmod 600 " + o.IdentityPath + " if others can read it; else move it away and run 'keyrelay id' to make a new one (and pair again)"})
	default:
		out = append(out, Check{Name: "identity", OK: fmt.Sprintf("%s, mode 0600, fingerprint %s", o.IdentityPath, identity.Fingerprint(id.Public()))})
	}
	o.id = id
	list, err := peers.Load(o.PeersPath)
	if err != nil {
		out = append(out, Check{Name: "peers file", Needed: true, Err: err, Fix: "chmod go-w " + o.PeersPath + ", or fix the line it names ('keyrelay peers' lists what it holds)"})
		return out
	}
	o.peerList = list
	out = append(out, Check{Name: "peers file", OK: fmt.Sprintf("%s: %d paired machines (recv accepts them and this one; send's --to names them)", o.PeersPath, list.Len())})
	return out
}

// configPath is the config file a key-file setting would go in: the one
// named by --config or $KEYRELAY_CONFIG, else the default.
func (o *Options) configPath() string {
	if o.config != nil && o.config.Explicit {
		return o.config.Path
	}
	return config.DisplayDefaultPath()
}
