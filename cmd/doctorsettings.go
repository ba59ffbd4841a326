package cmd

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/doctor"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Doctor checks send's and recv's settings by reading and validating them
// as those commands do: a fresh send or recv command reads the config
// file and the environment itself (configure), and its own validation
// runs (RecvOptions.Check, SendOptions.CheckSettings), so a value
// either command refuses fails doctor too, with the same words and the
// same source (the file's line, the variable). What doctor was told of
// them on its command line, in [doctor] or in KEYRELAY_DOCTOR_ variables
// (--inject, --input, --to ...) is given to the command as on its own
// command line.

// doctorShared are doctor's flags that mean the same setting of send
// (doctor.RoleSend) or recv (doctor.RoleRecv): doctor's --device and --layout are
// send's (flagSections).
var doctorShared = map[string][]string{
	doctor.RoleRecv: {"inject", "listen", "allow", "key-file", "insecure", "identity", "peers"},
	doctor.RoleSend: {"input", "device", "to", "keys", "layout", "key-file", "insecure", "identity", "peers"},
}

// givenToDoctor are the values of doctor's settings that the command line,
// a KEYRELAY_DOCTOR_ variable or the [doctor] table gave: those doctor
// passes on. A setting that came from [send], [recv], their variables or
// the top level is read again by the command itself.
func givenToDoctor(settings []config.Setting) map[string][]string {
	out := map[string][]string{}
	for _, s := range settings {
		given := s.Rank == config.RankFlag ||
			s.Rank == config.RankEnv && strings.HasPrefix(s.Env, config.EnvName("doctor", "")) ||
			s.Rank == config.RankFile && s.Section == "doctor"
		if !given {
			continue
		}
		if sv, ok := s.Flag.Value.(pflag.SliceValue); ok {
			out[s.Name] = sv.GetSlice()
		} else {
			out[s.Name] = []string{s.Flag.Value.String()}
		}
	}
	return out
}

// settingsCheck reads and validates the settings of command role (send or
// recv) as that command does, with doctor's given settings on its command
// line (cf: the config file doctor read, so that the command reads the
// same one). For send it also returns the key source's options as send
// validated them (nil if they are not valid): its other checks follow
// them (--grab).
func settingsCheck(role string, given map[string][]string, cf *config.File) (doctor.Check, *capture.SourceOptions) {
	var c *cobra.Command
	var source *capture.SourceOptions
	switch role {
	case doctor.RoleRecv:
		c = NewCmdRecv(IO{}, func(_ context.Context, o *RecvOptions) error { return o.Check() })
	default:
		c = NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error {
			err := o.CheckSettings()
			if err == nil {
				so := o.SourceOptions()
				source = &so
			}
			return err
		})
	}
	// Unknown KEYRELAY_ variables are doctor's to warn about, once.
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	args := doctorArgs(role, given, cf)
	fix := "correct it ('keyrelay config " + role + "' shows each setting and where it came from)"
	if err := c.ParseFlags(args); err != nil {
		return doctor.Check{Needed: true, Err: err, Fix: fix}, nil
	}
	err := c.PreRunE(c, nil)
	if err == nil {
		err = c.RunE(c, nil)
	}
	if err != nil {
		return doctor.Check{Needed: true, Err: err, Fix: fix}, nil
	}
	return doctor.Check{OK: "each one valid, as 'keyrelay " + role + "' reads them ('keyrelay config " + role + "' lists them)"}, source
}

// doctorArgs is the command line doctor gives send or recv: its given
// settings of the same meaning. Two stand in for what doctor cannot know
// and send needs: a source that plays a script (its entry's Caps.Script:
// --input script) without a script names standard input (the script send
// will play), and with no destination anywhere, one on
// loopback (the --to send will be given), so that the other settings are
// still checked; the destinations themselves are checked by their round
// trips.
func doctorArgs(role string, given map[string][]string, cf *config.File) []string {
	var args []string
	for _, name := range doctorShared[role] {
		for _, v := range given[name] {
			args = append(args, "--"+name+"="+v)
		}
	}
	if cf != nil && cf.Explicit {
		args = append(args, "--config="+cf.Path)
	}
	if role != doctor.RoleSend {
		return args
	}
	inSend := func(name string) bool {
		if os.Getenv(config.EnvName("send", name)) != "" {
			return true
		}
		_, ok := cf.Lookup("send", name)
		return ok
	}
	plays := slices.ContainsFunc(given["input"], func(name string) bool {
		b, ok := capture.LookupSource(name)
		return ok && b.Caps.Script
	})
	if plays && !inSend("script") {
		args = append(args, "--script=-")
	}
	if len(given["to"]) == 0 && !inSend("to") {
		args = append(args, "--to=127.0.0.1")
	}
	return args
}
