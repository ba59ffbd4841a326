// Package peers holds the peers file: the machines this one is paired with,
// each by a name, its identity's public key (package identity) and,
// optionally, the address its recv listens on. Protocol 5's handshake (in
// progress) will accept a machine only if its key is here.
package peers

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/spell"
	"github.com/keyrelay/keyrelay/secret"
)

// Env names the environment variable that can give the peers file.
const Env = "KEYRELAY_PEERS"

// FileName is the peers file's name in keyrelay's config directory.
const FileName = "peers.toml"

// MaxFileSize bounds what Load reads: a peer takes about 100 bytes, so 1 MiB
// is ten thousand of them, and a path named by mistake (a log, a disk image)
// is refused before it is read.
const MaxFileSize = 1 << 20

// ErrNotPeersFile is wrapped by Load's errors about a path that cannot be
// a peers file: not a regular file, or larger than MaxFileSize.
var ErrNotPeersFile = errors.New("not a peers file")

var file = secret.Kind{Name: "peers file", Not: ErrNotPeersFile, MadeBy: "'keyrelay peers add'", Max: MaxFileSize}

// header is the comment at the top of a saved file.
const header = "# keyrelay peers: the machines this one is paired with (keyrelay pair, keyrelay peers add)\n"

// A Peer is a machine this one is paired with.
type Peer struct {
	Name string                // CheckName's rules; unique in a List, case ignored
	Key  [identity.KeyLen]byte // its identity's public key; unique in a List
	Addr string                // HOST[:PORT] its recv listens on, "" if not known
}

// A List is the peers file's content, in the file's order. Its methods
// keep names and keys unique. It is not safe for concurrent use.
type List struct {
	peers []Peer
}

// Peers returns the peers, in the file's order (a copy).
func (l *List) Peers() []Peer { return slices.Clone(l.peers) }

// Len is the number of peers.
func (l *List) Len() int { return len(l.peers) }

// ByName finds a peer by name, case ignored.
func (l *List) ByName(name string) (Peer, bool) {
	i := l.indexName(name)
	if i < 0 {
		return Peer{}, false
	}
	return l.peers[i], true
}

// ByKey finds a peer by its public key.
func (l *List) ByKey(key [identity.KeyLen]byte) (Peer, bool) {
	i := slices.IndexFunc(l.peers, func(p Peer) bool { return p.Key == key })
	if i < 0 {
		return Peer{}, false
	}
	return l.peers[i], true
}

func (l *List) indexName(name string) int {
	return slices.IndexFunc(l.peers, func(p Peer) bool { return strings.EqualFold(p.Name, name) })
}

// Add appends p after checking its fields (CheckName, identity.CheckPublic,
// CheckAddr) and that neither its name (case ignored) nor its key is
// another peer's; the error names the peer that has them.
func (l *List) Add(p Peer) error {
	if err := CheckName(p.Name); err != nil {
		return err
	}
	if err := identity.CheckPublic(p.Key); err != nil {
		return fmt.Errorf("peer %q's key: %w", p.Name, err)
	}
	if p.Addr != "" {
		if err := CheckAddr(p.Addr); err != nil {
			return err
		}
	}
	if old, ok := l.ByName(p.Name); ok {
		return fmt.Errorf("a peer named %q already exists, with key %s (fingerprint %s): remove it first ('keyrelay peers remove %s') or choose another name",
			old.Name, identity.FormatPublic(old.Key), identity.Fingerprint(old.Key), old.Name)
	}
	if old, ok := l.ByKey(p.Key); ok {
		return fmt.Errorf("key %s is peer %q's already: a machine is paired once (to rename it, 'keyrelay peers remove %s' and add it again)",
			identity.FormatPublic(p.Key), old.Name, old.Name)
	}
	l.peers = append(l.peers, p)
	return nil
}

// Remove removes the peer of that name, case ignored. An unknown name is
// an error that suggests the name meant, if one is close.
func (l *List) Remove(name string) error {
	i := l.indexName(name)
	if i >= 0 {
		l.peers = slices.Delete(l.peers, i, i+1)
		return nil
	}
	if len(l.peers) == 0 {
		return fmt.Errorf("no peer named %q: there are no peers", name)
	}
	names := make([]string, len(l.peers))
	lower := make([]string, len(l.peers))
	for i, p := range l.peers {
		names[i], lower[i] = p.Name, strings.ToLower(p.Name)
	}
	if s := spell.Closest(strings.ToLower(name), lower); s != "" {
		return fmt.Errorf("no peer named %q (did you mean %q?)", name, names[slices.Index(lower, s)])
	}
	return fmt.Errorf("no peer named %q; the peers are %s", name, strings.Join(names, ", "))
}

// validName is CheckName's rule.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckName checks a peer's name: 1 to 63 letters, digits, '-', '_' and
// '.', starting with a letter or digit (a host name's shape, so that a
// machine's host name is a good name for it, and a name is safe in logs and
// on a command line).
func CheckName(name string) error {
	if validName.MatchString(name) {
		return nil
	}
	const rule = "a peer's name is 1 to 63 letters, digits, '-', '_' or '.', starting with a letter or digit (the machine's host name is a good one)"
	switch {
	case name == "":
		return errors.New("empty peer name: " + rule)
	case len(name) > 63:
		return fmt.Errorf("peer name %q is %d characters: %s", clip(name), len(name), rule)
	}
	return fmt.Errorf("peer name %q: %s", clip(name), rule)
}

// CheckAddr checks the syntax of a peer's address, HOST[:PORT], without
// resolving it: the host a name or an IP address (IPv6 bare or in
// brackets), the port, if any, a number from 1 to 65535.
func CheckAddr(addr string) error {
	const shape = "want HOST[:PORT], as 'mediapc.lan', '192.168.1.7:7575' or '[fd00::7]:7575', with PORT from 1 to 65535"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// No port: a host alone, an IPv6 address bare or bracketed.
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), ""
		if strings.HasPrefix(addr, "[") != strings.HasSuffix(addr, "]") {
			return fmt.Errorf("address %q: unbalanced brackets: %s", clip(addr), shape)
		}
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 || port[0] == '+' {
		return fmt.Errorf("address %q: port %q is not a number from 1 to 65535: %s", clip(addr), clip(port), shape)
	}
	if host == "" {
		return fmt.Errorf("address %q has no host: %s", clip(addr), shape)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !validHost.MatchString(host) {
		return fmt.Errorf("address %q: %q is neither a host name nor an IP address: %s", clip(addr), clip(host), shape)
	}
	return nil
}

// validHost is a host name's shape, loosely (underscores are common in
// local names): letters, digits, '-', '_' and '.'.
var validHost = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9._-]{0,252})$`)

// clip shortens what a user gave for an error message.
func clip(s string) string {
	if len(s) > 70 {
		return s[:67] + "..."
	}
	return s
}

// Load reads the peers file at path. A missing file is an empty list: no
// machine is paired yet. A file other users can write is refused: whoever
// can write it can add a machine that may type here; and so is one in a
// directory they can write, or below one (secret.CheckPlace), missing or
// not, as they could put a file of theirs there.
func Load(path string) (*List, error) {
	b, perm, err := file.ReadFile(path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, err
	}
	if !missing {
		if err := secret.CheckMode(file.Name, path, perm, 0o022); err != nil {
			return nil, fmt.Errorf("%w; a peers file others can change is refused, as they could pair a machine that types here", err)
		}
	}
	if err := secret.CheckPlace(file.Name, path); err != nil {
		return nil, fmt.Errorf("%w; a peers file others can replace is refused, as they could pair a machine that types here", err)
	}
	if missing {
		return &List{}, nil
	}
	return Parse(path, b)
}

// Save writes the list to path, regenerated (a header comment, then one
// [[peer]] table per peer: comments added by hand are not kept). The file
// is written beside path and renamed over it, so that a reader never sees
// half a list; it keeps the mode of the file it replaces (less others'
// write permission), or has mode 0600 if new, its directory made
// (secret.MkdirPrivate) if need be; on Windows it has an ACL for the user,
// SYSTEM and Administrators alone (secret.ReplaceFile). A symlink at path
// is followed: the file it points to is replaced.
func (l *List) Save(path string) error {
	perm := fs.FileMode(0o600)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
		if st, err := os.Stat(path); err == nil {
			perm = st.Mode().Perm() &^ 0o022
		}
	} else if err := secret.MkdirPrivate(filepath.Dir(path)); err != nil {
		return fmt.Errorf("unable to make the peers file's directory: %w", err)
	}
	if err := secret.ReplaceFile(path, l.Encode(), perm); err != nil {
		return fmt.Errorf("unable to save the peers: %w", err)
	}
	return nil
}

// filePeer is a [[peer]] table as written.
type filePeer struct {
	Name string `toml:"name"`
	Key  string `toml:"key"`
	Addr string `toml:"addr,omitempty"`
}

// Encode is the peers file's content for the list.
func (l *List) Encode() []byte {
	var buf bytes.Buffer
	buf.WriteString(header)
	for _, p := range l.peers {
		buf.WriteString("\n")
		enc := toml.NewEncoder(&buf)
		enc.Indent = ""
		// A table of strings always encodes.
		_ = enc.Encode(struct {
			Peer []filePeer `toml:"peer"`
		}{[]filePeer{{Name: p.Name, Key: identity.FormatPublic(p.Key), Addr: p.Addr}}})
	}
	return buf.Bytes()
}

// fields are a [[peer]] table's settings.
var fields = []string{"name", "key", "addr"}

// Parse reads a peers file's content; name is the file's name in errors,
// which give the line of the mistake where it can be found.
func Parse(name string, b []byte) (*List, error) {
	var data map[string]any
	if _, err := toml.Decode(string(b), &data); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s (the peers file is TOML: [[peer]] tables of name, key and addr)", name, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	lay := layoutOf(b)
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if k != "peer" {
			at := where(name, lay.topLine(k))
			if s := spell.Closest(k, []string{"peer"}); s != "" {
				return nil, fmt.Errorf("%sunknown setting %q (did you mean [[peer]]?): the peers file holds only [[peer]] tables", at, k)
			}
			return nil, fmt.Errorf("%sunknown setting %q: the peers file holds only [[peer]] tables of name, key and addr", at, k)
		}
	}
	tables, ok := asTables(data["peer"])
	if !ok && data["peer"] != nil {
		return nil, fmt.Errorf("%speer must be [[peer]] tables, one per machine, not %s", where(name, lay.topLine("peer")), describe(data["peer"]))
	}
	l := &List{}
	lines := map[string]int{} // the line of each name and key taken, to name the first
	for i, t := range tables {
		at := func(field string) string { return where(name, lay.fieldLine(i, field)) }
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(fields, k) {
				return nil, fmt.Errorf("%sunknown setting %q in [[peer]]%s: a peer has name, key and addr", at(k), k, didYouMean(k))
			}
		}
		str := func(field string) (string, error) {
			v, ok := t[field]
			if !ok {
				return "", nil
			}
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s%s must be a string in quotes, not %s", at(field), field, describe(v))
			}
			return s, nil
		}
		var p Peer
		var err error
		if p.Name, err = str("name"); err != nil {
			return nil, err
		}
		key, err := str("key")
		if err != nil {
			return nil, err
		}
		if p.Addr, err = str("addr"); err != nil {
			return nil, err
		}
		if _, ok := t["name"]; !ok {
			return nil, fmt.Errorf("%sa [[peer]] has no name: give it name = \"...\" (the machine's host name is a good one)", where(name, lay.peerLine(i)))
		}
		if err := CheckName(p.Name); err != nil {
			return nil, fmt.Errorf("%s%w", at("name"), err)
		}
		if _, ok := t["key"]; !ok {
			return nil, fmt.Errorf("%speer %q has no key: give it key = \"...\", the public key 'keyrelay id' prints on that machine", where(name, lay.peerLine(i)), p.Name)
		}
		if p.Key, err = identity.ParsePublic(key); err != nil {
			return nil, fmt.Errorf("%speer %q's key: %w", at("key"), p.Name, err)
		}
		if _, ok := t["addr"]; ok {
			if err := CheckAddr(p.Addr); err != nil {
				return nil, fmt.Errorf("%speer %q's %w", at("addr"), p.Name, err)
			}
		}
		if old, ok := l.ByName(p.Name); ok {
			return nil, fmt.Errorf("%sa second peer named %q (the first, %q, is at line %d): names must differ, case ignored", at("name"), p.Name, old.Name, lines["name:"+strings.ToLower(old.Name)])
		}
		if old, ok := l.ByKey(p.Key); ok {
			return nil, fmt.Errorf("%speer %q has the key of peer %q (line %d): each machine has its own key, and is paired once", at("key"), p.Name, old.Name, lines["key:"+key])
		}
		lines["name:"+strings.ToLower(p.Name)] = lay.fieldLine(i, "name")
		lines["key:"+key] = lay.fieldLine(i, "key")
		l.peers = append(l.peers, p)
	}
	return l, nil
}

// asTables is the value of "peer" as a list of tables: [[peer]] decodes as
// []map[string]any, peer = [{...}] as []any of them.
func asTables(v any) ([]map[string]any, bool) {
	switch v := v.(type) {
	case []map[string]any:
		return v, true
	case []any:
		out := make([]map[string]any, len(v))
		for i, e := range v {
			t, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = t
		}
		return out, true
	}
	return nil, false
}

func didYouMean(k string) string {
	if s := spell.Closest(k, fields); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// describe names a TOML value's type for an error.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "true or false"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return "a date"
}

// where is "NAME:LINE: ", or "NAME: " when the line is not known.
func where(name string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d: ", name, line)
	}
	return name + ": "
}

// layout finds, for errors, the lines of a peers file's [[peer]] headers
// and settings. The TOML decoder gives no position for a value, so the text
// is read line by line, which is enough for the files Save writes and their
// hand-edited kin: where the tables are written another way (peer = [{...}])
// the line is not known and errors name the file alone.
type layout struct {
	lines   []string
	headers []int // the index in lines of each [[peer]]
}

var (
	peerHeader = regexp.MustCompile(`^\s*\[\[\s*("peer"|'peer'|peer)\s*\]\]\s*(#.*)?$`)
	anyHeader  = regexp.MustCompile(`^\s*\[`)
	tableName  = regexp.MustCompile(`^\s*\[\[?\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)`)
	keyLine    = regexp.MustCompile(`^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*[=.]`)
)

func layoutOf(b []byte) layout {
	lay := layout{lines: strings.Split(string(b), "\n")}
	for i, line := range lay.lines {
		if peerHeader.MatchString(line) {
			lay.headers = append(lay.headers, i)
		}
	}
	return lay
}

// keyAt is the key a line sets, "" if none.
func keyAt(line string) string {
	m := keyLine.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"'`)
}

// peerLine is the line (from 1) of the i-th [[peer]] header, 0 if unknown.
func (lay layout) peerLine(i int) int {
	if i < len(lay.headers) {
		return lay.headers[i] + 1
	}
	return 0
}

// fieldLine is the line of field in the i-th [[peer]] table, else of its
// header, else 0.
func (lay layout) fieldLine(i int, field string) int {
	if i >= len(lay.headers) {
		return 0
	}
	for j := lay.headers[i] + 1; j < len(lay.lines) && !anyHeader.MatchString(lay.lines[j]); j++ {
		if keyAt(lay.lines[j]) == field {
			return j + 1
		}
	}
	return lay.peerLine(i)
}

// topLine is the line of a top-level key or of a table's header, 0 if
// not found. A key is top-level only before the first header.
func (lay layout) topLine(k string) int {
	inTable := false
	for j, line := range lay.lines {
		if m := tableName.FindStringSubmatch(line); m != nil {
			if strings.Trim(m[1], `"'`) == k {
				return j + 1
			}
			inTable = true
			continue
		}
		if !inTable && keyAt(line) == k {
			return j + 1
		}
	}
	return 0
}
