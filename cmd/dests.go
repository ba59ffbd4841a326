package cmd

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/keys"
)

// destSpec is one named destination of send: from --to NAME=HOST[:PORT],
// or a [[send.to]] table of the config file, which may also give its
// switch hotkey, its key map and the keys that never go to it.
type destSpec struct {
	Name   string
	Addr   string // HOST[:PORT], or a paired peer's name
	Hotkey capture.Hotkey
	// Map replaces a key by another in what this destination gets
	// (map = { MetaLeft = "ControlLeft" }).
	Map map[keys.Code]keys.Code
	// Local keys are never relayed to this destination: they act here.
	Local []keys.Code
	// Characters: printable keys go as the characters the sender's
	// layout gives them (keys = "characters"; send --keys characters).
	Characters bool
}

// destFields are the settings of a [[send.to]] table.
var destFields = []string{"name", "addr", "hotkey", "map", "local-keys", "keys"}

// toValue is send's and doctor's --to: HOST[:PORT], a peer's name or
// NAME=HOST[:PORT], repeatable and comma-separated, as strings; in the
// config file also [[send.to]] tables (setTable), kept whole for send.
type toValue struct {
	to     *[]string
	tables *[]destSpec // nil: doctor, which needs only the addresses
	// chars (doctor) gets the names of the tables with keys =
	// "characters", whose layout doctor checks.
	chars *[]string
}

func (v toValue) String() string { return "[" + strings.Join(v.GetSlice(), ",") + "]" }
func (v toValue) Set(s string) error {
	*v.to = append(*v.to, s)
	return nil
}
func (v toValue) Type() string { return "stringArray" }

// GetSlice lists the destinations as --to takes them: a table as
// NAME=ADDR (keyrelay config prints them so; a table's hotkey, map and
// local keys are not in it).
func (v toValue) GetSlice() []string {
	out := slices.Clone(*v.to)
	if v.tables != nil {
		for _, d := range *v.tables {
			out = append(out, d.Name+"="+d.Addr)
		}
	}
	return out
}
func (v toValue) Append(s string) error { return v.Set(s) }
func (v toValue) Replace(s []string) error {
	*v.to = slices.Clone(s)
	if v.tables != nil {
		*v.tables = nil
	}
	if v.chars != nil {
		*v.chars = nil
	}
	return nil
}

// setTable takes one [[send.to]] table. Its errors name the setting at
// fault; the caller adds the file and line.
func (v toValue) setTable(m map[string]any) (string, error) {
	d, bad, err := parseDestTable(m)
	if err != nil {
		return bad, err
	}
	if v.tables != nil {
		*v.tables = append(*v.tables, d)
	} else {
		*v.to = append(*v.to, d.Name+"="+d.Addr)
		if d.Characters && v.chars != nil {
			*v.chars = append(*v.chars, d.Name)
		}
	}
	return "", nil
}

// parseDestTable reads a [[send.to]] table; on error it also returns the
// key at fault ("" for the table as a whole).
func parseDestTable(m map[string]any) (destSpec, string, error) {
	var d destSpec
	for _, k := range sortedKeys(m) {
		if !slices.Contains(destFields, k) {
			return d, k, fmt.Errorf("unknown setting %q in [[send.to]]%s; a destination has: %s", k, suggest(k, destFields), strings.Join(destFields, ", "))
		}
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: want a string, got %s", k, tomlType(v))
		}
		return s, nil
	}
	var err error
	if d.Name, err = str("name"); err != nil {
		return d, "name", err
	}
	if d.Addr, err = str("addr"); err != nil {
		return d, "addr", err
	}
	if d.Name == "" {
		return d, "", fmt.Errorf(`a [[send.to]] destination needs a name (name = "mac"): switch and status name it`)
	}
	if err := checkDestName(d.Name); err != nil {
		return d, "name", err
	}
	if d.Addr == "" {
		return d, "", fmt.Errorf(`destination %q needs an address (addr = "HOST[:PORT]", or a paired peer's name)`, d.Name)
	}
	if hk, err := str("hotkey"); err != nil {
		return d, "hotkey", err
	} else if hk != "" {
		if d.Hotkey, err = capture.ParseHotkey(hk); err != nil {
			return d, "hotkey", fmt.Errorf("hotkey of %q: %w (a hotkey is %s)", d.Name, err, capture.HotkeyForm)
		}
	}
	switch kind, err := str("keys"); {
	case err != nil:
		return d, "keys", err
	case kind == "" || kind == "physical":
	case kind == "characters":
		d.Characters = true
	default:
		return d, "keys", fmt.Errorf(`keys = %q of %q: want "physical" (the receiver's layout decides the character) or "characters" (the sender's does)%s`, kind, d.Name, suggest(kind, []string{"physical", "characters"}))
	}
	if v, ok := m["map"]; ok {
		mm, ok := v.(map[string]any)
		if !ok {
			return d, "map", fmt.Errorf(`map of %q: want a table of key names, like map = { MetaLeft = "ControlLeft" }, got %s`, d.Name, tomlType(v))
		}
		d.Map = map[keys.Code]keys.Code{}
		for _, from := range sortedKeys(mm) {
			to, ok := mm[from].(string)
			if !ok {
				return d, "map", fmt.Errorf("map of %q: %s: want a key name as a string, got %s", d.Name, from, tomlType(mm[from]))
			}
			fc, err := keys.Parse(from)
			if err != nil {
				return d, "map", fmt.Errorf("map of %q: %w", d.Name, err)
			}
			tc, err := keys.Parse(to)
			if err != nil {
				return d, "map", fmt.Errorf("map of %q: %s: %w", d.Name, from, err)
			}
			d.Map[fc] = tc
		}
	}
	if v, ok := m["local-keys"]; ok {
		list, ok := v.([]any)
		if !ok {
			return d, "local-keys", fmt.Errorf(`local-keys of %q: want a list of key names, like ["AudioVolumeUp", "AudioVolumeDown"], got %s`, d.Name, tomlType(v))
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return d, "local-keys", fmt.Errorf("local-keys of %q: want key names as strings, got %s", d.Name, tomlType(e))
			}
			c, err := keys.Parse(s)
			if err != nil {
				return d, "local-keys", fmt.Errorf("local-keys of %q: %w", d.Name, err)
			}
			d.Local = append(d.Local, c)
		}
	}
	return d, "", nil
}

// checkDestName refuses a destination name that would read as something
// else: "local" (in any case) is keyrelay switch's word for this machine,
// and a name is one word so that it can be typed after keyrelay switch.
func checkDestName(n string) error {
	if strings.EqualFold(n, "local") {
		return fmt.Errorf(`name "local" is taken: 'keyrelay switch local' returns to local use; pick another name`)
	}
	for _, r := range n {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("name %q: use letters, digits, '-', '_' and '.' only", n)
		}
	}
	return nil
}

// splitNamed splits a --to entry NAME=HOST[:PORT] into its name and
// address; an entry without = has no name.
func splitNamed(a string) (name, addr string) {
	if n, rest, ok := strings.Cut(a, "="); ok {
		return strings.TrimSpace(n), strings.TrimSpace(rest)
	}
	return "", a
}

// namedDests merges the --to strings (HOST[:PORT], a peer's name, or
// NAME=HOST[:PORT]) and the config file's [[send.to]] tables into one
// list, each with a name (its address or the peer's name when not given),
// and checks that names are unique and that no two hotkeys are the same.
func namedDests(to []string, tables []destSpec) ([]destSpec, error) {
	var out []destSpec
	for _, a := range to {
		name, addr := splitNamed(a)
		if name != "" || strings.Contains(a, "=") {
			if name == "" || addr == "" {
				return nil, badValue("to", fmt.Sprintf("%q: want NAME=HOST[:PORT]", a), fmt.Sprintf("--to %q: want NAME=HOST[:PORT] (both parts)", a))
			}
			if err := checkDestName(name); err != nil {
				return nil, badValue("to", fmt.Sprintf("%q: %v", a, err), fmt.Sprintf("--to %q: %v", a, err))
			}
		}
		if name == "" {
			name = addr
		}
		out = append(out, destSpec{Name: name, Addr: addr})
	}
	out = append(out, tables...)
	// Names ignore case, as peers' do and keyrelay switch does: "pc"
	// and "PC" are one name.
	seen := map[string]string{}
	hotkeys := map[string]string{}
	for _, d := range out {
		if other, ok := seen[strings.ToLower(d.Name)]; ok {
			same := fmt.Sprintf("named %q", d.Name)
			if other != d.Name {
				same = fmt.Sprintf("named %q and %q, one name as case is ignored", other, d.Name)
			}
			return nil, involving(fmt.Errorf("two destinations are %s: each name must be unique (keyrelay switch and status name them)", same), "to")
		}
		seen[strings.ToLower(d.Name)] = d.Name
		if len(d.Hotkey) > 0 {
			k := d.Hotkey.String()
			if other, ok := hotkeys[k]; ok {
				return nil, involving(fmt.Errorf("destinations %q and %q have the same hotkey %s: give each its own", other, d.Name, k), "to")
			}
			hotkeys[k] = d.Name
		}
	}
	return out, nil
}

// hasTables reports whether a to setting holds destination tables
// ([[send.to]], or to = [{ name = ..., addr = ... }]).
func hasTables(v any) bool {
	switch v := v.(type) {
	case []map[string]any:
		return true
	case []any:
		for _, e := range v {
			if _, ok := e.(map[string]any); ok {
				return true
			}
		}
	}
	return false
}

// setDests gives --to the destinations of a to setting with tables:
// each table whole, each string as --to takes it. An error names the
// table's line in the file, or its faulty setting's.
func (cf *configFile) setDests(tv toValue, v any) error {
	const section = "send" // [[send.to]]: doctor reads send's
	var list []any
	switch v := v.(type) {
	case []map[string]any:
		for _, m := range v {
			list = append(list, m)
		}
	case []any:
		list = v
	}
	tables := 0
	for _, e := range list {
		switch e := e.(type) {
		case map[string]any:
			if bad, err := tv.setTable(e); err != nil {
				return placedError{fmt.Errorf("%s%w", cf.destWhere(section, tables, bad), err)}
			}
			tables++
		case string:
			tv.Set(e)
		default:
			return placedError{fmt.Errorf("%sto: want a destination's table or \"HOST[:PORT]\", got %s", cf.where(section, "to"), tomlType(e))}
		}
	}
	return nil
}

// destWhere is the place of the n-th (from 0) [[section.to]] table in
// the file, or of its setting key when it is given and found there.
func (cf *configFile) destWhere(section string, n int, key string) string {
	want := []string{section, "to"}
	seen := -1
	for i, line := range cf.lines {
		m := tomlTable.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !slices.Equal(tomlPath(m[1]), want) {
			continue
		}
		if seen++; seen < n {
			continue
		}
		at := i + 1
		for j := i + 1; j < len(cf.lines) && key != ""; j++ {
			if tomlTable.MatchString(cf.lines[j]) {
				break
			}
			if km := tomlKey.FindStringSubmatch(cf.lines[j]); km != nil && slices.Equal(tomlPath(km[1]), []string{key}) {
				at = j + 1
				break
			}
		}
		return fmt.Sprintf("%s:%d: ", cf.Path, at)
	}
	return cf.where(section, "to")
}

// placedError is an error of the config file that names its place
// itself (a [[send.to]] table's line): the caller adds no other.
type placedError struct{ err error }

func (e placedError) Error() string { return e.err.Error() }
func (e placedError) Unwrap() error { return e.err }

// placed is err as a usage error when it names its place, else fallback.
func placed(err, fallback error) error {
	if p, ok := errors.AsType[placedError](err); ok {
		return usageError{err: p.err}
	}
	return fallback
}

// toml writes the destinations as a TOML list: strings as given, tables
// inline with everything they set, so that keyrelay config's output reads
// back the same.
func (v toValue) toml() string {
	var items []string
	for _, s := range *v.to {
		items = append(items, tomlString(s))
	}
	for _, d := range *v.tables {
		parts := []string{"name = " + tomlString(d.Name), "addr = " + tomlString(d.Addr)}
		if len(d.Hotkey) > 0 {
			parts = append(parts, "hotkey = "+tomlString(d.Hotkey.String()))
		}
		if len(d.Map) > 0 {
			var m []string
			for _, from := range slices.Sorted(maps.Keys(d.Map)) {
				m = append(m, tomlString(from.String())+" = "+tomlString(d.Map[from].String()))
			}
			parts = append(parts, "map = { "+strings.Join(m, ", ")+" }")
		}
		if len(d.Local) > 0 {
			var l []string
			for _, c := range d.Local {
				l = append(l, tomlString(c.String()))
			}
			parts = append(parts, "local-keys = ["+strings.Join(l, ", ")+"]")
		}
		if d.Characters {
			parts = append(parts, `keys = "characters"`)
		}
		items = append(items, "{ "+strings.Join(parts, ", ")+" }")
	}
	return "[" + strings.Join(items, ", ") + "]"
}
