package config

// Every mistake in a setting gets the setting, its source (the config
// file's line, the environment variable, the flag) and what is wanted.
// This file holds what makes that so: the line of
// a key in the config file, hints for TOML syntax errors, the rewriting of
// a command's usage error about a flag into one about the file's line or
// the variable the value came from, warnings for unknown KEYRELAY_
// variables, and suggestions for misspelt flags.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/secret"
)

// Attribute rewrites err, when it is about a setting that did not come
// from the command line, to name the setting's source: "config.toml:4:
// queue = 200 in [send]: out of range 1..80" instead of "--queue 200 out
// of range". The no-key error names the config file actually read.
func Attribute(err error, settings []Setting, cf *File) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, secret.ErrNoKey) && cf != nil && cf.Explicit {
		return NoKeyError(cf.Path)
	}
	source := func(name string) *Setting {
		for i := range settings {
			if settings[i].Name == name {
				return &settings[i]
			}
		}
		return nil
	}
	var ue UsageError
	if !errors.As(err, &ue) {
		var se SettingError
		if errors.As(err, &se) {
			if s := source(se.Setting); s != nil && s.Rank != RankFlag && s.Rank != RankDefault {
				return fmt.Errorf("%w (%s)", err, s.describe(cf))
			}
		}
		return err
	}
	if s := source(ue.Setting); s != nil && ue.Want != "" {
		// A want that quotes the wrong element of a list ("x:0": port
		// 0 ...) need not when the value is that one element.
		switch s.Rank {
		case RankFile:
			want := ue.Want
			if str, ok := s.raw.(string); ok {
				want = strings.TrimPrefix(want, strconv.Quote(str)+": ")
			}
			return UsageError{Err: fmt.Errorf("%s%s = %s%s: %s", cf.where(s.Section, s.Name), s.Name, tomlLiteral(s.raw), s.inTable(), want)}
		case RankEnv:
			return UsageError{Err: fmt.Errorf("%s=%q: %s", s.Env, s.envValue, strings.TrimPrefix(ue.Want, strconv.Quote(s.envValue)+": "))}
		}
	}
	var notes []string
	for _, name := range ue.Also {
		if s := source(name); s != nil && s.Rank != RankFlag && s.Rank != RankDefault {
			notes = append(notes, s.describe(cf)+s.turnOff())
		}
	}
	if len(notes) == 0 {
		return err
	}
	return UsageError{Err: fmt.Errorf("%w (%s)", ue.Err, strings.Join(notes, "; "))}
}

// describe says where a setting's value came from: "key-file from
// config.toml:2", "input from KEYRELAY_SEND_INPUT".
func (s *Setting) describe(cf *File) string {
	switch s.Rank {
	case RankFile:
		return fmt.Sprintf("%s = %s from %s", s.Name, tomlLiteral(s.raw), strings.TrimSuffix(cf.where(s.Section, s.Name), ": ")+s.inTable())
	case RankEnv:
		return fmt.Sprintf("%s from %s=%q", s.Name, s.Env, s.envValue)
	}
	return s.Source
}

// Origin says where a setting's value came from, for a person to find and
// change it: "--to", "KEYRELAY_SEND_TO", "[send] to in config.toml:3",
// "key-file in config.toml:1", or "default".
func (s *Setting) Origin(cf *File) string {
	switch s.Rank {
	case RankFlag:
		return "--" + s.Name
	case RankEnv:
		return s.Env
	case RankFile:
		at := strings.TrimSuffix(cf.where(s.Section, s.Name), ": ")
		if s.Section == "" {
			return s.Name + " in " + at
		}
		return "[" + s.Section + "] " + s.Name + " in " + at
	}
	return "default"
}

// emptyTurnsOff are the text settings that an empty value turns off
// (send's --layout: no layout of this keyboard named).
var emptyTurnsOff = []string{"layout"}

// turnOff names, for a setting from the config file or the environment
// that is part of a mistake, the flag that turns it off for one run
// without editing the file: ": --grab=false turns it off" for a switch
// that is on there, ": --layout= turns it off". "" for other settings,
// whose flag gives another value.
func (s *Setting) turnOff() string {
	switch v := s.Flag.Value.String(); {
	case s.Flag.Value.Type() == "bool" && v == "true" && s.Flag.DefValue == "false":
		return ": --" + s.Name + "=false turns it off"
	case slices.Contains(emptyTurnsOff, s.Name) && v != "":
		return ": --" + s.Name + "= turns it off"
	}
	return ""
}

func (s *Setting) inTable() string {
	if s.Section == "" {
		return ""
	}
	return " in [" + s.Section + "]"
}

// NoKeyError is the error of send and recv without a key, naming the
// config file a key-file setting would go in.
func NoKeyError(configPath string) error {
	return UsageError{Err: fmt.Errorf("%w: one-way use (--one-way) seals its packets with it: make one with 'keyrelay keygen --out keyrelay.key', copy it to both machines, then pass --key-file keyrelay.key (or set %s, or key-file in %s); --insecure relays in plaintext", secret.ErrNoKey, secret.Env, configPath)}
}

// where is the place of a key in the config file: "PATH:LINE: ", or
// "PATH: " when the line is not found (an inline table).
func (cf *File) where(section, key string) string {
	if n := cf.lineOf(section, key); n > 0 {
		return fmt.Sprintf("%s:%d: ", cf.Path, n)
	}
	return cf.Path + ": "
}

var (
	tomlTable = regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`)
	tomlKey   = regexp.MustCompile(`^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=\s*(.*)$`)
)

// tomlPath splits a dotted TOML key (send.queue, "send"."queue").
func tomlPath(k string) []string {
	var out []string
	for _, p := range strings.Split(k, ".") {
		out = append(out, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return out
}

// lineOf finds the line (from 1) that sets key in the table section (""
// for the top level), or with key "" the table's header; 0 if none. It
// reads the file line by line, which is enough for the files keyrelay
// reads: a line inside a multi-line string or list that looks like a key
// is not one it looks for.
func (cf *File) lineOf(section, key string) int {
	want := []string{section, key}
	switch {
	case key == "":
		want = []string{section}
	case section == "":
		want = []string{key}
	}
	var table []string
	for i, line := range cf.lines {
		if m := tomlTable.FindStringSubmatch(line); m != nil {
			table = tomlPath(m[1])
			if slices.Equal(table, want) {
				return i + 1
			}
			continue
		}
		if m := tomlKey.FindStringSubmatch(line); m != nil && key != "" {
			if slices.Equal(append(slices.Clone(table), tomlPath(m[1])...), want) {
				return i + 1
			}
		}
	}
	return 0
}

// tableAt is the table a line (from 1) is in: "" at the top level.
func (cf *File) tableAt(line int) string {
	table := ""
	for i := 0; i < line-1 && i < len(cf.lines); i++ {
		if m := tomlTable.FindStringSubmatch(cf.lines[i]); m != nil {
			table = strings.Join(tomlPath(m[1]), ".")
		}
	}
	return table
}

// parseError explains a TOML syntax error. When the line sets a known
// setting to an unquoted value (interval = 100ms, to = 127.0.0.1:47601)
// it says what the setting wants, with the line as it should be;
// otherwise the parser's words, at the line and column.
func (cf *File) parseError(pe toml.ParseError) error {
	n := pe.Position.Line
	if n >= 1 && n <= len(cf.lines) {
		if m := tomlKey.FindStringSubmatch(cf.lines[n-1]); m != nil {
			path := tomlPath(m[1])
			section := cf.tableAt(n)
			if len(path) == 2 && section == "" {
				section, path = path[0], path[1:]
			}
			raw := strings.TrimSpace(m[2])
			if hint := cf.schema.valueHint(section, path[len(path)-1], raw); len(path) == 1 && hint != "" {
				return Usagef("%s:%d: %s = %s: %s", cf.Path, n, path[0], raw, hint)
			}
		}
	}
	hint := "TOML syntax; 'keyrelay config' prints a valid file"
	if strings.HasPrefix(pe.Message, "expected value but found") {
		hint = "text, addresses and durations must be in quotes; " + hint
	}
	return Usagef("%s:%d:%d: %s (%s)", cf.Path, n, pe.Position.Col, pe.Message, hint)
}

// valueHint says what setting key of a table wants, for a raw value TOML
// could not read; "" when keyrelay has no such setting or cannot tell.
func (schema Schema) valueHint(section, key, raw string) string {
	if i := strings.Index(raw, "#"); i >= 0 && !strings.ContainsAny(raw[:i], `"'`) {
		raw = strings.TrimSpace(raw[:i]) // a comment after an unquoted value
	}
	if raw == "" || strings.ContainsAny(raw[:1], `"'{`) {
		return "" // an unterminated string, an inline table: the parser's words say more
	}
	var f *pflag.Flag
	switch {
	case section == "" && slices.Contains(sharedSettings, key):
		f = schema.Flags("send").Lookup(key)
	case configSections[section] != nil:
		f = schema.Flags(section).Lookup(key)
	}
	if f == nil || slices.Contains(notConfigurable, key) {
		return ""
	}
	switch f.Value.Type() {
	case "duration":
		return fmt.Sprintf("a duration must be quoted: %s = %s", key, Quote(raw))
	case "stringArray", "stringSlice":
		if strings.HasPrefix(raw, "[") {
			var items []string
			for _, e := range strings.Split(strings.Trim(raw, "[] "), ",") {
				if e = strings.TrimSpace(e); e != "" {
					items = append(items, Quote(strings.Trim(e, `"'`)))
				}
			}
			return fmt.Sprintf("a list of strings, each quoted: %s = [%s]", key, strings.Join(items, ", "))
		}
		return fmt.Sprintf("%s must be quoted: %s = %s (several: %s = [\"…\", \"…\"])", what(key), key, Quote(raw), key)
	case "string":
		return fmt.Sprintf("%s must be quoted: %s = %s", what(key), key, Quote(raw))
	case "int", "int64", "uint", "uint64", "int32":
		return fmt.Sprintf("want a whole number, without quotes: %s = %s", key, f.DefValue)
	case "bool":
		return fmt.Sprintf("want true or false, lower case, without quotes: %s = true", key)
	}
	return ""
}

// what names the kind of text a string setting holds, for hints.
func what(key string) string {
	switch key {
	case "to", "listen", "peer":
		return "an address"
	case "key-file", "script", "device":
		return "a path"
	case "allow":
		return "a network"
	}
	return "text"
}

// KnownEnv is every KEYRELAY_ variable keyrelay reads.
func (schema Schema) KnownEnv() map[string]bool {
	known := map[string]bool{Env: true, "KEYRELAY_REPORT": true, secret.Env: true}
	for _, name := range slices.Sorted(maps.Keys(configSections)) {
		schema.Flags(name).VisitAll(func(f *pflag.Flag) {
			known[EnvName(name, f.Name)] = true
		})
	}
	for _, s := range sharedSettings {
		known[EnvName("", s)] = true
	}
	return known
}

// WarnUnknownEnv warns on w, for command, about KEYRELAY_ variables it
// would read but that are no setting: KEYRELAY_<COMMAND>_… ones, and
// those without a command's name (KEYRELAY_KEYFILE). A variable named for
// another command is that command's to warn about. A warning, not an
// error: the variable may be meant for another version of keyrelay.
func (schema Schema) WarnUnknownEnv(w io.Writer, command string) {
	known := schema.KnownEnv()
	prefix := EnvName(command, "")
	var own []string
	for k := range known {
		if strings.HasPrefix(k, prefix) {
			own = append(own, k)
		}
	}
	slices.Sort(own)
	all := slices.Sorted(maps.Keys(known))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "KEYRELAY_") || known[k] {
			continue
		}
		var msg string
		if strings.HasPrefix(k, prefix) {
			msg = fmt.Sprintf("%s is not a setting of %s", k, command)
			if s := spell.Closest(k, own); s != "" {
				msg += "; did you mean " + s + "?"
			} else if others := schema.whereElse(strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, prefix), "_", "-"))); others != "" {
				msg += others
			} else {
				msg += " ('keyrelay config " + command + "' lists the settings)"
			}
		} else {
			other := false
			for sec := range configSections {
				other = other || strings.HasPrefix(k, EnvName(sec, ""))
			}
			if other {
				continue
			}
			msg = k + " is not a keyrelay setting"
			if s := spell.Closest(k, all); s != "" {
				msg += "; did you mean " + s + "?"
			} else {
				msg += " ('keyrelay config --help' explains the names)"
			}
		}
		fmt.Fprintf(w, "keyrelay %s: warning: %s (ignored)\n", command, msg)
	}
}

// pflagInvalid matches pflag's error for a value its flag cannot parse.
var pflagInvalid = regexp.MustCompile(`^invalid argument ".*" for "(?:-., )?--([^"]+)" flag`)

// FlagHint adds to an error parsing the flags fs what would be right: the
// flag meant by a misspelt one (--too: did you mean --to?), what a flag's
// value must be.
func FlagHint(fs *pflag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if s := spell.Closest(name, names); s != "" {
			return "; did you mean --" + s + "?"
		}
		return ""
	}
	if m := pflagInvalid.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil {
			if w := wantOf(f); w != "" {
				return "; --" + f.Name + " wants " + w
			}
		}
	}
	return ""
}

// wantOf says what values of a flag's type look like.
func wantOf(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "duration":
		return "a duration with a unit, like 100ms, 2s or 1m"
	case "int", "int64", "uint", "uint64", "int32":
		return "a whole number"
	case "bool":
		return "true or false"
	}
	return ""
}
