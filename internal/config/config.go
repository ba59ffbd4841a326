// Package config is keyrelay's settings layer: for each flag of send,
// recv and doctor, the first of the command line, the environment
// (KEYRELAY_<COMMAND>_<FLAG>), the TOML config file and the flag's
// default. It works on the commands' pflag sets (a Schema gives them), so
// a new flag is configurable with no line here, and a value from the
// environment or the file goes through the flag's own Set: the same
// parsing and the same errors as on the command line. Every mistake names
// its setting and where its value came from (Attribute).
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/secret"
)

// Env names the environment variable that can give the config file.
const Env = "KEYRELAY_CONFIG"

// Schema is what the config layer knows of the configurable commands
// (send, recv, doctor): their flags are their settings.
type Schema struct {
	// Flags returns a fresh flag set of the command named, on which
	// values can be set and thrown away.
	Flags func(command string) *pflag.FlagSet
}

// sharedSettings may also be set once, at the top of the config file or as
// KEYRELAY_<FLAG>, for every command that has them. Only settings that mean
// the same thing everywhere are shared: send's --timeout and recv's
// --timeout, say, are different things and must be set per command.
// identity and peers (this machine's identity file, the peers file) are
// read by id and peers (sharedPath) and will be by send and recv.
var sharedSettings = []string{"key-file", "insecure", "log-format", "quiet", "identity", "peers"}

// configSections lists, for each configurable command, the sections of the
// config file (and KEYRELAY_<SECTION>_ prefixes) it reads, first wins.
// doctor checks what recv and send will use, so it reads their sections
// after its own.
var configSections = map[string][]string{
	"send":   {"send"},
	"recv":   {"recv"},
	"doctor": {"doctor", "recv", "send"},
}

// flagSections narrows configSections for a flag whose name two commands
// use for different things: doctor's --device is send's (evdev devices to
// read), never recv's (the hidg gadget's device), so [recv] device and
// KEYRELAY_RECV_DEVICE do not reach it; its --layout is send's (this
// keyboard's, for characters mode), never recv's (the target's).
var flagSections = map[string]map[string][]string{
	"doctor": {"device": {"doctor", "send"}, "layout": {"doctor", "send"}},
}

// sectionsFor is where command cmd reads flag from: configSections, or
// flagSections where a flag's name means another setting in a section.
func sectionsFor(cmd, flag string) []string {
	if secs, ok := flagSections[cmd][flag]; ok {
		return secs
	}
	return configSections[cmd]
}

// commandLineOnly are settings refused as true from the environment and
// the config file, each with what it would do there: left there, they
// apply to every later run. (false, what 'keyrelay config' writes for
// them, is harmless.)
var commandLineOnly = map[string]string{
	"insecure": "would let anyone on the LAN type on this machine (and read what is typed) on every later run; give --insecure on the command line of the run that needs it, or use a key (keyrelay keygen)",
	"debug":    "would put the keys typed, passwords included, in every later run's log; give --debug on the command line of the run being debugged",
}

// refuseLeftOn is the error for a commandLineOnly setting f set to true
// at where (a variable, or a place in the config file), or nil. from says
// where that is, left what stays there between runs.
func refuseLeftOn(f *pflag.Flag, where, from, left string) error {
	does, ok := commandLineOnly[f.Name]
	if !ok || f.Value.String() != "true" {
		return nil
	}
	_ = f.Value.Set(f.DefValue) // the flag's own default parses back
	return Usagef("%s: %s is refused from %s, only taken on the command line: %s %s", where, f.Name, from, left, does)
}

// pathSettings are file paths: "~/" is the home directory, and a relative
// path in the config file is relative to the file's directory (a key file
// beside config.toml is just key-file = "keyrelay.key").
var pathSettings = []string{"key-file", "script", "identity", "peers"}

// notConfigurable are flags that only make sense on a command line.
var notConfigurable = []string{"help", "config"}

// DefaultPath is where keyrelay looks for its config file without
// --config or $KEYRELAY_CONFIG: $XDG_CONFIG_HOME/keyrelay/config.toml
// (~/.config/keyrelay/config.toml) on Linux, os.UserConfigDir elsewhere.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "keyrelay", "config.toml"), nil
}

// File is a loaded, validated config file, or the absence of one (Found
// false).
type File struct {
	Path     string
	Explicit bool // named by --config or $KEYRELAY_CONFIG, so it must exist
	Found    bool
	schema   Schema
	top      map[string]any
	sections map[string]map[string]any
	lines    []string // the file's text, to name the line of a mistake
}

// dir is the absolute directory of the file, which relative paths in it
// are relative to (not the working directory, which differs between a
// shell and a service).
func (cf *File) dir() string {
	if abs, err := filepath.Abs(cf.Path); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(cf.Path)
}

// Lookup is the value the file gives key in table section, as read.
func (cf *File) Lookup(section, key string) (any, bool) {
	if cf == nil || !cf.Found {
		return nil, false
	}
	v, ok := cf.sections[section][key]
	return v, ok
}

// HasTable reports whether the file has the table [section].
func (cf *File) HasTable(section string) bool {
	if cf == nil || !cf.Found {
		return false
	}
	_, ok := cf.sections[section]
	return ok
}

// AddFlag adds --config to a command that reads the file.
func AddFlag(f *pflag.FlagSet) {
	f.String("config", "", "settings file (default $"+Env+", else "+DisplayDefaultPath()+"); see 'keyrelay config'")
}

// DisplayDefaultPath is DefaultPath as help shows it: "~/" for the home
// directory.
func DisplayDefaultPath() string {
	if p, err := DefaultPath(); err == nil {
		if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(p, home+string(filepath.Separator)) {
			return "~" + p[len(home):]
		}
		return p
	}
	return "$XDG_CONFIG_HOME/keyrelay/config.toml"
}

// checkConfigPlace refuses a config file other users can change, in
// place or through a directory above it: it names the identity and the
// peers file, and whoever writes it chooses which machines may type here.
func checkConfigPlace(path string) error {
	if err := secret.CheckPlace("config file", path); err != nil {
		return fmt.Errorf("%w; a config file others can replace is refused, as it names the peers file", err)
	}
	return nil
}

// Load finds and reads the config file: path (--config) when not empty,
// then $KEYRELAY_CONFIG, then the default path (which may be absent). Every
// value in it is checked against schema's flags, so that a mistake anywhere
// in the file stops whichever command runs.
func Load(path string, schema Schema) (*File, error) {
	cf := &File{schema: schema}
	if path != "" {
		cf.Path, cf.Explicit = path, true
	} else if p := os.Getenv(Env); p != "" {
		cf.Path, cf.Explicit = p, true
	} else {
		p, err := DefaultPath()
		if err != nil {
			// No home directory (a bare service): nothing to read.
			return cf, nil
		}
		cf.Path = p
	}
	var data map[string]any
	text, err := os.ReadFile(cf.Path)
	if err == nil {
		err = checkConfigPlace(cf.Path)
	}
	if err == nil {
		cf.lines = strings.Split(string(text), "\n")
		_, err = toml.Decode(string(text), &data)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && !cf.Explicit:
		return cf, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, Usagef("config file %s does not exist (named by --config or $%s); 'keyrelay config' prints a starting point", cf.Path, Env)
	case errors.Is(err, secret.ErrUnprotected):
		return nil, Usagef("%v", err)
	case err != nil:
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, cf.parseError(pe)
		}
		return nil, Usagef("config file %s: %v", cf.Path, err)
	}
	cf.Found = true
	cf.sections = map[string]map[string]any{}
	cf.top = map[string]any{}
	for k, v := range data {
		if _, ok := configSections[k]; ok {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, Usagef("%s%s must be a table ([%s])", cf.where("", k), k, k)
			}
			cf.sections[k] = m
			continue
		}
		if _, ok := v.(map[string]any); ok && !slices.Contains(sharedSettings, k) {
			hint := ""
			if s := spell.Closest(k, slices.Sorted(maps.Keys(configSections))); s != "" {
				hint = "; did you mean [" + s + "]?"
			}
			at := cf.where(k, "")
			if cf.lineOf(k, "") == 0 {
				at = cf.where("", k) // k = {...}
			}
			return nil, Usagef("%sunknown table [%s]%s (the tables are [doctor], [recv] and [send])", at, k, hint)
		}
		if !slices.Contains(sharedSettings, k) {
			return nil, Usagef("%sunknown top-level setting %q: the top level holds %s and the tables [send], [recv], [doctor]%s",
				cf.where("", k), k, strings.Join(sharedSettings, ", "), schema.whereElse(k))
		}
		cf.top[k] = v
	}
	// Check every value now, by setting it on a fresh command, so a mistake
	// anywhere in the file is reported whichever command runs.
	for _, name := range slices.Sorted(maps.Keys(configSections)) {
		fresh := schema.Flags(name)
		if err := cf.applyAll(fresh, name, cf.top, "the top level"); err != nil {
			return nil, err
		}
		if err := cf.applyAll(fresh, name, cf.sections[name], "["+name+"]"); err != nil {
			return nil, err
		}
	}
	return cf, nil
}

// whereElse suggests the section(s) a misplaced setting belongs in.
func (schema Schema) whereElse(key string) string {
	var in []string
	for _, name := range []string{"send", "recv", "doctor"} {
		if f := schema.Flags(name).Lookup(key); f != nil {
			in = append(in, "["+name+"]")
		}
	}
	if len(in) == 0 {
		return ""
	}
	return "; " + key + " belongs in " + strings.Join(in, " or ")
}

// tableOf is the table applyAll's where names: "" for the top level.
func tableOf(where, section string) string {
	if where == "the top level" {
		return ""
	}
	return section
}

func (cf *File) applyAll(fs *pflag.FlagSet, section string, values map[string]any, where string) error {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		f := fs.Lookup(k)
		if f == nil || slices.Contains(notConfigurable, k) {
			if where == "the top level" {
				continue // a shared setting another command lacks (doctor has no --quiet)
			}
			var known []string
			fs.VisitAll(func(f *pflag.Flag) {
				if !slices.Contains(notConfigurable, f.Name) {
					known = append(known, f.Name)
				}
			})
			return Usagef("%sunknown setting %q in %s%s; %s has: %s", cf.where(tableOf(where, section), k), k, where, spell.Suggest(k, known), section, strings.Join(known, ", "))
		}
		if err := cf.set(f, values[k]); err != nil {
			return placed(err, Usagef("%s%s in %s: %v", cf.where(tableOf(where, section), k), k, where, err))
		}
	}
	return nil
}

// set gives flag f a TOML value, converted to what the flag parses.
func (cf *File) set(f *pflag.Flag, v any) error {
	if tv, ok := f.Value.(TableValue); ok && hasTables(v) {
		return cf.setTables(f.Name, tv, v)
	}
	typ := f.Value.Type()
	str := func(v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a string, got %s", TypeOf(v))
		}
		if slices.Contains(pathSettings, f.Name) {
			s = expandPath(s, cf.dir())
		}
		return s, nil
	}
	switch typ {
	case "stringArray", "stringSlice":
		list, ok := v.([]any)
		if !ok {
			list = []any{v} // one destination needs no brackets
		}
		if len(list) == 0 {
			return fmt.Errorf("empty list: leave the setting out instead")
		}
		for _, e := range list {
			s, err := str(e)
			if err != nil {
				return err
			}
			if err := f.Value.Set(s); err != nil {
				return err
			}
		}
		return nil
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want true or false (no quotes), got %s", TypeOf(v))
		}
		return f.Value.Set(strconv.FormatBool(b))
	case "int", "int64", "uint", "uint64", "int32":
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("want a whole number (no quotes), got %s", TypeOf(v))
		}
		return f.Value.Set(strconv.FormatInt(n, 10))
	case "duration":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf(`want a duration as a string with a unit, like "100ms" or "2s", got %s`, TypeOf(v))
		}
		return f.Value.Set(s)
	default:
		s, err := str(v)
		if err != nil {
			return err
		}
		return f.Value.Set(s)
	}
}

// expandPath expands a leading "~/" and, when base is not empty, makes a
// relative path relative to base.
func expandPath(p, base string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	if base != "" && p != "" && p != "-" && !filepath.IsAbs(p) {
		return filepath.Join(base, p)
	}
	return p
}

// EnvName is the environment variable for a setting: KEYRELAY_SEND_TO,
// KEYRELAY_RECV_MAX_SKEW, or with section "" KEYRELAY_KEY_FILE.
func EnvName(section, flag string) string {
	name := "KEYRELAY_"
	if section != "" {
		name += strings.ToUpper(section) + "_"
	}
	return name + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Rank is where a setting's value came from: a value from a higher rank
// wins.
type Rank int

// The ranks, lowest first.
const (
	RankDefault Rank = iota
	RankFile
	RankEnv
	RankFlag
)

// Setting is one flag's effective value and where it came from.
type Setting struct {
	Name   string
	Flag   *pflag.Flag
	Source string // "flag --to", "env KEYRELAY_SEND_TO", "file PATH [send]", "default"
	Rank   Rank
	// Env is the variable the value came from (RankEnv), Section the
	// file's table ("" for the top level; RankFile).
	Env, Section string

	// Where exactly, to name it in an error about the value (Attribute).
	envValue string // from the environment: the value
	raw      any    // from the file: the value as read
}

// Apply fills every flag of fs, the flags of command, that the command
// line left unset from the environment, then the file; it returns each
// flag's setting: its value's source. A setting overridden by one that
// excludes it (--insecure over a key file) goes back to its default.
func (cf *File) Apply(command string, fs *pflag.FlagSet) ([]Setting, error) {
	sections := configSections[command]
	// The flags of each section's command, to know which
	// KEYRELAY_<SECTION>_<FLAG> names exist: built once, not per flag.
	sectionFlags := make([]*pflag.FlagSet, len(sections))
	for i, sec := range sections {
		sectionFlags[i] = cf.schema.Flags(sec)
	}
	var settings []Setting
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || slices.Contains(notConfigurable, f.Name) {
			return
		}
		s := Setting{Name: f.Name, Flag: f, Source: "default", Rank: RankDefault}
		if f.Changed {
			s.Source, s.Rank = "flag --"+f.Name, RankFlag
			settings = append(settings, s)
			return
		}
		envs := make([]string, 0, len(sections)+1)
		for i, sec := range sections {
			if sectionFlags[i].Lookup(f.Name) != nil && slices.Contains(sectionsFor(command, f.Name), sec) {
				envs = append(envs, EnvName(sec, f.Name))
			}
		}
		if slices.Contains(sharedSettings, f.Name) {
			envs = append(envs, EnvName("", f.Name))
		}
		for _, env := range envs {
			if v, ok := os.LookupEnv(env); ok && v != "" {
				if err := setFromEnv(f, v); err != nil {
					firstErr = Usagef("%s=%q: %v", env, v, err)
					return
				}
				if err := refuseLeftOn(f, fmt.Sprintf("%s=%q", env, v), "the environment", "a variable left set (in a shell profile, a service unit)"); err != nil {
					firstErr = err
					return
				}
				s.Source, s.Rank = "env "+env, RankEnv
				s.Env, s.envValue = env, v
				settings = append(settings, s)
				return
			}
		}
		if cf.Found {
			for _, sec := range sectionsFor(command, f.Name) {
				if v, ok := cf.sections[sec][f.Name]; ok {
					if err := cf.set(f, v); err != nil {
						firstErr = placed(err, Usagef("%s%s in [%s]: %v", cf.where(sec, f.Name), f.Name, sec, err))
						return
					}
					if err := refuseLeftOn(f, fmt.Sprintf("%s%s = %s in [%s]", cf.where(sec, f.Name), f.Name, tomlLiteral(v), sec), "the config file", "a config file left with "+f.Name+" = true"); err != nil {
						firstErr = err
						return
					}
					s.Source, s.Rank = "file "+cf.Path+" ["+sec+"]", RankFile
					s.Section, s.raw = sec, v
					settings = append(settings, s)
					return
				}
			}
			if v, ok := cf.top[f.Name]; ok && slices.Contains(sharedSettings, f.Name) {
				if err := cf.set(f, v); err != nil {
					firstErr = placed(err, Usagef("%s%s: %v", cf.where("", f.Name), f.Name, err))
					return
				}
				if err := refuseLeftOn(f, fmt.Sprintf("%s%s = %s", cf.where("", f.Name), f.Name, tomlLiteral(v)), "the config file", "a config file left with "+f.Name+" = true"); err != nil {
					firstErr = err
					return
				}
				s.Source, s.Rank = "file "+cf.Path, RankFile
				s.raw = v
			}
		}
		settings = append(settings, s)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	resolveExclusive(settings, "insecure", "key-file")
	resolveExclusive(settings, "input", "script")
	dropWithSource(settings, sourceSetAt(command, cf))
	return settings, nil
}

// sourceSetAt reports, for command cmd, whether a key source (input or
// script) was set at a rank below the command line: in the environment or
// the config file.
func sourceSetAt(cmd string, cf *File) func(rank Rank) bool {
	return func(rank Rank) bool {
		for _, sec := range sectionsFor(cmd, "input") {
			for _, n := range []string{"input", "script"} {
				switch {
				case rank == RankEnv && os.Getenv(EnvName(sec, n)) != "":
					return true
				case rank == RankFile && cf.Found && cf.sections[sec][n] != nil:
					return true
				}
			}
		}
		return false
	}
}

// sourceBound are send's settings that belong to the key source they were
// set with, each with what a source needs to take it: grab = true with
// input = "x11" (or evdev, windows, macos), device with input = "evdev".
var sourceBound = map[string]func(capture.SourceCaps) bool{
	"grab":   func(c capture.SourceCaps) bool { return c.Grab },
	"device": func(c capture.SourceCaps) bool { return c.Devices },
}

// dropWithSource lets a key source given at a higher rank than the one it
// replaces take that source's settings with it: with input = "x11" and
// grab = true in the config file, 'send --script F' or 'send --input
// terminal' plays the script or reads the terminal, as asked, instead of
// failing on a grab meant for the X keyboard. Only a setting given beside
// a source it went with (setAt: a source was set at its rank) goes; one
// given at the source's rank or higher (--grab on the command line), or
// with no source beside it, stays, and send reports what does not fit.
func dropWithSource(settings []Setting, setAt func(rank Rank) bool) {
	at := func(name string) int {
		return slices.IndexFunc(settings, func(s Setting) bool { return s.Name == name })
	}
	in, sc := at("input"), at("script")
	if in < 0 {
		return
	}
	// The source as send picks it (relay.SendOptions.CheckSettings), and
	// the rank of what picked it.
	name, rank, by := settings[in].Flag.Value.String(), settings[in].Rank, settings[in].Source
	if sc >= 0 && settings[sc].Flag.Value.String() != "" && settings[sc].Rank > rank {
		name, rank, by = "script", settings[sc].Rank, settings[sc].Source
	}
	if name == "" {
		name = "terminal"
	}
	b, ok := capture.LookupSource(name)
	if !ok || rank == RankDefault {
		return // an unknown source is send's to report
	}
	for _, n := range slices.Sorted(maps.Keys(sourceBound)) {
		i := at(n)
		if i < 0 || settings[i].Rank == RankDefault || settings[i].Rank >= rank || sourceBound[n](b.Caps) || !setAt(settings[i].Rank) {
			continue
		}
		s := &settings[i]
		if sv, ok := s.Flag.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil) // a list's default is empty
		} else {
			_ = s.Flag.Value.Set(s.Flag.DefValue) // the default's string form parses back
		}
		s.Source = "default (the " + s.Source + " went with the input it was set with: " + by + " picks --input " + name + ", which takes no " + n + ")"
		s.Rank = RankDefault
	}
}

// resolveExclusive keeps the higher-ranked of two settings that exclude
// each other (--insecure and --key-file, --input hook and --script):
// --insecure on the command line overrides a key file from the config
// file, not an error. Set at the same
// rank, both stay, and the command reports the conflict.
func resolveExclusive(settings []Setting, a, b string) {
	ia := slices.IndexFunc(settings, func(s Setting) bool { return s.Name == a })
	ib := slices.IndexFunc(settings, func(s Setting) bool { return s.Name == b })
	if ia < 0 || ib < 0 || settings[ia].Rank == RankDefault || settings[ib].Rank == RankDefault || settings[ia].Rank == settings[ib].Rank {
		return
	}
	lo, hi := ia, ib
	if settings[ia].Rank > settings[ib].Rank {
		lo, hi = ib, ia
	}
	// Back to the default: the flag's Value has no "unset", but its
	// default's string form parses back to it.
	_ = settings[lo].Flag.Value.Set(settings[lo].Flag.DefValue)
	settings[lo].Source = "default (the " + settings[lo].Source + " is overridden by " + settings[hi].Source + ")"
	settings[lo].Rank = RankDefault
}

// setFromEnv gives flag f a value from the environment: a list is
// separated by commas, a path may start with "~/".
func setFromEnv(f *pflag.Flag, v string) error {
	switch f.Value.Type() {
	case "stringArray", "stringSlice":
		n := 0
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			if err := f.Value.Set(e); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errors.New("empty list")
		}
		return nil
	}
	if slices.Contains(pathSettings, f.Name) {
		v = expandPath(v, "")
	}
	if err := f.Value.Set(v); err != nil {
		// pflag passes strconv's words through ("strconv.ParseInt: parsing
		// ..."); say what is wanted instead.
		switch f.Value.Type() {
		case "int", "int64", "uint", "uint64", "int32":
			return errors.New("want a whole number")
		case "bool":
			return errors.New("want true or false")
		}
		return err
	}
	return nil
}

// SharedPath is the file a shared path setting (identity, peers) names
// for a command that reads it outside Apply (id, peers, pair, and send's
// and recv's own look): its flag in fs, else $KEYRELAY_<SETTING>, else the
// setting at the top of the config file (fs's --config, ...), else file
// in the config file's directory.
func SharedPath(fs *pflag.FlagSet, schema Schema, setting, file string) (string, error) {
	if f := fs.Lookup(setting); f != nil && f.Changed {
		if f.Value.String() == "" {
			return "", BadValue(setting, "an empty path", "--"+setting+" is empty: give a file")
		}
		return f.Value.String(), nil
	}
	env := EnvName("", setting)
	if v := os.Getenv(env); v != "" {
		return expandPath(v, ""), nil
	}
	path := ""
	if f := fs.Lookup("config"); f != nil {
		path = f.Value.String()
	}
	cf, err := Load(path, schema)
	if err != nil {
		return "", err
	}
	if v, ok := cf.top[setting]; ok {
		s, ok := v.(string)
		if !ok || s == "" {
			return "", Usagef("%s%s: want a file's path in quotes, got %s", cf.where("", setting), setting, TypeOf(v))
		}
		return expandPath(s, cf.dir()), nil
	}
	p, err := DefaultPath()
	if err != nil {
		return "", Usagef("no config directory to keep the %s in (%v): give --%s FILE or set %s", setting, err, setting, env)
	}
	return filepath.Join(filepath.Dir(p), file), nil
}
