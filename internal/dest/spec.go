package dest

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/keyrelay/keyrelay/capture"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/keys"
	"github.com/keyrelay/keyrelay/routing"
	"github.com/keyrelay/keyrelay/transport"
)

// Spec is one named destination of send: from --to NAME=HOST[:PORT],
// or a [[send.to]] table of the config file, which may also give its
// switch hotkey, its key map and the keys that never go to it.
type Spec struct {
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

// Flag is send's and doctor's --to: HOST[:PORT], a peer's name or
// NAME=HOST[:PORT], repeatable and comma-separated, as strings; in the
// config file also [[send.to]] tables (SetTable), kept whole for send.
type Flag struct {
	To     *[]string
	Tables *[]Spec // nil: doctor, which needs only the addresses
	// Chars (doctor) gets the names of the tables with keys =
	// "characters", whose layout doctor checks.
	Chars *[]string
}

func (v Flag) String() string { return "[" + strings.Join(v.GetSlice(), ",") + "]" }
func (v Flag) Set(s string) error {
	*v.To = append(*v.To, s)
	return nil
}
func (v Flag) Type() string { return "stringArray" }

// GetSlice lists the destinations as --to takes them: a table as
// NAME=ADDR (keyrelay config prints them so; a table's hotkey, map and
// local keys are not in it).
func (v Flag) GetSlice() []string {
	out := slices.Clone(*v.To)
	if v.Tables != nil {
		for _, d := range *v.Tables {
			out = append(out, d.Name+"="+d.Addr)
		}
	}
	return out
}
func (v Flag) Append(s string) error { return v.Set(s) }
func (v Flag) Replace(s []string) error {
	*v.To = slices.Clone(s)
	if v.Tables != nil {
		*v.Tables = nil
	}
	if v.Chars != nil {
		*v.Chars = nil
	}
	return nil
}

// SetTable takes one [[send.to]] table. Its errors name the setting at
// fault; the caller adds the file and line.
func (v Flag) SetTable(m map[string]any) (string, error) {
	d, bad, err := parseTable(m)
	if err != nil {
		return bad, err
	}
	if v.Tables != nil {
		*v.Tables = append(*v.Tables, d)
	} else {
		*v.To = append(*v.To, d.Name+"="+d.Addr)
		if d.Characters && v.Chars != nil {
			*v.Chars = append(*v.Chars, d.Name)
		}
	}
	return "", nil
}

// parseTable reads a [[send.to]] table; on error it also returns the
// key at fault ("" for the table as a whole).
func parseTable(m map[string]any) (Spec, string, error) {
	var d Spec
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(destFields, k) {
			return d, k, fmt.Errorf("unknown setting %q in [[send.to]]%s; a destination has: %s", k, spell.Suggest(k, destFields), strings.Join(destFields, ", "))
		}
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: want a string, got %s", k, config.TypeOf(v))
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
	if err := checkName(d.Name); err != nil {
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
		return d, "keys", fmt.Errorf(`keys = %q of %q: want "physical" (the receiver's layout decides the character) or "characters" (the sender's does)%s`, kind, d.Name, spell.Suggest(kind, []string{"physical", "characters"}))
	}
	if v, ok := m["map"]; ok {
		mm, ok := v.(map[string]any)
		if !ok {
			return d, "map", fmt.Errorf(`map of %q: want a table of key names, like map = { MetaLeft = "ControlLeft" }, got %s`, d.Name, config.TypeOf(v))
		}
		d.Map = map[keys.Code]keys.Code{}
		for _, from := range slices.Sorted(maps.Keys(mm)) {
			to, ok := mm[from].(string)
			if !ok {
				return d, "map", fmt.Errorf("map of %q: %s: want a key name as a string, got %s", d.Name, from, config.TypeOf(mm[from]))
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
			return d, "local-keys", fmt.Errorf(`local-keys of %q: want a list of key names, like ["AudioVolumeUp", "AudioVolumeDown"], got %s`, d.Name, config.TypeOf(v))
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return d, "local-keys", fmt.Errorf("local-keys of %q: want key names as strings, got %s", d.Name, config.TypeOf(e))
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

// checkName refuses a destination name that would read as something
// else: "local" (in any case) is keyrelay switch's word for this machine,
// and a name is one word so that it can be typed after keyrelay switch.
func checkName(n string) error {
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

// SplitNamed splits a --to entry NAME=HOST[:PORT] into its name and
// address; an entry without = has no name.
func SplitNamed(a string) (name, addr string) {
	if n, rest, ok := strings.Cut(a, "="); ok {
		return strings.TrimSpace(n), strings.TrimSpace(rest)
	}
	return "", a
}

// Named merges the --to strings (HOST[:PORT], a peer's name, or
// NAME=HOST[:PORT]) and the config file's [[send.to]] tables into one
// list, each with a name (its address or the peer's name when not given),
// and checks that names are unique and that no two hotkeys are the same.
func Named(to []string, tables []Spec) ([]Spec, error) {
	var out []Spec
	for _, a := range to {
		name, addr := SplitNamed(a)
		if name != "" || strings.Contains(a, "=") {
			if name == "" || addr == "" {
				return nil, config.BadValue("to", fmt.Sprintf("%q: want NAME=HOST[:PORT]", a), fmt.Sprintf("--to %q: want NAME=HOST[:PORT] (both parts)", a))
			}
			if err := checkName(name); err != nil {
				return nil, config.BadValue("to", fmt.Sprintf("%q: %v", a, err), fmt.Sprintf("--to %q: %v", a, err))
			}
		}
		if name == "" {
			name = addr
		}
		out = append(out, Spec{Name: name, Addr: addr})
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
			return nil, config.Involving(fmt.Errorf("two destinations are %s: each name must be unique (keyrelay switch and status name them)", same), "to")
		}
		seen[strings.ToLower(d.Name)] = d.Name
		if len(d.Hotkey) > 0 {
			k := d.Hotkey.String()
			if other, ok := hotkeys[k]; ok {
				return nil, config.Involving(fmt.Errorf("destinations %q and %q have the same hotkey %s: give each its own", other, d.Name, k), "to")
			}
			hotkeys[k] = d.Name
		}
	}
	return out, nil
}

// TOML writes the destinations as a TOML list when there are tables:
// strings as given, tables inline with everything they set, so that
// keyrelay config's output reads back the same.
func (v Flag) TOML() (string, bool) {
	if v.Tables == nil || len(*v.Tables) == 0 {
		return "", false
	}
	var items []string
	for _, s := range *v.To {
		items = append(items, config.Quote(s))
	}
	for _, d := range *v.Tables {
		parts := []string{"name = " + config.Quote(d.Name), "addr = " + config.Quote(d.Addr)}
		if len(d.Hotkey) > 0 {
			parts = append(parts, "hotkey = "+config.Quote(d.Hotkey.String()))
		}
		if len(d.Map) > 0 {
			var m []string
			for _, from := range slices.Sorted(maps.Keys(d.Map)) {
				m = append(m, config.Quote(from.String())+" = "+config.Quote(d.Map[from].String()))
			}
			parts = append(parts, "map = { "+strings.Join(m, ", ")+" }")
		}
		if len(d.Local) > 0 {
			var l []string
			for _, c := range d.Local {
				l = append(l, config.Quote(c.String()))
			}
			parts = append(parts, "local-keys = ["+strings.Join(l, ", ")+"]")
		}
		if d.Characters {
			parts = append(parts, `keys = "characters"`)
		}
		items = append(items, "{ "+strings.Join(parts, ", ")+" }")
	}
	return "[" + strings.Join(items, ", ") + "]", true
}

// CheckTo checks a --to address before anything is resolved: a wrong
// port is a usage error, whatever the host.
func CheckTo(a string) error {
	_, port, err := net.SplitHostPort(transport.WithDefaultPort(a, config.DefaultPort))
	want := ""
	switch {
	case err != nil:
		want = "want HOST[:PORT]: a host name, an IPv4 address or an [IPv6] address, with a UDP port 1..65535 (default " + config.DefaultPort + ")"
	case port == "0":
		want = "port 0 is not a receiver's port (want 1..65535; without a port, " + config.DefaultPort + ")"
	default:
		want = config.CheckPort(port, 1)
		if want != "" {
			want += " (a receiver's UDP port; without one, " + config.DefaultPort + ")"
		}
	}
	if want == "" {
		return nil
	}
	return config.BadValue("to", fmt.Sprintf("%q: %s", a, want), fmt.Sprintf("--to %q: %s", a, want))
}

// --to takes [[send.to]] tables from the config file.
var _ config.TableValue = Flag{}

// DefaultHotkeys gives each destination without a hotkey of its own the
// default for its place when send switches with --grab: ControlRight+Digit1
// for the first, ControlRight+Digit2 for the second, up to the ninth. The
// right Control key alone with a digit is bound by no common desktop (they
// bind Super+N and Ctrl+Alt+N), and every grabbing source can report it
// (a modifier and one key: capture.CheckHotkey). A default that is hotkey
// (send's --hotkey) or another destination's own hotkey is left out.
func DefaultHotkeys(dests []Spec, hotkey capture.Hotkey) {
	taken := map[string]bool{hotkey.String(): true}
	for _, d := range dests {
		if len(d.Hotkey) > 0 {
			taken[d.Hotkey.String()] = true
		}
	}
	for i := range dests {
		if len(dests[i].Hotkey) > 0 || i >= 9 {
			continue
		}
		h := capture.Hotkey{keys.ControlRight, keys.Digit1 + keys.Code(i)}
		if taken[h.String()] {
			continue
		}
		taken[h.String()] = true
		dests[i].Hotkey = h
	}
}

// Routes are the routing.Router's routes to dests, in their order.
func Routes(dests []Spec) []routing.Route {
	out := make([]routing.Route, len(dests))
	for i, d := range dests {
		out[i] = routing.Route{Name: d.Name, Hotkey: []keys.Code(d.Hotkey), Map: d.Map, Local: d.Local, Characters: d.Characters}
	}
	return out
}
